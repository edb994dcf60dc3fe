import type { Queryable } from "../storage/db.js";
import type { JobParamsByKind } from "./model.js";

// webhook.recover (POST .../webhooks/:id/recover; docs/webhooks.md): the SQL of one batch, here
// with the job (src/webhooks uses the jobs table, so jobs does not import webhooks: no folder cycle).

/** The webhooks' due channel (src/webhooks/store.ts DUE_CHANNEL): wakes every node's scheduler. */
const WEBHOOK_DUE_CHANNEL = "vigil_webhook_due";

/**
 * One batch of a recovery (POST .../recover, the job webhook.recover): up to `max` deliveries of the
 * webhook abandoned before `asOf` and created in [since, until) get one more attempt, due now (paused
 * instead while the webhook is disabled, like a PATCH's pause). Returns how many; NOTIFY on commit.
 */
export async function recoverBatch(
  q: Queryable,
  p: JobParamsByKind["webhook.recover"],
  asOf: Date,
  max: number,
  now: Date,
): Promise<number> {
  const r = await q.query<{ n: number }>(
    `WITH pick AS (
       SELECT id FROM webhook_deliveries
       WHERE webhook_id = $1 AND status = 'abandoned' AND created_at >= $2 AND created_at < $3 AND updated_at <= $4
       ORDER BY created_at, id LIMIT $5 FOR UPDATE SKIP LOCKED),
     upd AS (
       UPDATE webhook_deliveries d SET status = 'retrying', attempt_limit = d.attempt_count + 1, claim_token = NULL,
              next_attempt_at = CASE WHEN w.enabled THEN $6::timestamptz END,
              planned_at = CASE WHEN w.enabled THEN NULL ELSE $6::timestamptz END,
              paused_at = CASE WHEN w.enabled THEN NULL ELSE $6::timestamptz END, updated_at = $6
       FROM pick, webhooks w WHERE d.id = pick.id AND w.id = d.webhook_id RETURNING 1)
     SELECT c.n FROM (SELECT count(*)::int AS n FROM upd) c, LATERAL (SELECT pg_notify($7, '') WHERE c.n > 0) z`,
    [p.webhookId, p.since, p.until, asOf, max, now, WEBHOOK_DUE_CHANNEL],
  );
  return r.rows[0]?.n ?? 0;
}
