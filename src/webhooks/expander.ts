import type { Logger } from "pino";
import type { BackgroundTasks } from "../shared/background.js";
import type { Clock } from "../shared/clock.js";
import { Coalescer } from "../shared/coalesce.js";
import type { Db } from "../storage/db.js";
import { expandOutbox } from "./outbox.js";
import { failureLevel } from "../shared/periodic.js";

// The outbox expander (worker nodes): turns the outbox rows written by ingest transactions into
// webhook_deliveries rows, exactly once (outbox.ts), then wakes the senders (this node directly,
// the others by the NOTIFY sent on commit). Woken by the ingest transactions' NOTIFY, at start-up
// (rows left by a crash), after a LISTEN reconnection, and by a safety-net timer. Passes are
// coalesced (shared/coalesce.ts): one at a time, one more after it when woken meanwhile.
//
// It yields to saturated ingestion on this node like the senders do (expanding is what made the
// ingest transaction slow: a delivery row and its three index entries per event). While
// `yieldTo.busy()`, it only expands rows older than `maxDeferMs`, `busyChunk` at a time, and looks
// again every `busyPauseMs`: a burst of ingestion is not slowed down, and it never starves, since
// every row is expanded within about `maxDeferMs` (plus the time to expand what is ahead of it)
// even under sustained ingestion. Other nodes (not ingesting) expand at once.

export interface ExpanderOptions {
  db: Db;
  clock: Clock;
  log: Logger;
  /** Records each pass ("webhook outbox expander": /health `background`). */
  tasks: BackgroundTasks;
  attemptLimit: () => number;
  /** New deliveries were inserted: wake this node's scheduler. */
  onExpanded: () => void;
  yieldTo?: { busy(): boolean };
  /** Outbox rows per transaction (each holds the events of one ingest batch for one webhook). */
  chunk?: number;
  /** While ingestion is saturated: rows per transaction, pause between looks, and the deferral bound. */
  busyChunk?: number;
  busyPauseMs?: number;
  maxDeferMs?: number;
  safetyNetMs?: number;
}

export class OutboxExpander {
  private readonly passes = new Coalescer<void>({ flush: () => this.pump() });
  private stopped = true;
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: ExpanderOptions) {}

  start(): void {
    this.stopped = false;
    this.wake();
  }

  /** Outbox rows may be waiting: expand them (coalesced; safe to call often). */
  wake(): void {
    if (this.stopped) return;
    void this.passes.submit();
  }

  private async pump(): Promise<void> {
    const chunk = this.o.chunk ?? 16;
    const busyChunk = this.o.busyChunk ?? 1;
    const pauseMs = this.o.busyPauseMs ?? 100;
    const maxDeferMs = this.o.maxDeferMs ?? 2_000;
    clearTimeout(this.timer);
    const task = this.o.tasks.record("webhook outbox expander", this.o.safetyNetMs ?? 30_000);
    try {
      await task.run(() => this.expand(chunk, busyChunk, pauseMs, maxDeferMs));
      this.arm(this.o.safetyNetMs ?? 30_000);
    } catch (err) {
      this.o.log[failureLevel(err)]({ err }, "webhooks: outbox expansion failed; retrying in 1 s");
      this.arm(1_000);
    }
  }

  private async expand(chunk: number, busyChunk: number, pauseMs: number, maxDeferMs: number): Promise<void> {
    while (!this.stopped) {
      const busy = this.o.yieldTo?.busy() ?? false;
      const max = busy ? busyChunk : chunk;
      const now = this.o.clock();
      const r = await expandOutbox(
        this.o.db,
        max,
        now,
        this.o.attemptLimit(),
        busy ? new Date(now.getTime() - maxDeferMs) : now,
      );
      if (r.deliveries > 0) this.o.onExpanded();
      if (r.rows === max) continue;
      if (!busy) break; // drained (rows a peer holds are its to expand)
      // Yielding: look again shortly for rows that have waited long enough, or for the end of the burst.
      await new Promise((res) => setTimeout(res, pauseMs));
    }
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), ms);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.passes.idle();
  }
}
