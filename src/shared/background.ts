import type { Logger } from "pino";
import type { Telemetry } from "./telemetry.js";

// The background work of the service in one place. BACKGROUND_TASKS declares every loop: its name,
// the ROLE it runs on and its mode (embedded or Temporal). A loop starts through startPeriodic
// (shared/periodic.ts), or, with wake-ups of its own (the schedulers, the outbox expander), records
// each pass with `record(name).run(pass)`; either way its name must be a key of the table (a
// compile error otherwise), and test/foundation/background.test.ts checks that no other timer loop
// exists in src/. BackgroundTasks keeps, per task, the last run, the last error and the lag: GET
// /health (`background`) and the `vigil_background_*` metrics read them. docs/architecture.md
// "Background work" is the same table in prose.

/** Where a task runs: on every node, or only where background work runs (ROLE=all or worker). */
type TaskRole = "every" | "worker";
/** Which runner it belongs to: always, only without TEMPORAL_ADDRESS, or only with it. */
type TaskMode = "always" | "embedded" | "temporal";

/**
 * Every background loop of the service (owner: the file that starts it). `woken`: it runs only when
 * its work is due (a deadline, an evaluation), so /health lists it once there was some.
 */
export const BACKGROUND_TASKS = {
  "derived records projector": { role: "every", mode: "always", owner: "src/events/projector.ts" },
  "derived records poll": { role: "every", mode: "always", owner: "src/events/projector.ts" },
  "temporal probe": { role: "every", mode: "temporal", owner: "src/temporal/probe.ts" },
  "purging ingest ids": { role: "worker", mode: "always", owner: "src/events/service.ts" },
  jobs: { role: "worker", mode: "always", owner: "src/jobs/runner.ts" },
  "retention pass": { role: "worker", mode: "always", owner: "src/lifecycle/retention.ts" },
  "project purge": { role: "worker", mode: "always", owner: "src/lifecycle/purge.ts" },
  "analytics slot pass": { role: "worker", mode: "always", owner: "src/analytics/worker.ts" },
  "analytics block pass": { role: "worker", mode: "always", owner: "src/analytics/blocks/worker.ts" },
  "uptime re-scan": { role: "worker", mode: "embedded", owner: "src/uptime/scheduler.ts" },
  "uptime deadline checks": { role: "worker", mode: "embedded", owner: "src/uptime/scheduler.ts", woken: true },
  "maintenance re-scan": { role: "worker", mode: "embedded", owner: "src/uptime/maintenance-timer.ts" },
  "maintenance transitions": {
    role: "worker",
    mode: "embedded",
    owner: "src/uptime/maintenance-timer.ts",
    woken: true,
  },
  "temporal wake drain": { role: "worker", mode: "temporal", owner: "src/uptime/temporal-runner.ts" },
  "uptime reconciler": { role: "worker", mode: "temporal", owner: "src/uptime/temporal-runner.ts" },
  "alert re-scan": { role: "worker", mode: "embedded", owner: "src/alerts/scheduler.ts" },
  "alert evaluations": { role: "worker", mode: "embedded", owner: "src/alerts/scheduler.ts", woken: true },
  "webhook outbox expander": { role: "worker", mode: "always", owner: "src/webhooks/expander.ts" },
  "webhook delivery scheduler": { role: "worker", mode: "always", owner: "src/webhooks/scheduler.ts" },
  "subscriber mails": { role: "worker", mode: "always", owner: "src/subscribers/sender.ts", woken: true },
  "webhook reconciler": { role: "worker", mode: "temporal", owner: "src/webhooks/service.ts" },
  "temporal workers": { role: "worker", mode: "temporal", owner: "src/temporal/worker.ts" },
} as const satisfies Record<string, { role: TaskRole; mode: TaskMode; owner: string; woken?: true }>;

export type TaskName = keyof typeof BACKGROUND_TASKS;

/** One task as /health shows it. */
export interface BackgroundTaskReport {
  /** When the last pass ended (ISO 8601), successful or not; null before the first. */
  lastRunAt: string | null;
  /** The last failed pass's error message (one line, no stack); null if none failed since start. */
  lastError: string | null;
  lastErrorAt: string | null;
  /** How far behind its due time the task is now (0 when on time). */
  lagMs: number;
  runs: number;
  failures: number;
}

/** What a task's loop reports about its passes. */
export interface TaskRecorder {
  /** Runs one pass and records it: its end, its error (re-thrown), its lag behind the due time. */
  run<T>(pass: () => Promise<T>): Promise<T>;
}

const MAX_ERROR_CHARS = 200;

/** An error's message only: its first line, bounded (never its stack, its query or its parameters). */
function errorLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const line = message.split("\n", 1)[0].trim() || (err instanceof Error ? err.name : "error");
  return line.length > MAX_ERROR_CHARS ? `${line.slice(0, MAX_ERROR_CHARS - 1)}…` : line;
}

class Task implements TaskRecorder {
  private lastStart: number | undefined;
  private lastEnd: number | undefined;
  private running = 0;
  private lastError: { message: string; at: number } | undefined;
  private runs = 0;
  private failures = 0;
  private readonly registeredAt = Date.now();

  constructor(
    readonly name: TaskName,
    /** The longest a task waits between passes when nothing wakes it earlier; null: only when woken (no lag). */
    private readonly intervalMs: number | null,
    private readonly telemetry: Telemetry,
  ) {}

  async run<T>(pass: () => Promise<T>): Promise<T> {
    this.lastStart = Date.now();
    this.running++;
    try {
      const value = await pass();
      this.runs++;
      return value;
    } catch (err) {
      this.runs++;
      this.failures++;
      this.lastError = { message: errorLine(err), at: Date.now() };
      this.telemetry.backgroundFailures.inc({ task: this.name });
      throw err;
    } finally {
      this.running--;
      this.lastEnd = Date.now();
    }
  }

  /** Due once an interval has passed since the last pass started (or since registration). */
  lagMs(now: number): number {
    if (this.intervalMs === null) return 0;
    return Math.max(0, now - ((this.lastStart ?? this.registeredAt) + this.intervalMs));
  }

  lastRunSeconds(): number | undefined {
    return this.lastEnd === undefined ? undefined : this.lastEnd / 1000;
  }

  report(now: number): BackgroundTaskReport {
    return {
      lastRunAt: this.lastEnd === undefined ? null : new Date(this.lastEnd).toISOString(),
      lastError: this.lastError?.message ?? null,
      lastErrorAt: this.lastError ? new Date(this.lastError.at).toISOString() : null,
      lagMs: this.lagMs(now),
      runs: this.runs,
      failures: this.failures,
    };
  }
}

export class BackgroundTasks {
  private readonly tasks = new Map<TaskName, Task>();

  constructor(
    readonly log: Logger,
    private readonly telemetry: Telemetry,
    /** This node's ROLE and runner: a task the table does not give them is refused (a wiring bug). */
    private readonly node: { role: "all" | "api" | "worker"; temporal: boolean },
  ) {
    telemetry.readBackground(() =>
      [...this.tasks.values()].map((t) => ({
        task: t.name,
        lastRunSeconds: t.lastRunSeconds(),
        lagSeconds: t.lagMs(Date.now()) / 1000,
      })),
    );
  }

  /** Registers a task (again after a restart of the same loop: its record carries on). */
  record(name: TaskName, intervalMs: number | null): TaskRecorder {
    const { role, mode } = BACKGROUND_TASKS[name];
    if (role === "worker" && this.node.role === "api")
      throw new Error(`background task "${name}" runs on worker nodes only (BACKGROUND_TASKS), not ROLE=api`);
    if (mode !== "always" && mode !== (this.node.temporal ? "temporal" : "embedded"))
      throw new Error(`background task "${name}" is of the ${mode} runner only (BACKGROUND_TASKS)`);
    let t = this.tasks.get(name);
    if (!t) this.tasks.set(name, (t = new Task(name, intervalMs, this.telemetry)));
    return t;
  }

  /** Every task registered on this node, by name. */
  report(): Record<string, BackgroundTaskReport> {
    const now = Date.now();
    const out: Record<string, BackgroundTaskReport> = {};
    for (const [name, t] of [...this.tasks].sort(([a], [b]) => a.localeCompare(b))) out[name] = t.report(now);
    return out;
  }
}
