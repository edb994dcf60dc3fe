import type { UptimeDeps } from "./deps.js";
import { failureLevel, startPeriodic, type Periodic } from "../shared/periodic.js";
import { checkDeadlines } from "./detect.js";
import { parseWake, WAKE_CHANNEL, type DeadlineChange, type DeadlineRunner } from "./wake.js";
import { DueTimer } from "../shared/due-timer.js";
import type { Subscription } from "../shared/notifications.js";

// The embedded deadline runner (no TEMPORAL_ADDRESS). The durable state is monitors.deadline_at; this
// process keeps the nearest deadlines in a DueTimer (shared/due-timer.ts: a min-heap with ONE timer for
// the earliest), so a monitor is checked when its deadline passes (not by minute polling). It learns deadlines from:
// - its own commits (heartbeats, pause/resume, patches): changed(), exact;
// - other nodes: NOTIFY on WAKE_CHANNEL for new or earlier deadlines (later ones need no message:
//   the stale entry fires early, the check re-reads the row and re-arms);
// - a re-scan of deadlines within the horizon at start-up (overdue ones are acted on at once) and
//   every rescanMs, as the safety net for a lost notification.
// Every decision goes through checkDeadlines(): pure evaluateDeadline() + compare-and-set.

/** Monitors per check transaction, and checks in flight at once (each holds a pool connection). */
const MAX_BATCH = 100;
const MAX_CHECKS = 4;

export interface SchedulerOptions {
  /** Deadlines loaded by a re-scan: those before now + horizonMs. */
  horizonMs: number;
  rescanMs: number;
}

export class EmbeddedScheduler implements DeadlineRunner {
  private due: DueTimer<null>;
  private rescanLoop: Periodic | undefined;
  private running = false;
  private active = 0;
  private checks = new Set<Promise<void>>();
  private subscription: Subscription | undefined;

  constructor(
    private readonly deps: UptimeDeps,
    private readonly opts: SchedulerOptions = { horizonMs: 60_000, rescanMs: 30_000 },
  ) {
    this.due = new DueTimer({
      now: () => this.deps.clock().getTime(),
      maxDelayMs: opts.rescanMs,
      onDue: () => this.launch(),
    });
  }

  async start(): Promise<void> {
    this.running = true;
    this.due.start();
    await this.listen();
    await this.rescan();
    // Stopped meanwhile (stop() closes the subscription a start may still be waiting on).
    if (!this.running) return;
    this.rescanLoop = startPeriodic(this.deps.background, "uptime re-scan", this.opts.rescanMs, () => this.rescan());
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.rescanLoop?.stop();
    this.due.stop();
    await Promise.allSettled([...this.checks]);
    this.subscription?.close();
    this.subscription = undefined;
  }

  /** Local commits: exact deadlines (null: none applies). */
  changed(changes: DeadlineChange[]): void {
    if (!this.running) return;
    for (const c of changes) {
      if (c.deadlineAt === null) this.due.delete(c.id);
      else this.due.set(c.id, c.deadlineAt, null);
    }
    this.arm();
  }

  sweep(): Promise<void> {
    return this.rescan();
  }

  /** Loads every deadline before now + horizon (all overdue ones included). */
  async rescan(): Promise<void> {
    if (!this.running) return;
    const until = new Date(this.deps.clock().getTime() + this.opts.horizonMs);
    const r = await this.deps.db.query<{ id: string; deadline_at: Date }>(
      "SELECT id, deadline_at FROM monitors WHERE deadline_at IS NOT NULL AND deadline_at <= $1",
      [until],
    );
    // Hints: keep the earliest known; a check settles the truth.
    for (const row of r.rows) this.due.offer(row.id, row.deadline_at.getTime(), null);
    // Re-arm from scratch: the wall clock may have jumped (suspend, NTP step) since the timer was set.
    if (this.running) this.due.rearm();
  }

  /** On the process's LISTEN connection (shared/notifications.ts); resolves once listening. */
  private async listen(): Promise<void> {
    this.subscription = this.deps.notifications.subscribe({
      channels: [WAKE_CHANNEL],
      onMessage: (_channel, payload) => {
        const w = parseWake(payload);
        if (!w || !this.running) return;
        this.due.offer(w.id, w.deadlineAt, null);
        this.arm();
      },
      // Reconnected: re-scan for whatever was announced while the connection was down.
      onReconnect: () => {
        if (this.running) void this.rescan().catch((err) => this.deps.log.warn({ err }, "uptime re-scan failed"));
      },
    });
    await this.subscription.listening;
  }

  /** Points the timer at the earliest live deadline (or starts checks for those already due). */
  private arm(): void {
    if (this.running) this.due.arm();
  }

  /** Starts checks of due monitors, in batches of at most MAX_BATCH, up to MAX_CHECKS at once. */
  private launch(): void {
    while (this.running && this.active < MAX_CHECKS) {
      const now = this.deps.clock();
      const due = this.due.takeDue(now.getTime(), MAX_BATCH).map((e) => e.id);
      if (!due.length) break;
      this.active++;
      const run = this.check(due, now).finally(() => {
        this.active--;
        this.checks.delete(run);
        this.arm();
      });
      this.checks.add(run);
    }
    if (this.active < MAX_CHECKS) this.arm();
  }

  /** Checks a batch of monitors whose deadline has come; re-arms the ones still watched. */
  private async check(due: string[], now: Date): Promise<void> {
    try {
      // Woken by deadlines only (none when no monitor is watched): no due time of its own, no lag.
      const task = this.deps.background.record("uptime deadline checks", null);
      const { next } = await task.run(() => checkDeadlines(this.deps, due, now));
      for (const [id, at] of next) if (at !== null) this.due.offer(id, at, null);
    } catch (err) {
      if (!this.running) return;
      this.deps.log[failureLevel(err)]({ err }, "uptime deadline check failed; retrying in 1 s");
      for (const id of due) this.due.offer(id, now.getTime() + 1000, null);
    }
  }
}
