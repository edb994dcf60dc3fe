import { holdProjectCap, type ProjectCap } from "../shared/project-cap.js";
import { tx, type Db, type Queryable } from "../storage/db.js";
import type { AttemptRecord, TargetRow } from "./sender.js";
import type { DeliveryStatus } from "./retry.js";
import type { WebhookType } from "./targets/index.js";
import { eventJsonSql } from "../events/record.js";

// SQL of the webhooks feature. Always parameterized; rows are mapped to messages in messages.ts.

// Also written in src/jobs/webhook-recover.ts (a recovery wakes the schedulers).
export const DUE_CHANNEL = "vigil_webhook_due";
export const CHANGED_CHANNEL = "vigil_webhooks_changed";

export interface WebhookRow {
  id: string;
  project_id: string;
  name: string;
  type: WebhookType;
  /** Null for `email` and `pagerduty` (their destination is `to` / `routing_key`). */
  url: string | null;
  to: string[] | null;
  routing_key: string | null;
  events: string[];
  secret: string | null;
  /** The replaced secret, still signing until previous_secret_until (a rotation's overlap). */
  previous_secret: string | null;
  previous_secret_until: Date | null;
  enabled: boolean;
  /** At most this many sends per second (rate.ts); null: no limit. */
  max_per_second: number | null;
  /** "failing": disabled by failing.ts; null otherwise. */
  disabled_reason: "failing" | null;
  /** The first failed attempt since the last success (failing.ts); null while it succeeds. */
  failing_since: Date | null;
  /** When it was last disabled (failing.ts or a PATCH); null while enabled. */
  disabled_at: Date | null;
  /** `filters` as accepted (the analytics filter model); null when it has none. */
  filters: unknown;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  project_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: AttemptRecord[];
  attempt_count: number;
  attempt_limit: number;
  next_attempt_at: Date | null;
  claim_token: string | null;
  created_at: Date;
}

export interface NewDelivery {
  id: string;
  webhook_id: string;
  project_id: string;
  event_id: string;
  event_type: string;
  /** Incident and test deliveries carry their data; event deliveries reference the event by event_ts. */
  payload?: Record<string, unknown> | null;
  event_ts?: string | null;
  dedupe_key?: string | null;
}

/**
 * The delivery's data: its own payload (incidents, tests) or the referenced event as the API shows
 * it (Resources: Event; the JSON of the event record, events/record.ts), read by primary key at send time.
 */
export const PAYLOAD_SQL = `coalesce(d.payload, (
  SELECT ${eventJsonSql("e")}
  FROM events e WHERE e.project_id = d.project_id AND e.ts = d.event_ts AND e.id::text = d.event_id), '{}'::jsonb)`;

/** A delivery's webhook as the sender needs it (sender.ts `rowTarget`), from `webhooks w`. */
export const TARGET_COLS = `w.type, w.url, w."to", w.routing_key, w.secret, w.previous_secret, w.previous_secret_until`;

const DELIVERY_COLS =
  "id, webhook_id, project_id, event_id, event_type, status, attempts, attempt_count, attempt_limit, coalesce(next_attempt_at, planned_at) AS next_attempt_at, claim_token, created_at";

export async function getWebhook(q: Queryable, projectId: string, id: string): Promise<WebhookRow | undefined> {
  return (await q.query<WebhookRow>("SELECT * FROM webhooks WHERE project_id = $1 AND id = $2", [projectId, id]))
    .rows[0];
}

export async function listWebhooks(q: Queryable, projectId: string): Promise<WebhookRow[]> {
  return (
    await q.query<WebhookRow>("SELECT * FROM webhooks WHERE project_id = $1 ORDER BY created_at, id", [projectId])
  ).rows;
}

/** Webhooks per project, enabled or not (decisions.md: MAX_WEBHOOKS_PER_PROJECT, 409 beyond). */
const webhookCap = (max: number): ProjectCap => ({
  what: "webhooks",
  max,
  countSql: "SELECT count(*)::int AS n FROM webhooks WHERE project_id = $1",
  field: "url",
});

/** Creates the webhook under the project's webhook cap (409 when full). */
export function insertWebhook(
  db: Db,
  maxWebhooks: number,
  w: Pick<
    WebhookRow,
    | "id"
    | "name"
    | "type"
    | "url"
    | "to"
    | "routing_key"
    | "events"
    | "secret"
    | "enabled"
    | "filters"
    | "max_per_second"
  > & {
    projectId: string;
    now: Date;
  },
): Promise<WebhookRow> {
  return tx(db, async (c) => {
    await holdProjectCap(c, w.projectId, webhookCap(maxWebhooks));
    const r = await c.query<WebhookRow>(
      `INSERT INTO webhooks (id, project_id, name, type, url, "to", routing_key, events, secret, enabled, created_at, updated_at, filters, disabled_at, max_per_second)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12::jsonb, CASE WHEN NOT $10 THEN $11::timestamptz END, $13) RETURNING *`,
      [
        w.id,
        w.projectId,
        w.name,
        w.type,
        w.url,
        w.to,
        w.routing_key,
        w.events,
        w.secret,
        w.enabled,
        w.now,
        w.filters === null ? null : JSON.stringify(w.filters),
        w.max_per_second,
      ],
    );
    return r.rows[0];
  });
}

/**
 * Sets the given fields (undefined keeps one; `filters` null removes them); undefined when no such
 * webhook in the project. Enabling clears the disable's reason, time and failing streak; disabling
 * an enabled one records when.
 */
export async function updateWebhook(
  q: Queryable,
  projectId: string,
  id: string,
  p: {
    name?: string;
    url?: string;
    to?: string[];
    routingKey?: string;
    events?: string[];
    enabled?: boolean;
    filters?: unknown;
    /** A new limit; 0 removes it. */
    maxPerSecond?: number;
    secret: string | null;
  },
  now: Date,
): Promise<WebhookRow | undefined> {
  const r = await q.query<WebhookRow>(
    `UPDATE webhooks SET name = coalesce($3, name), url = coalesce($4, url), events = coalesce($5, events), enabled = coalesce($6, enabled),
            secret = coalesce($7, secret), updated_at = $8,
            previous_secret = CASE WHEN $7::text IS NULL THEN previous_secret END,
            disabled_reason = CASE WHEN $6::boolean THEN NULL ELSE disabled_reason END,
            failing_since = CASE WHEN $6::boolean THEN NULL ELSE failing_since END,
            disabled_at = CASE WHEN $6::boolean THEN NULL WHEN NOT $6::boolean AND enabled THEN $8 ELSE disabled_at END,
            filters = CASE WHEN $11::boolean THEN $12::jsonb ELSE filters END,
            previous_secret_until = CASE WHEN $7::text IS NULL THEN previous_secret_until END, "to" = coalesce($9, "to"), routing_key = coalesce($10, routing_key),
            max_per_second = CASE WHEN $13::int IS NULL THEN max_per_second WHEN $13 = 0 THEN NULL ELSE $13 END
     WHERE project_id = $1 AND id = $2 RETURNING *`,
    [
      projectId,
      id,
      p.name ?? null,
      p.url ?? null,
      p.events ?? null,
      p.enabled ?? null,
      p.secret,
      now,
      p.to ?? null,
      p.routingKey ?? null,
      p.filters !== undefined,
      p.filters === undefined || p.filters === null ? null : JSON.stringify(p.filters),
      p.maxPerSecond ?? null,
    ],
  );
  return r.rows[0];
}

/**
 * A new secret; the current one keeps signing until `until` (none when `until` is not after `now`).
 * Undefined when no such webhook in the project.
 */
export async function rotateSecret(
  q: Queryable,
  projectId: string,
  id: string,
  secret: string,
  until: Date,
  now: Date,
): Promise<WebhookRow | undefined> {
  const r = await q.query<WebhookRow>(
    `UPDATE webhooks SET previous_secret = CASE WHEN $4::timestamptz > $5::timestamptz THEN secret END,
            previous_secret_until = CASE WHEN $4::timestamptz > $5::timestamptz THEN $4::timestamptz END,
            secret = $3, updated_at = $5
     WHERE project_id = $1 AND id = $2 RETURNING *`,
    [projectId, id, secret, until, now],
  );
  return r.rows[0];
}

/** False when there was no such webhook in the project. Its deliveries go with it (cascade). */
export async function deleteWebhook(q: Queryable, projectId: string, id: string): Promise<boolean> {
  return !!(await q.query("DELETE FROM webhooks WHERE project_id = $1 AND id = $2", [projectId, id])).rowCount;
}

/** A webhook just disabled by noteOutcomes; `destination`: its url, its addresses, or its type (never a key). */
export interface DisabledWebhook {
  id: string;
  project_id: string;
  name: string;
  destination: string;
}

/**
 * Moves the failing streaks of the webhooks of these outcomes (only rows whose state changes are
 * written) and disables, with the reason "failing", an enabled one that failed again while its
 * streak began at or before `failingSince` (failing.ts). Answers the webhooks it disabled.
 */
export async function noteOutcomes(
  q: Queryable,
  outcomes: { webhookId: string; ok: boolean }[],
  now: Date,
  failingSince: Date,
): Promise<DisabledWebhook[]> {
  const r = await q.query<DisabledWebhook & { disabled: boolean }>(
    `WITH o AS (
       SELECT x.webhook_id, bool_or(x.ok) AS ok FROM jsonb_to_recordset($1::jsonb) AS x(webhook_id text, ok boolean) GROUP BY 1),
     upd AS (
       UPDATE webhooks w SET
         failing_since = CASE WHEN o.ok THEN NULL ELSE coalesce(w.failing_since, $2) END,
         enabled = w.enabled AND (o.ok OR w.failing_since IS NULL OR w.failing_since > $3),
         disabled_reason = CASE WHEN NOT o.ok AND w.enabled AND w.failing_since <= $3 THEN 'failing' ELSE w.disabled_reason END,
         updated_at = CASE WHEN NOT o.ok AND w.enabled AND w.failing_since <= $3 THEN $2 ELSE w.updated_at END,
         disabled_at = CASE WHEN NOT o.ok AND w.enabled AND w.failing_since <= $3 THEN $2 ELSE w.disabled_at END
       FROM o JOIN webhooks before ON before.id = o.webhook_id
       WHERE w.id = o.webhook_id AND CASE WHEN o.ok THEN w.failing_since IS NOT NULL
                                          ELSE w.failing_since IS NULL OR (w.enabled AND w.failing_since <= $3) END
       RETURNING w.id, w.project_id, w.name, coalesce(w.url, array_to_string(w."to", ', '), w.type) AS destination,
                 (before.enabled AND NOT w.enabled) AS disabled)
     SELECT id, project_id, name, destination FROM upd WHERE disabled`,
    [JSON.stringify(outcomes.map((o) => ({ webhook_id: o.webhookId, ok: o.ok }))), now, failingSince],
  );
  return r.rows;
}

/** The email addresses of a project's owners (mail about its webhooks). */
export async function ownerEmails(q: Queryable, projectId: string): Promise<string[]> {
  const r = await q.query<{ email: string }>(
    `SELECT a.email FROM project_members m JOIN accounts a ON a.id = m.account_id
     WHERE m.project_id = $1 AND m.role = 'owner' ORDER BY a.email LIMIT 10`,
    [projectId],
  );
  return r.rows.map((x) => x.email);
}

/** Tells every node (this one included) that a project's subscriptions changed. */
export async function notifyChanged(q: Queryable, projectId: string): Promise<void> {
  await q.query("SELECT pg_notify($1, $2)", [CHANGED_CHANNEL, projectId]);
}

/**
 * Inserts deliveries (incidents, tests) in one statement and, in the same statement,
 * a NOTIFY that PostgreSQL delivers to every scheduler only once the transaction commits.
 */
export async function insertDeliveries(
  q: Queryable,
  rows: NewDelivery[],
  now: Date,
  attemptLimit: number,
): Promise<number> {
  if (rows.length === 0) return 0;
  const r = await q.query<{ n: number }>(
    `WITH ins AS (
       INSERT INTO webhook_deliveries (id, webhook_id, project_id, event_id, event_type, payload, event_ts, dedupe_key, attempt_limit, next_attempt_at, created_at, updated_at)
       SELECT x.id, x.webhook_id, x.project_id, x.event_id, x.event_type, x.payload, x.event_ts, x.dedupe_key, $2, $3, $3, $3
       FROM jsonb_to_recordset($1::jsonb) AS x(id text, webhook_id text, project_id text, event_id text, event_type text, payload jsonb, event_ts timestamptz, dedupe_key text)
       ON CONFLICT (webhook_id, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
       RETURNING 1)
     SELECT c.n FROM (SELECT count(*)::int AS n FROM ins) c, LATERAL (SELECT pg_notify($4, '') WHERE c.n > 0) z`,
    [JSON.stringify(rows), attemptLimit, now, DUE_CHANNEL],
  );
  return r.rows[0]?.n ?? 0;
}

/** One delivery per enabled webhook of the project watching `eventType`, at most once per dedupe key. */
export async function insertNoticeDeliveries(
  q: Queryable,
  n: { projectId: string; eventType: string; eventId: string; dedupeKey: string; payload: Record<string, unknown> },
  ids: () => string,
  now: Date,
  attemptLimit: number,
): Promise<number> {
  const hooks = await q.query<{ id: string }>(
    "SELECT id FROM webhooks WHERE project_id = $1 AND enabled AND $2 = ANY(events)",
    [n.projectId, n.eventType],
  );
  const rows = hooks.rows.map((w) => ({
    id: ids(),
    webhook_id: w.id,
    project_id: n.projectId,
    event_id: n.eventId,
    event_type: n.eventType,
    payload: n.payload,
    dedupe_key: n.dedupeKey,
  }));
  return insertDeliveries(q, rows, now, attemptLimit);
}

export async function listDeliveries(
  q: Queryable,
  webhookId: string,
  opts: { limit: number; status?: string; after?: { createdAt: Date; id: string } },
): Promise<DeliveryRow[]> {
  const params: unknown[] = [webhookId, opts.limit + 1];
  let where = "webhook_id = $1";
  if (opts.status) {
    params.push(opts.status);
    where += ` AND status = $${params.length}`;
  }
  if (opts.after) {
    params.push(opts.after.createdAt, opts.after.id);
    where += ` AND (created_at, id) < ($${params.length - 1}, $${params.length})`;
  }
  return (
    await q.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLS} FROM webhook_deliveries WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $2`,
      params,
    )
  ).rows;
}

export async function getDelivery(q: Queryable, webhookId: string, id: string): Promise<DeliveryRow | undefined> {
  return (
    await q.query<DeliveryRow>(`SELECT ${DELIVERY_COLS} FROM webhook_deliveries WHERE webhook_id = $1 AND id = $2`, [
      webhookId,
      id,
    ])
  ).rows[0];
}

/**
 * A manual retry: one more attempt now (the attempt limit grows by one when it is spent).
 * Refused (undefined) while an attempt is in flight: claimed, lease not yet expired.
 */
export async function scheduleRetryNow(
  q: Queryable,
  webhookId: string,
  id: string,
  now: Date,
): Promise<DeliveryRow | undefined> {
  const r = await q.query<DeliveryRow>(
    `WITH upd AS (
       UPDATE webhook_deliveries SET next_attempt_at = $3, planned_at = NULL, paused_at = NULL, claim_token = NULL, attempt_limit = greatest(attempt_limit, attempt_count + 1), updated_at = $3
       WHERE webhook_id = $1 AND id = $2 AND (claim_token IS NULL OR next_attempt_at <= $3)
       RETURNING ${DELIVERY_COLS.replace("coalesce(next_attempt_at, planned_at)", "next_attempt_at")})
     SELECT upd.*, pg_notify($4, '') FROM upd`,
    [webhookId, id, now, DUE_CHANNEL],
  );
  return r.rows[0];
}

/**
 * Disabling pauses a webhook's unfinished deliveries that wait for their next attempt, keeping that
 * time (planned_at); one in flight finishes. Enabling resumes every paused one at its planned time
 * (at once if that has passed), so re-enabling sends no burst of retries ahead of their backoff.
 * In Temporal mode a handed-over delivery (next_attempt_at NULL) is paused by its workflow instead,
 * when it wakes for the attempt (webhooks/temporal.ts); enabling resumes those the same way, and a
 * workflow still asleep keeps its own timer.
 */
export async function setDeliveriesPaused(q: Queryable, webhookId: string, paused: boolean, now: Date): Promise<void> {
  if (paused) {
    await q.query(
      `UPDATE webhook_deliveries SET planned_at = next_attempt_at, next_attempt_at = NULL, claim_token = NULL, paused_at = $2, updated_at = $2
       WHERE webhook_id = $1 AND status IN ('pending', 'retrying') AND next_attempt_at IS NOT NULL AND (claim_token IS NULL OR next_attempt_at <= $2)`,
      [webhookId, now],
    );
  } else {
    await q.query(
      `WITH upd AS (
         UPDATE webhook_deliveries SET next_attempt_at = greatest(coalesce(planned_at, $2), $2), planned_at = NULL, paused_at = NULL, updated_at = $2
         WHERE webhook_id = $1 AND status IN ('pending', 'retrying') AND paused_at IS NOT NULL RETURNING 1)
       SELECT pg_notify($3, '') FROM upd LIMIT 1`,
      [webhookId, now, DUE_CHANNEL],
    );
  }
}

/** The unfinished recovery job of a webhook, if any (a second request answers it). */
export async function openRecovery(q: Queryable, projectId: string, webhookId: string): Promise<string | undefined> {
  const r = await q.query<{ id: string }>(
    `SELECT id FROM jobs WHERE project_id = $1 AND kind = 'webhook.recover' AND status IN ('pending', 'running')
       AND params->>'webhookId' = $2 ORDER BY created_at LIMIT 1`,
    [projectId, webhookId],
  );
  return r.rows[0]?.id;
}

export interface ClaimedDelivery extends TargetRow {
  id: string;
  webhook_id: string;
  project_id: string;
  event_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
  attempt_count: number;
  attempt_limit: number;
  due_at: Date;
  claim_token: string;
  /** The webhook's maxPerSecond (rate.ts); null: no limit. */
  max_per_second: number | null;
}

/**
 * Claims up to `max` due deliveries: moves next_attempt_at to the lease's end and sets the claim
 * token. SKIP LOCKED keeps concurrent workers on disjoint rows; an expired lease falls due again.
 */
export async function claimDue(
  q: Queryable,
  now: Date,
  leaseUntil: Date,
  token: string,
  max: number,
): Promise<ClaimedDelivery[]> {
  const r = await q.query<ClaimedDelivery>(
    `WITH due AS (
       SELECT id, next_attempt_at AS due_at FROM webhook_deliveries
       WHERE next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
     UPDATE webhook_deliveries d SET next_attempt_at = $3, claim_token = $4
     FROM due JOIN webhooks w ON true
     WHERE d.id = due.id AND w.id = d.webhook_id
     RETURNING d.id, d.webhook_id, d.project_id, d.event_id, d.event_type, ${PAYLOAD_SQL} AS payload, d.created_at, d.attempt_count, d.attempt_limit,
               d.claim_token, due.due_at, w.max_per_second, ${TARGET_COLS}`,
    [now, max, leaseUntil, token],
  );
  return r.rows;
}

export interface Finished {
  id: string;
  /** The delivery's webhook (its failing streak, failing.ts). */
  webhookId: string;
  token: string;
  status: DeliveryStatus;
  attempt: AttemptRecord;
  nextAt: Date | null;
  now: Date;
  /**
   * Temporal mode: a retry is handed to a workflow whose timer waits until nextAt, so the row is
   * left "handed over" (next_attempt_at NULL, planned_at = nextAt) instead of due at nextAt.
   */
  handOver?: boolean;
}

/** A recorded outcome whose retry goes to a Temporal workflow (finishMany with `handOver`). */
export interface HandedRetry {
  id: string;
  webhook_id: string;
  project_id: string;
  event_id: string;
  event_type: string;
  attempt_count: number;
  planned_at: Date;
  /** The decided wait (ms) from the attempt's end to the retry. */
  delay_ms: number;
}

/**
 * Records outcomes (one statement for many), only where the claim is still ours. Answers the
 * recorded retries left handed over (their webhook still enabled), for the runner to start their workflows.
 */
export async function finishMany(q: Queryable, rows: Finished[]): Promise<HandedRetry[]> {
  if (rows.length === 0) return [];
  const r = await q.query<HandedRetry & { handed: boolean }>(
    // A webhook disabled while the attempt ran: its next attempt waits, paused, for the enable.
    `UPDATE webhook_deliveries d SET status = u.status, attempt_count = d.attempt_count + 1, attempts = d.attempts || jsonb_build_array(u.attempt),
            next_attempt_at = CASE WHEN w.enabled AND NOT u.hand_over THEN u.next_at END,
            planned_at = CASE WHEN w.enabled AND NOT u.hand_over THEN d.planned_at ELSE u.next_at END,
            paused_at = CASE WHEN w.enabled OR u.next_at IS NULL THEN NULL ELSE u.now END,
            claim_token = NULL, updated_at = u.now
     FROM jsonb_to_recordset($1::jsonb) AS u(id text, token text, status text, attempt jsonb, next_at timestamptz, now timestamptz, hand_over boolean), webhooks w
     WHERE d.id = u.id AND d.claim_token = u.token AND w.id = d.webhook_id
     RETURNING (w.enabled AND u.hand_over AND u.next_at IS NOT NULL) AS handed, d.id, d.webhook_id, d.project_id, d.event_id, d.event_type,
               d.attempt_count, d.planned_at, round(extract(epoch FROM u.next_at - u.now) * 1000)::int AS delay_ms`,
    [
      JSON.stringify(
        rows.map((f) => ({
          id: f.id,
          token: f.token,
          status: f.status,
          attempt: f.attempt,
          next_at: f.nextAt,
          now: f.now,
          hand_over: f.handOver ?? false,
        })),
      ),
    ],
  );
  return r.rows.filter((x) => x.handed).map(({ handed: _, ...x }) => x);
}

/** Makes handed-over retries due at their planned time again (their workflows could not be started). */
export async function undoHandOver(q: Queryable, ids: string[], now: Date): Promise<void> {
  if (ids.length)
    await q.query(
      `UPDATE webhook_deliveries SET next_attempt_at = planned_at, updated_at = $2
       WHERE id = ANY($1) AND next_attempt_at IS NULL AND claim_token IS NULL AND paused_at IS NULL AND status = 'retrying'`,
      [ids, now],
    );
}

/** Releases claims without an attempt, due again at `at` (over their webhook's maxPerSecond: rate.ts). */
export async function postpone(q: Queryable, ids: string[], token: string, at: Date): Promise<void> {
  if (ids.length)
    await q.query(
      "UPDATE webhook_deliveries SET next_attempt_at = $3, claim_token = NULL WHERE id = ANY($1) AND claim_token = $2",
      [ids, token, at],
    );
}

/** Releases a claim without an attempt (Temporal took the delivery over; updated_at: when). */
export async function handOver(q: Queryable, ids: string[], token: string, now: Date): Promise<void> {
  if (ids.length)
    await q.query(
      "UPDATE webhook_deliveries SET next_attempt_at = NULL, claim_token = NULL, updated_at = $3 WHERE id = ANY($1) AND claim_token = $2",
      [ids, token, now],
    );
}

export async function nextDueAt(q: Queryable): Promise<Date | null> {
  return (
    (
      await q.query<{ at: Date | null }>(
        "SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL",
      )
    ).rows[0]?.at ?? null
  );
}
