import { failureLevel, startPeriodic, type Periodic } from "../shared/periodic.js";
import { DueTimer } from "../shared/due-timer.js";
import type { Subscription } from "../shared/notifications.js";
import type { Queryable } from "../storage/db.js";
import type { Sampler } from "./batch.js";
import { runDue, type AlertDeps } from "./evaluator.js";
import { dueAlerts } from "./store.js";

// The embedded alert scheduler, in the manner of uptime's deadline scheduler (src/uptime/scheduler.ts):
// the durable state is alerts.next_at (the next due evaluation); this process keeps the known due
// times in a DueTimer (shared/due-timer.ts: a min-heap with ONE timer for the earliest). It learns
// them from its own commits (created or changed alerts: changed()), from other nodes by NOTIFY on WAKE_CHANNEL, and from a re-scan of
// the due times within the horizon at start-up (overdue ones: caught up at once, in order) and every
// RESCAN_MS. Every node that runs it may evaluate the same alert: the evaluation's transaction
// claims it (evaluator.ts), so each due time is applied once.

const WAKE_CHANNEL = "vigil_alert_wake";
const RESCAN_MS = 10_000;
const HORIZON_MS = 60_000;
const RESCAN_LIMIT = 10_000;

/** Inside the writing transaction: other nodes' schedulers learn of a new due time. */
export async function announceDue(c: Queryable, projectId: string, id: string, at: Date): Promise<void> {
  await c.query("SELECT pg_notify($1, $2)", [WAKE_CHANNEL, `${projectId} ${id} ${at.getTime()}`]);
}

export class AlertScheduler {
  /** Alert ids by due time, each with its project. */
  private due: DueTimer<string>;
  private rescanLoop: Periodic | undefined;
  private running = false;
  private active = new Set<string>();
  private runs = new Set<Promise<void>>();
  private subscription: Subscription | undefined;

  /** Alerts evaluated at once (config.alerts.evaluationConcurrency, ALERT_EVALUATION_CONCURRENCY). */
  private readonly maxRunning: number;

  constructor(
    private readonly deps: AlertDeps,
    private readonly sample: Sampler,
  ) {
    this.maxRunning = deps.config.alerts.evaluationConcurrency;
    this.due = new DueTimer({ now: () => deps.clock().getTime(), maxDelayMs: RESCAN_MS, onDue: () => this.launch() });
  }

  async start(): Promise<void> {
    this.running = true;
    this.due.start();
    this.subscription = this.deps.notifications.subscribe({
      channels: [WAKE_CHANNEL],
      onMessage: (_channel, payload) => {
        const m = /^(\S+) (\S+) (\d+)$/.exec(payload ?? "");
        if (m && this.running) this.offer(m[2], m[1], Number(m[3]));
      },
      onReconnect: () => {
        if (this.running) void this.rescan().catch((err) => this.deps.log.warn({ err }, "alert re-scan failed"));
      },
    });
    await this.subscription.listening;
    await this.rescan();
    if (!this.running) return;
    this.rescanLoop = startPeriodic(this.deps.background, "alert re-scan", RESCAN_MS, () => this.rescan());
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.rescanLoop?.stop();
    this.due.stop();
    await Promise.allSettled([...this.runs]);
    this.subscription?.close();
    this.subscription = undefined;
  }

  /** A local commit set this alert's next due time (null: deleted). */
  changed(projectId: string, id: string, at: number | null): void {
    if (!this.running) return;
    if (at === null) this.due.delete(id);
    else this.due.set(id, at, projectId);
    this.arm();
  }

  /** Hints (notifications, re-scans): keep the earliest known; the run reads the truth. */
  private offer(id: string, projectId: string, at: number): void {
    this.due.offer(id, at, projectId);
    this.arm();
  }

  async rescan(): Promise<void> {
    if (!this.running) return;
    const until = new Date(this.deps.clock().getTime() + HORIZON_MS);
    for (const r of await dueAlerts(this.deps.db, until, RESCAN_LIMIT))
      this.offer(r.id, r.project_id, r.next_at.getTime());
    if (this.running) this.due.rearm();
  }

  private arm(): void {
    if (this.running) this.due.arm();
  }

  /** Starts the due alerts' runs (one run per alert at a time, at most maxRunning at once; those
   * due together share their samples' statements through the batcher: batch.ts). */
  private launch(): void {
    if (!this.running) return;
    const now = this.deps.clock().getTime();
    let held = 0;
    const hold = (id: string): boolean => {
      if (!this.active.has(id)) return false;
      held++;
      return true;
    };
    for (const { id, value: projectId } of this.due.takeDue(now, this.maxRunning - this.active.size, hold)) {
      this.active.add(id);
      const run = this.run(id, projectId, now).finally(() => {
        this.active.delete(id);
        this.runs.delete(run);
        this.arm();
      });
      this.runs.add(run);
    }
    // An alert still running keeps its due time in the timer: its run's end re-arms.
    if (this.active.size < this.maxRunning && !held) this.arm();
  }

  private async run(id: string, projectId: string, now: number): Promise<void> {
    try {
      const task = this.deps.background.record("alert evaluations", null);
      const next = await task.run(() => runDue(this.deps, projectId, id, now, this.sample));
      if (next !== null) this.offer(id, projectId, next);
    } catch (err) {
      if (!this.running) return;
      this.deps.log[failureLevel(err)]({ err, alertId: id }, "alert evaluation failed; retrying in 1 s");
      this.offer(id, projectId, now + 1000);
    }
  }
}
