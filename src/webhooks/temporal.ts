import { randomUUID } from "node:crypto";
import type { Deps } from "../platform/deps.js";
import type { WebhookMetrics } from "./metrics.js";
import type { TemporalLink } from "../temporal/link.js";
import { VigilDeliveryStatus, VigilProjectId, VigilWebhookId } from "../temporal/search-attributes.js";
import type { Queryable } from "../storage/db.js";
import { envelope } from "./targets/envelope.js";
import { nextAttempt, type DeliveryStatus } from "./retry.js";
import type { AttemptOutcome } from "./targets/target.js";
import { rowTarget, sendAttempt, type AttemptRecord, type TargetRow } from "./sender.js";
import { PAYLOAD_SQL, TARGET_COLS, type ClaimedDelivery, type HandedRetry } from "./store.js";
import type { OpenChannels } from "./channels.js";
import { rateWindow, takeSends } from "./rate.js";

/** How long an attempt's activity waits for its webhook's rate (then fails, and Temporal retries it). */
const RATE_WAIT_MS = 10_000;

// The Temporal runner (TEMPORAL_ADDRESS set). The first attempt of every delivery is made by the
// embedded scheduler's claim, exactly as in embedded mode (claimed under a lease, outcome recorded
// in batches): a delivery that succeeds never becomes a workflow (docs/temporal.md "Webhook
// deliveries: cost model"). A delivery whose first attempt failed is handed to one workflow, id
// `webhook-<delivery id>`, on the `<base>.webhooks` task queue (workflows/webhooks.ts), started
// sleeping on a Temporal timer until its planned retry (handOverRetries); later attempts, manual
// retries (`retryNow`) and the giving up are that workflow's. Nothing is lost while Temporal is
// unreachable: a retry whose workflow could not be started is made due at its planned time again
// (the scheduler's claim then re-dispatches it), and a lease that expires brings a row back.
// What the row says while Temporal owns it:
// - handed over:  next_attempt_at NULL, claim_token NULL, planned_at = the workflow's next attempt;
// - attempting:   claim_token = the attempt's token, next_attempt_at = the attempt's lease end (so a
//                 manual retry answers 409, and a worker that died mid-attempt is noticed);
// - paused:       paused_at set (its webhook was disabled when the workflow woke): the run ended,
//                 enabling the webhook makes it due at planned_at again (store.setDeliveriesPaused).
// The reconciler (reconcileDeliveries) makes due again any handed-over delivery whose planned time
// passed without an attempt: its workflow was terminated, cancelled, failed or never started.

const WEBHOOK_WORKFLOW = "webhookDeliveryWorkflow";
const RETRY_NOW_SIGNAL = "retryNow";
const workflowIdFor = (deliveryId: string) => `webhook-${deliveryId}`;
/** A handed-over delivery whose planned attempt is this late has lost its workflow. */
export const RECONCILE_SLACK_MS = 15_000;

export interface DeliveryWorkflowInput {
  deliveryId: string;
  baseMs: number;
  timeoutMs: number;
  /** The namespace has Vigil's search attributes: keep VigilDeliveryStatus current. Absent in v1. */
  attributes?: boolean;
  /**
   * The attempts the delivery had when it was dispatched. The run's first attempt is made only if
   * that is still so: a dispatch that raced with an attempt (a re-dispatch of a delivery whose run
   * was merely slow, which then finished) starts a run that finds the attempt made and ends.
   */
  attemptsSoFar?: number;
  /**
   * The run of a delivery whose first attempt failed (made by the embedded scheduler's claim, not
   * by a workflow): the decided wait (retry.ts), which the run sleeps (a Temporal timer, cut short
   * by `retryNow`) before its first attempt, a scheduled one. Absent before the `delivery-v3` patch.
   */
  firstDelayMs?: number;
}

type AttemptResult =
  | { kind: "gone" }
  | { kind: "paused" }
  /** Attempted meanwhile by another run (see attemptsSoFar): this run ends with the row's status. */
  | { kind: "done"; status: DeliveryStatus }
  | { kind: "sent"; token: string; outcome: AttemptOutcome; record: AttemptRecord; attempts: number; limit: number };

interface Decision {
  status: DeliveryStatus;
  /** Wait this long before the next attempt (retrying only). */
  delayMs: number | null;
}

export interface WebhookActivities {
  /**
   * Claims the delivery (in flight), sends one attempt. `scheduled`: the retry schedule's attempt
   * (not a requested one), paused instead when its webhook is disabled.
   */
  attemptWebhookDelivery(deliveryId: string, scheduled?: boolean, attemptsSoFar?: number): Promise<AttemptResult>;
  /** Records the attempt and the decision of retry.ts (local activity; database only, never gives up). */
  recordWebhookAttempt(deliveryId: string, sent: Extract<AttemptResult, { kind: "sent" }>): Promise<Decision>;
}

/** v1's activities (workflows/webhooks-v1.ts), kept for runs started before `delivery-v2`. */
export interface WebhookActivitiesV1 {
  sendWebhookAttempt(
    deliveryId: string,
  ): Promise<{ gone: boolean; outcome: AttemptOutcome; attempts: number; limit: number }>;
  recordWebhookDecision(deliveryId: string, status: DeliveryStatus, plannedAt: string | null): Promise<void>;
}

interface Claimed extends TargetRow {
  /** The attempt may be sent (the webhook is enabled, or the attempt was requested); false: paused. */
  send: boolean;
  project_id: string;
  event_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
  attempt_count: number;
  attempt_limit: number;
}

/**
 * Marks the delivery in flight under `token` until `leaseUntil` (or paused when its webhook is
 * disabled) and returns what the send needs; undefined when the delivery or its webhook is gone.
 */
async function claimForAttempt(
  q: Queryable,
  id: string,
  token: string,
  leaseUntil: Date,
  now: Date,
  scheduled: boolean,
  attemptsSoFar: number | null,
): Promise<Claimed | undefined> {
  const r = await q.query<Claimed>(
    `UPDATE webhook_deliveries d SET
        claim_token = CASE WHEN go.send THEN $2 END,
        next_attempt_at = CASE WHEN go.send THEN $3::timestamptz END,
        paused_at = CASE WHEN go.send THEN NULL ELSE $4::timestamptz END,
        planned_at = CASE WHEN go.send THEN d.planned_at ELSE coalesce(d.planned_at, $4::timestamptz) END,
        updated_at = $4
     FROM webhooks w, LATERAL (SELECT w.enabled OR NOT $5::boolean AS send) go
     WHERE d.id = $1 AND w.id = d.webhook_id AND ($6::int IS NULL OR d.attempt_count = $6)
     RETURNING go.send, d.project_id, d.event_id, d.event_type, ${PAYLOAD_SQL} AS payload, d.created_at, d.attempt_count, d.attempt_limit, ${TARGET_COLS}`,
    [id, token, leaseUntil, now, scheduled, attemptsSoFar],
  );
  return r.rows[0];
}

/** Activities, bound to the service's deps. Registered on the webhooks worker. */
export function createWebhookActivities(
  deps: Pick<Deps, "db" | "clock" | "config">,
  metrics: WebhookMetrics,
  channels: OpenChannels,
  noteOutcomes: (outcomes: { webhookId: string; ok: boolean }[], now: Date) => Promise<void>,
): WebhookActivities & WebhookActivitiesV1 {
  const { db, clock, config } = deps;
  const send = (
    d: Pick<
      Claimed,
      | "type"
      | "url"
      | "to"
      | "routing_key"
      | "secret"
      | "previous_secret"
      | "previous_secret_until"
      | "event_id"
      | "event_type"
      | "created_at"
      | "project_id"
      | "payload"
    >,
    id: string,
    now: Date,
  ) =>
    sendAttempt(
      rowTarget(d),
      envelope({ id, eventType: d.event_type, createdAt: d.created_at, projectId: d.project_id, payload: d.payload }),
      d.event_id,
      { timeoutMs: config.webhooks.timeoutMs, allowPrivate: config.webhooks.allowPrivate, now, channels },
    );
  /**
   * Waits for a send under the delivery's webhook's maxPerSecond (rate.ts), shared with every
   * scheduler; answers the time the send was counted at (the attempt's time: its record, its signature).
   */
  async function withinRate(deliveryId: string): Promise<Date> {
    const w = (
      await db.query<{ webhook_id: string; max_per_second: number | null }>(
        "SELECT d.webhook_id, w.max_per_second FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = $1",
        [deliveryId],
      )
    ).rows[0];
    if (!w?.max_per_second) return clock();
    const giveUpAt = Date.now() + RATE_WAIT_MS;
    for (;;) {
      const now = clock();
      const granted = await takeSends(db, [{ webhookId: w.webhook_id, n: 1, max: w.max_per_second }], now);
      if ((granted.get(w.webhook_id) ?? 0) > 0) return now;
      // Not an attempt: the activity fails and Temporal retries it (infrastructure retries never give up).
      if (Date.now() > giveUpAt) throw new Error("webhook over its maxPerSecond for 10 s; the attempt is retried");
      await new Promise((r) => setTimeout(r, rateWindow(now).nextAt.getTime() - now.getTime() + 5));
    }
  }

  return {
    async attemptWebhookDelivery(deliveryId, scheduled = false, attemptsSoFar) {
      const now = await withinRate(deliveryId);
      const token = randomUUID();
      const d = await claimForAttempt(
        db,
        deliveryId,
        token,
        new Date(now.getTime() + config.webhooks.timeoutMs + 30_000),
        now,
        scheduled,
        attemptsSoFar ?? null,
      );
      if (!d) {
        if (attemptsSoFar === undefined) return { kind: "gone" };
        const cur = (
          await db.query<{ status: DeliveryStatus }>("SELECT status FROM webhook_deliveries WHERE id = $1", [
            deliveryId,
          ])
        ).rows[0];
        return cur ? { kind: "done", status: cur.status } : { kind: "gone" };
      }
      if (!d.send) return { kind: "paused" };
      const res = await send(d, deliveryId, now);
      return {
        kind: "sent",
        token,
        outcome: res.outcome,
        record: res.record,
        attempts: d.attempt_count + 1,
        limit: d.attempt_limit,
      };
    },

    async recordWebhookAttempt(deliveryId, sent) {
      const next = nextAttempt(
        sent.outcome,
        sent.attempts,
        sent.limit,
        { baseMs: config.webhooks.backoffBaseMs },
        Math.random(),
      );
      const now = clock();
      const delayMs = next.status === "retrying" ? next.delayMs : null;
      const r = await db.query<{ webhook_id: string }>(
        // Ours while our claim holds. Also when the scheduler took the claim back after its lease (this
        // record waited behind a backlog of workflow tasks, or the database was away) but nothing
        // attempted since (in Temporal mode only this run attempts: attempt_count unchanged): the
        // attempt did go out, so it is recorded instead of being sent a second time.
        `UPDATE webhook_deliveries SET status = $3, attempt_count = attempt_count + 1, attempts = attempts || jsonb_build_array($4::jsonb),
                planned_at = $5, next_attempt_at = NULL, claim_token = NULL, updated_at = $6
         WHERE id = $1 AND (claim_token = $2 OR (attempt_count = $7 AND status IN ('pending', 'retrying')))
         RETURNING webhook_id`,
        [
          deliveryId,
          sent.token,
          next.status,
          JSON.stringify(sent.record),
          delayMs === null ? null : new Date(now.getTime() + delayMs),
          now,
          sent.attempts - 1,
        ],
      );
      if (r.rows[0]) {
        metrics.attempts.inc({ outcome: next.status === "retrying" ? "failed" : next.status });
        await noteOutcomes([{ webhookId: r.rows[0].webhook_id, ok: sent.outcome.ok }], now);
        return { status: next.status, delayMs };
      }
      // Recorded already (this local activity ran again after a crash), or the claim was taken over:
      // follow what the row says.
      const cur = (
        await db.query<{ status: DeliveryStatus; planned_at: Date | null }>(
          "SELECT status, planned_at FROM webhook_deliveries WHERE id = $1",
          [deliveryId],
        )
      ).rows[0];
      if (!cur) return { status: "abandoned", delayMs: null };
      // Still unfinished (e.g. the database was down past the attempt's lease and the scheduler took
      // the claim back): this run attempts again, at its planned time or now, instead of ending
      // "pending" and leaving the delivery to the reconciler's slack.
      if (cur.status === "pending" || cur.status === "retrying")
        return {
          status: "retrying",
          delayMs: Math.max(0, (cur.planned_at?.getTime() ?? now.getTime()) - now.getTime()),
        };
      return { status: cur.status, delayMs: null };
    },

    async sendWebhookAttempt(deliveryId) {
      const r0 = await db.query<Claimed>(
        `SELECT true AS send, d.project_id, d.event_id, d.event_type, ${PAYLOAD_SQL} AS payload, d.created_at, d.attempt_count, d.attempt_limit, ${TARGET_COLS}
         FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = $1`,
        [deliveryId],
      );
      const d = r0.rows[0];
      if (!d) return { gone: true, outcome: { ok: false }, attempts: 0, limit: 0 };
      const res = await send(d, deliveryId, clock());
      const r = await db.query<{ attempt_count: number; attempt_limit: number }>(
        `UPDATE webhook_deliveries SET attempt_count = attempt_count + 1, attempts = attempts || jsonb_build_array($2::jsonb), next_attempt_at = NULL, updated_at = $3
         WHERE id = $1 RETURNING attempt_count, attempt_limit`,
        [deliveryId, JSON.stringify(res.record), clock()],
      );
      if (!r.rows[0]) return { gone: true, outcome: res.outcome, attempts: 0, limit: 0 };
      return { gone: false, outcome: res.outcome, attempts: r.rows[0].attempt_count, limit: r.rows[0].attempt_limit };
    },
    async recordWebhookDecision(deliveryId, status, plannedAt) {
      await db.query("UPDATE webhook_deliveries SET status = $2, planned_at = $3, updated_at = $4 WHERE id = $1", [
        deliveryId,
        status,
        plannedAt,
        clock(),
      ]);
    },
  };
}

export interface TemporalDispatch {
  /** Deliveries claimed for an attempt Temporal makes (a manual retry, a re-dispatch): their runs now. */
  dispatch(rows: ClaimedDelivery[]): Promise<void>;
  /** Deliveries whose first attempt failed: their runs, sleeping until the planned retry. */
  handOverRetries(rows: HandedRetry[]): Promise<void>;
}

/**
 * Starts the workflow of each claimed delivery (an existing run is kept), or, for a manual retry
 * or a re-dispatch of one already attempted, signals `retryNow` (starting a run if none is open).
 * handOverRetries starts the run of a delivery whose first attempt (made by the scheduler) failed.
 */
export function createTemporalDispatch(deps: Pick<Deps, "config">, link: TemporalLink): TemporalDispatch {
  const input = (r: Pick<ClaimedDelivery, "id" | "attempt_count">, attributes: boolean): DeliveryWorkflowInput => ({
    deliveryId: r.id,
    baseMs: deps.config.webhooks.backoffBaseMs,
    timeoutMs: deps.config.webhooks.timeoutMs,
    attributes,
    attemptsSoFar: r.attempt_count,
  });
  const options = async (
    r: Pick<ClaimedDelivery, "id" | "attempt_count" | "event_type" | "event_id" | "webhook_id" | "project_id">,
    firstDelayMs?: number,
  ) => {
    const [client, queues, attributes] = await Promise.all([link.client(), link.queues(), link.searchAttributes()]);
    const opts = {
      workflowId: workflowIdFor(r.id),
      taskQueue: queues.webhooks,
      args: [{ ...input(r, attributes), ...(firstDelayMs === undefined ? {} : { firstDelayMs }) }] as [
        DeliveryWorkflowInput,
      ],
      staticSummary: `Delivery of ${r.event_type} (${r.event_id}) to webhook ${r.webhook_id}`,
      ...(attributes
        ? {
            typedSearchAttributes: [
              { key: VigilProjectId, value: r.project_id },
              { key: VigilWebhookId, value: r.webhook_id },
              { key: VigilDeliveryStatus, value: r.attempt_count === 0 ? "pending" : "retrying" },
            ],
          }
        : {}),
    };
    return { client, opts };
  };
  return {
    async dispatch(rows) {
      await Promise.all(
        rows.map(async (r) => {
          const { client, opts } = await options(r);
          if (r.attempt_count === 0)
            await client.workflow.start(WEBHOOK_WORKFLOW, { ...opts, workflowIdConflictPolicy: "USE_EXISTING" });
          else
            await client.workflow.signalWithStart(WEBHOOK_WORKFLOW, {
              ...opts,
              signal: RETRY_NOW_SIGNAL,
              signalArgs: [],
            });
        }),
      );
    },
    async handOverRetries(rows) {
      await Promise.all(
        rows.map(async (r) => {
          const { client, opts } = await options(r, r.delay_ms);
          await client.workflow.start(WEBHOOK_WORKFLOW, { ...opts, workflowIdConflictPolicy: "USE_EXISTING" });
        }),
      );
    },
  };
}

/**
 * Makes due again every handed-over delivery whose planned attempt is RECONCILE_SLACK_MS late (its
 * workflow is gone: terminated, cancelled, failed); the scheduler's claim re-dispatches it.
 */
export async function reconcileDeliveries(q: Queryable, now: Date): Promise<number> {
  const r = await q.query(
    `WITH late AS (
       UPDATE webhook_deliveries d SET next_attempt_at = $1, updated_at = $1
       FROM webhooks w
       WHERE w.id = d.webhook_id AND w.enabled AND d.status IN ('pending', 'retrying') AND d.next_attempt_at IS NULL AND d.paused_at IS NULL
         AND coalesce(d.planned_at, d.updated_at) < $2
       RETURNING 1)
     SELECT count(*)::int AS n, pg_notify('vigil_webhook_due', '') FROM late HAVING count(*) > 0`,
    [now, new Date(now.getTime() - RECONCILE_SLACK_MS)],
  );
  return r.rows[0]?.n ?? 0;
}
