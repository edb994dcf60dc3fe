import { WorkflowExecutionAlreadyStartedError } from "@temporalio/client";
import { temporalClient } from "../temporal/client.js";
import type { Deps } from "../shared/deps.js";
import type { Queryable } from "../storage/db.js";
import { envelope } from "./payload.js";
import type { AttemptOutcome, DeliveryStatus } from "./retry.js";
import { sendAttempt } from "./sender.js";
import { PAYLOAD_SQL, type ClaimedDelivery } from "./store.js";

// The Temporal runner (TEMPORAL_ADDRESS set): one workflow per delivery, id `webhook-<delivery id>`
// (workflows/webhooks.ts), running the send activity under the schedule of retry.ts. Deliveries
// are still inserted by the triggers' transactions; the embedded scheduler only hands due rows over
// to Temporal (an outbox), so nothing is lost if Temporal is briefly unreachable.

export const WEBHOOK_WORKFLOW = "webhookDeliveryWorkflow";
export const RETRY_NOW_SIGNAL = "retryNow";
export const workflowIdFor = (deliveryId: string) => `webhook-${deliveryId}`;

export interface DeliveryWorkflowInput {
  deliveryId: string;
  baseMs: number;
  timeoutMs: number;
}

export interface AttemptSummary {
  /** The delivery or its webhook no longer exists. */
  gone: boolean;
  outcome: AttemptOutcome;
  attempts: number;
  limit: number;
}

export interface WebhookActivities {
  sendWebhookAttempt(deliveryId: string): Promise<AttemptSummary>;
  recordWebhookDecision(deliveryId: string, status: DeliveryStatus, plannedAt: string | null): Promise<void>;
}

interface Loaded {
  id: string;
  project_id: string;
  event_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
  attempt_limit: number;
  type: "http" | "discord";
  url: string;
  secret: string | null;
}

async function load(q: Queryable, id: string): Promise<Loaded | undefined> {
  const r = await q.query<Loaded>(
    `SELECT d.id, d.project_id, d.event_id, d.event_type, ${PAYLOAD_SQL} AS payload, d.created_at, d.attempt_limit, w.type, w.url, w.secret
     FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = $1`,
    [id],
  );
  return r.rows[0];
}

/** Activities, bound to the service's deps. Register them on the Temporal worker. */
export function createWebhookActivities(deps: Pick<Deps, "db" | "clock" | "config" | "telemetry">): WebhookActivities {
  const { db, clock, config } = deps;
  return {
    async sendWebhookAttempt(deliveryId) {
      const d = await load(db, deliveryId);
      if (!d) return { gone: true, outcome: { ok: false }, attempts: 0, limit: 0 };
      const env = envelope({ id: d.id, eventType: d.event_type, createdAt: d.created_at, projectId: d.project_id, payload: d.payload });
      const res = await sendAttempt({ type: d.type, url: d.url, secret: d.secret }, env, d.event_id, {
        timeoutMs: config.webhooks.timeoutMs,
        allowPrivate: config.webhooks.allowPrivate,
        now: clock(),
      });
      const r = await db.query<{ attempt_count: number; attempt_limit: number }>(
        // next_attempt_at = NULL: this attempt is what any pending dispatch (or manual retry) asked for.
        `UPDATE webhook_deliveries SET attempt_count = attempt_count + 1, attempts = attempts || jsonb_build_array($2::jsonb), next_attempt_at = NULL, updated_at = $3
         WHERE id = $1 RETURNING attempt_count, attempt_limit`,
        [deliveryId, JSON.stringify(res.record), clock()],
      );
      if (!r.rows[0]) return { gone: true, outcome: res.outcome, attempts: 0, limit: 0 };
      deps.telemetry.webhookDeliveries.inc({ outcome: res.outcome.ok ? "succeeded" : "failed" });
      return { gone: false, outcome: res.outcome, attempts: r.rows[0].attempt_count, limit: r.rows[0].attempt_limit };
    },
    async recordWebhookDecision(deliveryId, status, plannedAt) {
      if (status === "abandoned") deps.telemetry.webhookDeliveries.inc({ outcome: "abandoned" });
      await db.query("UPDATE webhook_deliveries SET status = $2, planned_at = $3, updated_at = $4 WHERE id = $1", [deliveryId, status, plannedAt, clock()]);
    },
  };
}

export interface TemporalDispatch {
  dispatch(rows: ClaimedDelivery[]): Promise<void>;
  close(): Promise<void>;
}

/** Starts (or, for a manual retry of a running one, signals) the workflow of each claimed delivery. */
export async function createTemporalDispatch(deps: Pick<Deps, "config" | "log">): Promise<TemporalDispatch> {
  const t = deps.config.temporal!;
  const client = await temporalClient(t);
  const input = (id: string): DeliveryWorkflowInput => ({ deliveryId: id, baseMs: deps.config.webhooks.backoffBaseMs, timeoutMs: deps.config.webhooks.timeoutMs });
  return {
    async dispatch(rows) {
      await Promise.all(
        rows.map(async (r) => {
          const opts = { workflowId: workflowIdFor(r.id), taskQueue: t.taskQueue, args: [input(r.id)] as [DeliveryWorkflowInput] };
          if (r.attempt_count === 0) {
            try {
              await client.workflow.start(WEBHOOK_WORKFLOW, opts);
            } catch (err) {
              if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
            }
          } else {
            await client.workflow.signalWithStart(WEBHOOK_WORKFLOW, { ...opts, signal: RETRY_NOW_SIGNAL, signalArgs: [] });
          }
        }),
      );
    },
    async close() {
      // The shared client is closed by the temporal feature (src/temporal/worker.ts).
    },
  };
}
