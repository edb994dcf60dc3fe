import type { Logger } from "pino";
import type { BackgroundTasks } from "../shared/background.js";
import type { Clock } from "../shared/clock.js";
import { CoalescedPump } from "../shared/pump.js";
import type { Db } from "../storage/db.js";
import { expandOutbox, outboxWaiting } from "./outbox.js";

// The outbox expander (worker nodes): turns the outbox rows written by ingest transactions into
// webhook_deliveries rows, exactly once (outbox.ts), then wakes the senders (this node directly,
// the others by the NOTIFY sent on commit). Woken by the ingest transactions' NOTIFY, at start-up
// (rows left by a crash), after a LISTEN reconnection, and by a safety-net timer. Passes are
// coalesced, one at a time, one more after it when woken meanwhile (shared/pump.ts).
//
// It yields to saturated ingestion on this node like the senders do (expanding is what made the
// ingest transaction slow: a delivery row and its three index entries per event). While
// `yieldTo.busy()`, it only expands rows older than `maxDeferMs`, `busyChunk` at a time, and looks
// again every `busyPauseMs`: a burst of ingestion is not slowed down, and it never starves, since
// every row is expanded within about `maxDeferMs` (plus the time to expand what is ahead of it)
// even under sustained ingestion. Other nodes (not ingesting) expand at once.
//
// A row whose webhook row is locked (an attempt's failing-streak UPDATE, a PATCH) is skipped, and
// its NOTIFY has been spent: a pass that leaves rows behind is followed by another LOCKED_RETRY_MS
// later (not at the 30 s safety net), until none is left.

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
  /** How soon a pass that left rows behind is followed by another. */
  lockedRetryMs?: number;
}

/** A pass that left rows (skipped under a lock, or a peer's) is followed by another this soon. */
const LOCKED_RETRY_MS = 250;

export class OutboxExpander {
  private readonly pump: CoalescedPump;

  constructor(private readonly o: ExpanderOptions) {
    const safetyNetMs = o.safetyNetMs ?? 30_000;
    this.pump = new CoalescedPump({
      tasks: o.tasks,
      log: o.log,
      name: "webhook outbox expander",
      expectedMs: safetyNetMs,
      failure: "webhooks: outbox expansion failed; retrying in 1 s",
      pass: async (stopped) => {
        await this.expand(stopped, o.chunk ?? 16, o.busyChunk ?? 1, o.busyPauseMs ?? 100, o.maxDeferMs ?? 2_000);
        // Rows left (skipped under a webhook row's lock, or a peer's): look again soon, not at the safety net.
        return !stopped() && (await outboxWaiting(o.db)) ? (o.lockedRetryMs ?? LOCKED_RETRY_MS) : safetyNetMs;
      },
    });
  }

  start(): void {
    this.pump.start();
  }

  /** Outbox rows may be waiting: expand them (coalesced; safe to call often). */
  wake(): void {
    this.pump.wake();
  }

  stop(): Promise<void> {
    return this.pump.stop();
  }

  private async expand(
    stopped: () => boolean,
    chunk: number,
    busyChunk: number,
    pauseMs: number,
    maxDeferMs: number,
  ): Promise<void> {
    while (!stopped()) {
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
}
