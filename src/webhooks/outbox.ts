import type { Queryable } from "../storage/db.js";
import { DUE_CHANNEL } from "./store.js";

// SQL of the delivery outbox (5002_webhook_outbox.sql). The ingest transaction writes one row per
// (batch, watching webhook); the expander turns rows into webhook_deliveries rows exactly once.

/** Payload of the NOTIFY on DUE_CHANNEL that wakes the expanders (an empty payload wakes the senders). */
export const OUTBOX_PAYLOAD = "outbox";

export interface OutboxRow {
  webhookId: string;
  projectId: string;
  eventIds: string[];
  eventTypes: string[];
  /** ISO 8601: the events' timestamps (part of their primary key). */
  eventTs: string[];
}

/**
 * Inside the ingest transaction: one INSERT for the whole batch (a row per watching webhook) and,
 * in the same statement, a NOTIFY that PostgreSQL delivers to every node only once it commits.
 */
export async function insertOutbox(q: Queryable, rows: OutboxRow[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  const params: unknown[] = [now, DUE_CHANNEL, OUTBOX_PAYLOAD];
  const values = rows.map((r) => {
    params.push(r.webhookId, r.projectId, r.eventIds, r.eventTypes, r.eventTs);
    const n = params.length;
    return `($${n - 4}, $${n - 3}, $${n - 2}::uuid[], $${n - 1}::text[], $${n}::timestamptz[], $1::timestamptz)`;
  });
  await q.query(
    `WITH ins AS (
       INSERT INTO webhook_outbox (webhook_id, project_id, event_ids, event_types, event_ts, created_at) VALUES ${values.join(", ")}
       RETURNING 1)
     SELECT pg_notify($2, $3) FROM (SELECT count(*) AS n FROM ins) c WHERE c.n > 0`,
    params,
  );
}

/**
 * Whether outbox rows are still waiting after a pass: rows whose webhook row was locked (an outcome's
 * failing-streak UPDATE, a PATCH) are skipped by expandOutbox's SKIP LOCKED, and nothing else wakes
 * the expander once that lock goes (the expander then looks again shortly instead of at its safety net).
 */
export async function outboxWaiting(q: Queryable): Promise<boolean> {
  return (await q.query<{ w: boolean }>("SELECT EXISTS (SELECT 1 FROM webhook_outbox) AS w")).rows[0].w;
}

export interface Expanded {
  /** Outbox rows expanded (and deleted). */
  rows: number;
  deliveries: number;
  /** Age of the oldest row expanded, in ms (0 when none). */
  oldestMs: number;
}

/**
 * Claims up to `max` outbox rows created at or before `createdBefore`, oldest first, inserts one delivery per event (one INSERT ... SELECT
 * FROM unnest) and deletes the rows: one statement, so all of it commits or none of it does, and
 * SKIP LOCKED keeps concurrent expanders on disjoint rows (each row is expanded exactly once).
 *
 * The webhook row is locked FOR SHARE (skipped while a PATCH or DELETE holds it): a delivery of a
 * disabled webhook is inserted paused (next_attempt_at NULL, paused_at set), exactly as if it had been inserted
 * before the webhook was disabled; a PATCH that disables it waits for this statement's commit, so
 * its pausing UPDATE sees these rows. A deleted webhook's rows go with it (ON DELETE CASCADE).
 *
 * Delivery ids are time-ordered (`whd_` + 12 hex digits of milliseconds + 12 random hex digits), so
 * primary-key inserts append to the index instead of landing on random pages. They are written once,
 * here, and never change (X-Vigil-Delivery-Id is stable across retries).
 */
export async function expandOutbox(
  q: Queryable,
  max: number,
  now: Date,
  attemptLimit: number,
  createdBefore: Date = now,
): Promise<Expanded> {
  const r = await q.query<{ rows: number; deliveries: number; oldest: Date | null }>(
    `WITH claimed AS (
       SELECT o.id, w.enabled FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
       WHERE o.created_at <= $5
       ORDER BY o.id LIMIT $1
       FOR UPDATE OF o SKIP LOCKED FOR SHARE OF w SKIP LOCKED),
     taken AS (
       DELETE FROM webhook_outbox o USING claimed c WHERE o.id = c.id
       RETURNING o.webhook_id, o.project_id, o.event_ids, o.event_types, o.event_ts, o.created_at, c.enabled),
     ins AS (
       INSERT INTO webhook_deliveries (id, webhook_id, project_id, event_id, event_type, event_ts, attempt_limit, next_attempt_at, planned_at, paused_at, created_at, updated_at)
       SELECT 'whd_' || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || substr(md5(random()::text), 1, 12),
              t.webhook_id, t.project_id, u.event_id::text, u.event_type, u.ts, $2,
              CASE WHEN t.enabled THEN t.created_at END, CASE WHEN NOT t.enabled THEN t.created_at END, CASE WHEN NOT t.enabled THEN $3::timestamptz END,
              t.created_at, $3
       FROM taken t, unnest(t.event_ids, t.event_types, t.event_ts) AS u(event_id, event_type, ts)
       RETURNING 1),
     counts AS (
       SELECT (SELECT count(*) FROM taken)::int AS rows, (SELECT count(*) FROM ins)::int AS deliveries, (SELECT min(created_at) FROM taken) AS oldest)
     SELECT c.rows, c.deliveries, c.oldest, CASE WHEN c.deliveries > 0 THEN pg_notify($4, '')::text END AS notified FROM counts c`,
    [max, attemptLimit, now, DUE_CHANNEL, createdBefore],
  );
  const row = r.rows[0];
  return {
    rows: row?.rows ?? 0,
    deliveries: row?.deliveries ?? 0,
    oldestMs: row?.oldest ? Math.max(0, now.getTime() - row.oldest.getTime()) : 0,
  };
}
