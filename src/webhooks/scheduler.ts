import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Config } from "../config/index.js";
import type { BackgroundTasks } from "../shared/background.js";
import type { Clock } from "../shared/clock.js";
import { Coalescer } from "../shared/coalesce.js";
import type { Telemetry } from "../shared/telemetry.js";
import type { WebhookMetrics } from "./metrics.js";
import type { Db } from "../storage/db.js";
import { envelope } from "./targets/envelope.js";
import { nextAttempt } from "./retry.js";
import { rowTarget, sendAttempt } from "./sender.js";
import type { OpenChannels } from "./channels.js";
import { claimDue, finishMany, handOver, nextDueAt, type ClaimedDelivery, type Finished } from "./store.js";
import { failureLevel } from "../shared/periodic.js";

// The embedded runner: a durable scheduler on PostgreSQL. Due deliveries are claimed with
// FOR UPDATE SKIP LOCKED under an expiring lease (store.ts), so no two workers send the same
// delivery at once and a crashed worker's deliveries fall due again. It wakes on NOTIFY (sent by
// the transaction that inserted deliveries, on commit, to every node), on its own completions
// while a backlog remains, and on a timer set for the earliest due retry. No polling loop. Passes
// and outcome writes are coalesced (shared/coalesce.ts): one at a time, a wake or an outcome that
// arrives meanwhile goes in the next one.

export interface SchedulerOptions {
  db: Db;
  clock: Clock;
  log: Logger;
  /** Records each claim pass ("webhook delivery scheduler": /health `background`). */
  tasks: BackgroundTasks;
  /** Scheduler lag (shared by the runners of every feature). */
  telemetry: Pick<Telemetry, "schedulerLag">;
  metrics: WebhookMetrics;
  webhooks: Config["webhooks"];
  /** Sends in flight at once on this node. */
  concurrency?: number;
  /** While this reports busy (ingestion on this node), at most `busyConcurrency` sends run. */
  yieldTo?: { busy(): boolean };
  busyConcurrency?: number;
  /** Every type's channel (channels.ts). */
  channels: OpenChannels;
  /** After each batch of outcomes: the webhooks' failing streaks (failing.ts `noteOutcomes`). */
  noteOutcomes: (outcomes: { webhookId: string; ok: boolean }[], now: Date) => Promise<void>;
  /** Temporal mode: hand claimed deliveries over instead of sending them. */
  dispatch?: (rows: ClaimedDelivery[]) => Promise<void>;
}

const MAX_TIMER_MS = 5 * 60_000;

export class DeliveryScheduler {
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly inflight = new Set<Promise<void>>();
  /** Claim passes: one at a time, one more after it when woken meanwhile. */
  private readonly passes = new Coalescer<void>({ flush: () => this.pump() });
  /** Outcomes are written in batches: one UPDATE for all that finished while the last one ran. */
  private readonly outcomes = new Coalescer<Finished>({ maxBatch: 1000, flush: (batch) => this.flush(batch) });
  private backlog = false;
  private stopped = true;
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;

  constructor(private readonly o: SchedulerOptions) {
    this.concurrency = o.concurrency ?? 128;
    // A send is bounded by the timeout; the margin covers recording its outcome.
    this.leaseMs = o.dispatch ? 30_000 : o.webhooks.timeoutMs + 5_000;
  }

  start(): void {
    this.stopped = false;
    this.wake();
  }

  /** Something may be due now: claim it (coalesced; safe to call often). */
  wake(): void {
    if (this.stopped) return;
    void this.passes.submit();
  }

  private async pump(): Promise<void> {
    const task = this.o.tasks.record("webhook delivery scheduler", MAX_TIMER_MS);
    try {
      await task.run(() => this.claim());
    } catch (err) {
      this.o.log[failureLevel(err)]({ err }, "webhooks: scheduler pass failed; retrying in 1 s");
      this.armAt(new Date(this.o.clock().getTime() + 1_000));
    }
  }

  private async claim(): Promise<void> {
    while (!this.stopped) {
      const limit = this.o.yieldTo?.busy() ? (this.o.busyConcurrency ?? 4) : this.concurrency;
      const room = this.o.dispatch ? 500 : Math.min(100, limit - this.inflight.size);
      if (room <= 0) {
        this.backlog = true;
        // Yielding with nothing in flight: no completion will wake us, so look again shortly.
        if (this.inflight.size === 0) this.armAt(new Date(this.o.clock().getTime() + 50));
        break;
      }
      const now = this.o.clock();
      const token = randomUUID();
      const rows = await claimDue(this.o.db, now, new Date(now.getTime() + this.leaseMs), token, room);
      this.backlog = rows.length === room;
      for (const r of rows)
        this.o.telemetry.schedulerLag.observe(
          { kind: "webhook" },
          Math.max(0, now.getTime() - r.due_at.getTime()) / 1000,
        );
      if (this.o.dispatch) await this.handOver(rows, token);
      else for (const r of rows) this.track(this.attempt(r));
      if (!this.backlog) break;
    }
    // Another pass is queued (woken meanwhile): it arms the timer when it is done.
    if (!this.stopped && !this.backlog && this.passes.queued === 0) await this.armFromDb();
  }

  private async handOver(rows: ClaimedDelivery[], token: string): Promise<void> {
    if (rows.length === 0) return;
    // On failure the lease expires and the rows are claimed again.
    await this.o.dispatch!(rows);
    await handOver(
      this.o.db,
      rows.map((r) => r.id),
      token,
      this.o.clock(),
    );
  }

  private track(p: Promise<void>): void {
    this.inflight.add(p);
    void p.finally(() => {
      this.inflight.delete(p);
      if (this.backlog) this.wake();
    });
  }

  private async attempt(r: ClaimedDelivery): Promise<void> {
    const { webhooks, clock, metrics } = this.o;
    try {
      const env = envelope({
        id: r.id,
        eventType: r.event_type,
        createdAt: r.created_at,
        projectId: r.project_id,
        payload: r.payload,
      });
      const res = await sendAttempt(rowTarget(r), env, r.event_id, {
        timeoutMs: webhooks.timeoutMs,
        allowPrivate: webhooks.allowPrivate,
        now: clock(),
        channels: this.o.channels,
      });
      const next = nextAttempt(
        res.outcome,
        r.attempt_count + 1,
        r.attempt_limit,
        { baseMs: webhooks.backoffBaseMs },
        Math.random(),
      );
      metrics.attempts.inc({ outcome: next.status === "retrying" ? "failed" : next.status });
      const now = clock();
      const nextAt = next.status === "retrying" ? new Date(now.getTime() + next.delayMs) : null;
      this.record({
        id: r.id,
        webhookId: r.webhook_id,
        token: r.claim_token,
        status: next.status,
        attempt: res.record,
        nextAt,
        now,
      });
      if (nextAt) this.armAt(nextAt);
    } catch (err) {
      // Unexpected (the sender reports failures as outcomes): the lease will bring it back.
      this.o.log.error({ err, deliveryId: r.id }, "webhooks: attempt failed unexpectedly");
    }
  }

  private record(f: Finished): void {
    void this.outcomes.submit(f);
  }

  /** One batch of outcomes, retried a few times (never throws). */
  private async flush(batch: Finished[]): Promise<void> {
    for (let i = 0; ; i++) {
      try {
        await finishMany(this.o.db, batch);
        break;
      } catch (err) {
        if (i >= 3) {
          this.o.log.error(
            { err, n: batch.length },
            "webhooks: could not record outcomes; their leases will expire and they will be retried",
          );
          return;
        }
        await new Promise((r) => setTimeout(r, 200 * (i + 1)));
      }
    }
    // The webhooks' failing streaks (failing.ts; it logs its own failures, never throws).
    await this.o.noteOutcomes(
      batch.map((f) => ({ webhookId: f.webhookId, ok: f.status === "succeeded" })),
      batch[batch.length - 1].now,
    );
  }

  private async armFromDb(): Promise<void> {
    const at = await nextDueAt(this.o.db);
    this.armAt(at ?? new Date(this.o.clock().getTime() + MAX_TIMER_MS));
  }

  /** Makes sure a pass runs at `at` (keeps an earlier timer). */
  private armAt(at: Date): void {
    if (this.stopped) return;
    const ms = Math.min(Math.max(0, at.getTime() - this.o.clock().getTime()), MAX_TIMER_MS);
    const when = Date.now() + ms;
    if (this.timer && this.timerAt <= when) return;
    clearTimeout(this.timer);
    this.timerAt = when;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.wake();
    }, ms + 5);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.inflight]);
    await this.outcomes.stop();
  }
}
