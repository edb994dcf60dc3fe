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
import {
  claimDue,
  finishMany,
  handOver,
  nextDueAt,
  postpone,
  undoHandOver,
  type ClaimedDelivery,
  type Finished,
} from "./store.js";
import type { TemporalDispatch } from "./temporal.js";
import { rateWindow, takeSends } from "./rate.js";
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
  /**
   * Temporal mode: first attempts are still made here; a failed one's retry, and every claimed
   * delivery already attempted (a manual retry, a re-dispatch), are handed to Temporal.
   */
  temporal?: TemporalDispatch;
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
    // A send is bounded by the timeout; the margin covers recording its outcome (and, in Temporal
    // mode, starting a failed one's workflow).
    this.leaseMs = o.webhooks.timeoutMs + (o.temporal ? 30_000 : 5_000);
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
      const room = Math.min(100, limit - this.inflight.size);
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
      // Temporal mode: a delivery attempted before is the workflow's (its run makes the attempt,
      // under its webhook's rate: temporal.ts).
      const toTemporal = this.o.temporal ? rows.filter((r) => r.attempt_count > 0) : [];
      const mine = rows.filter((r) => !toTemporal.includes(r));
      const send = await this.withinRate(mine, token, now);
      for (const r of mine) if (send.has(r)) this.track(this.attempt(r, send.get(r)));
      await this.handOver(toTemporal, token);
      if (!this.backlog) break;
    }
    // Another pass is queued (woken meanwhile): it arms the timer when it is done.
    if (!this.stopped && !this.backlog && this.passes.queued === 0) await this.armFromDb();
  }

  /**
   * The claimed deliveries this pass may send under their webhooks' maxPerSecond (rate.ts), in
   * claim order, each with the second it was counted in (undefined: no limit); the others are
   * released, due at the next second (not an attempt: none is dropped).
   */
  private async withinRate(
    rows: ClaimedDelivery[],
    token: string,
    now: Date,
  ): Promise<Map<ClaimedDelivery, number | undefined>> {
    const limited = new Map<string, ClaimedDelivery[]>();
    for (const r of rows)
      if (r.max_per_second !== null) limited.set(r.webhook_id, [...(limited.get(r.webhook_id) ?? []), r]);
    if (limited.size === 0) return new Map(rows.map((r) => [r, undefined]));
    const granted = await takeSends(
      this.o.db,
      [...limited].map(([webhookId, rs]) => ({ webhookId, n: rs.length, max: rs[0].max_per_second! })),
      now,
    );
    const waiting = new Set<ClaimedDelivery>();
    for (const [webhookId, rs] of limited) for (const r of rs.slice(granted.get(webhookId) ?? 0)) waiting.add(r);
    if (waiting.size) {
      const { nextAt } = rateWindow(now);
      await postpone(
        this.o.db,
        [...waiting].map((r) => r.id),
        token,
        nextAt,
      );
      this.armAt(nextAt);
    }
    const { second } = rateWindow(now);
    return new Map(rows.filter((r) => !waiting.has(r)).map((r) => [r, r.max_per_second === null ? undefined : second]));
  }

  private async handOver(rows: ClaimedDelivery[], token: string): Promise<void> {
    if (rows.length === 0) return;
    // On failure the lease expires and the rows are claimed again.
    await this.o.temporal!.dispatch(rows);
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

  /** `second`: the second whose maxPerSecond count this send was taken from (rate.ts). */
  private async attempt(r: ClaimedDelivery, second?: number): Promise<void> {
    const { webhooks, clock, metrics } = this.o;
    try {
      const start = clock();
      if (second !== undefined && rateWindow(start).second !== second) {
        // Its second passed before the send could start (a busy node): counted again, not sent late.
        await postpone(this.o.db, [r.id], r.claim_token, start);
        this.wake();
        return;
      }
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
        now: start,
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
        handOver: !!this.o.temporal,
      });
      if (nextAt && !this.o.temporal) this.armAt(nextAt);
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
        const handed = await finishMany(this.o.db, batch);
        if (handed.length) await this.handOverRetries(handed);
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

  /** Temporal mode: the workflows of failed first attempts; due again at their planned time if they cannot start. */
  private async handOverRetries(rows: Awaited<ReturnType<typeof finishMany>>): Promise<void> {
    try {
      await this.o.temporal!.handOverRetries(rows);
    } catch (err) {
      this.o.log[failureLevel(err)]({ err, n: rows.length }, "webhooks: could not hand retries to Temporal");
      // If this fails too, the reconciler makes them due once their planned time is RECONCILE_SLACK_MS late.
      await undoHandOver(
        this.o.db,
        rows.map((r) => r.id),
        this.o.clock(),
      ).catch(() => undefined);
      this.armAt(rows.reduce((a, r) => (r.planned_at < a ? r.planned_at : a), rows[0].planned_at));
    }
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
