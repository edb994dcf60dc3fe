import type { UptimeDeps } from "./deps.js";
import { DueTimer } from "../shared/due-timer.js";
import { failureLevel, startPeriodic, type Periodic } from "../shared/periodic.js";
import type { Subscription } from "../shared/notifications.js";
import { advance, MAINTENANCE_CHANNEL, WINDOWS_AT_ONCE, type MaintenanceHooks } from "./maintenance.js";
import { parseWake, type DeadlineChange } from "./wake.js";

// The maintenance timer: wakes when a window's due_at (its next start or end) comes and applies the
// transition (maintenance.ts advance(): row lock + claim row, so once on any number of nodes). Like
// the embedded deadline scheduler it keeps due times in a DueTimer, learns them from its own commits
// (due()), from other nodes (NOTIFY on MAINTENANCE_CHANNEL) and from a re-scan at start-up and
// every rescanMs (the safety net, and what catches up after a restart). It runs wherever background
// work runs, in the embedded runner; with TEMPORAL_ADDRESS the deadline scan applies the windows
// instead (activities.ts, advanceDueWindows). The monitors' deadlines it changes go to the runner.

export class MaintenanceTimer {
  private readonly due: DueTimer<null>;
  private running = false;
  private active = 0;
  private work = new Set<Promise<void>>();
  private rescanLoop: Periodic | undefined;
  private subscription: Subscription | undefined;
  readonly hooks: MaintenanceHooks;

  constructor(
    private readonly deps: UptimeDeps,
    changed: (changes: DeadlineChange[]) => void,
    private readonly opts: { horizonMs: number; rescanMs: number } = { horizonMs: 60_000, rescanMs: 30_000 },
  ) {
    this.due = new DueTimer({
      now: () => deps.clock().getTime(),
      maxDelayMs: opts.rescanMs,
      onDue: () => this.launch(),
    });
    this.hooks = {
      changed,
      due: (id, at) => {
        if (!this.running) return;
        if (at === null) this.due.delete(id);
        else this.due.set(id, at, null);
        this.due.arm();
      },
    };
  }

  async start(): Promise<void> {
    this.running = true;
    this.due.start();
    this.subscription = this.deps.notifications.subscribe({
      channels: [MAINTENANCE_CHANNEL],
      onMessage: (_channel, payload) => {
        const w = parseWake(payload);
        if (!w || !this.running) return;
        this.due.offer(w.id, w.deadlineAt, null);
        this.due.arm();
      },
      onReconnect: () => void this.rescan().catch((err) => this.deps.log.warn({ err }, "maintenance re-scan failed")),
    });
    await this.subscription.listening;
    await this.rescan();
    if (!this.running) return;
    this.rescanLoop = startPeriodic(this.deps.background, "maintenance re-scan", this.opts.rescanMs, () =>
      this.rescan(),
    );
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.rescanLoop?.stop();
    this.due.stop();
    await Promise.allSettled([...this.work]);
    this.subscription?.close();
    this.subscription = undefined;
  }

  /** Loads every window due before now + horizon (overdue ones: acted on at once). */
  async rescan(): Promise<void> {
    if (!this.running) return;
    const until = new Date(this.deps.clock().getTime() + this.opts.horizonMs);
    const r = await this.deps.db.query<{ id: string; due_at: Date }>(
      "SELECT id, due_at FROM maintenances WHERE due_at IS NOT NULL AND due_at <= $1",
      [until],
    );
    for (const row of r.rows) this.due.offer(row.id, row.due_at.getTime(), null);
    if (this.running) this.due.rearm();
  }

  private launch(): void {
    while (this.running && this.active < WINDOWS_AT_ONCE) {
      const [next] = this.due.takeDue(this.deps.clock().getTime(), 1);
      if (!next) break;
      this.active++;
      const run = this.apply(next.id).finally(() => {
        this.active--;
        this.work.delete(run);
        if (this.running) this.due.arm();
      });
      this.work.add(run);
    }
    if (this.running && this.active < WINDOWS_AT_ONCE) this.due.arm();
  }

  private async apply(id: string): Promise<void> {
    try {
      const task = this.deps.background.record("maintenance transitions", null);
      await task.run(() => advance(this.deps, this.hooks, id));
    } catch (err) {
      if (!this.running) return;
      this.deps.log[failureLevel(err)]({ err }, "maintenance transition failed; retrying in 1 s");
      this.due.offer(id, this.deps.clock().getTime() + 1000, null);
    }
  }
}
