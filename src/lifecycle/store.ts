import type { Db, Queryable } from "../storage/db.js";
import { tx } from "../storage/db.js";
import { partitionName } from "../events/partitions.js";
import { isLockNotAvailable, isUndefinedTable } from "../shared/pg-errors.js";

// SQL of the retention pass (src/lifecycle/retention.ts). Every delete is bounded (`limit` rows per
// statement, one short transaction each) and conditioned only on "older than the cutoff", so running
// any step again after a crash is harmless.

/** Projects with their own retention_days (NULL: the default applies). */
export async function projectsRetention(q: Queryable): Promise<{ id: string; retention_days: number | null }[]> {
  const r = await q.query<{ id: string; retention_days: number | null }>(
    "SELECT id, retention_days FROM projects ORDER BY id",
  );
  return r.rows;
}

/** When the last pass completed (any node). */
export async function lastRunAt(q: Queryable): Promise<Date | undefined> {
  const r = await q.query<{ last_run_at: Date }>("SELECT last_run_at FROM retention_runs WHERE id = 1");
  return r.rows[0]?.last_run_at;
}

export async function recordRun(q: Queryable, at: Date): Promise<void> {
  await q.query(
    "INSERT INTO retention_runs (id, last_run_at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET last_run_at = EXCLUDED.last_run_at",
    [at],
  );
}

/** The weekly partitions of events (names only; the week is read from the name). */
export async function eventPartitions(q: Queryable): Promise<string[]> {
  const r = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'events'::regclass ORDER BY 1`,
  );
  return r.rows.map((x) => x.name);
}

/**
 * The distinct project ids with rows in one partition, by a skip scan of its primary key (one index
 * probe per project, not a scan of the partition).
 */
export async function projectsInPartition(q: Queryable, weekStartMs: number): Promise<string[]> {
  // The name is built from digits only (partitionName), so it is safe as an identifier.
  const t = partitionName(weekStartMs);
  const r = await q.query<{ p: string }>(
    `WITH RECURSIVE s(p) AS (
       (SELECT project_id FROM ${t} ORDER BY project_id LIMIT 1)
       UNION ALL
       SELECT (SELECT project_id FROM ${t} WHERE project_id > s.p ORDER BY project_id LIMIT 1) FROM s WHERE s.p IS NOT NULL
     ) SELECT p FROM s WHERE p IS NOT NULL`,
  );
  return r.rows.map((x) => x.p);
}

/**
 * Drops the partition of `weekStartMs` if `allow(projects)` still holds under an exclusive lock (no
 * ingest can add a row between the check and the drop). Waits at most `lockTimeoutMs` for the lock:
 * false (nothing dropped; the batched trim does the work instead) when ingest holds it longer.
 */
export async function dropPartitionIf(
  db: Db,
  weekStartMs: number,
  lockTimeoutMs: number,
  allow: (projects: string[]) => boolean,
): Promise<boolean> {
  const t = partitionName(weekStartMs);
  try {
    return await tx(db, async (c) => {
      await c.query(`SET LOCAL lock_timeout = ${Math.floor(lockTimeoutMs)}`);
      await c.query("SET LOCAL statement_timeout = 0");
      const exists = await c.query("SELECT 1 FROM pg_class WHERE relname = $1 AND relkind = 'r'", [t]);
      if (!exists.rowCount) return false;
      // The parent first, as ingest takes it (then the partition): no lock-order inversion.
      await c.query(`LOCK TABLE events, ${t} IN ACCESS EXCLUSIVE MODE`);
      if (!allow(await projectsInPartition(c, weekStartMs))) return false;
      await c.query(`DROP TABLE ${t}`);
      return true;
    });
  } catch (err) {
    if (isLockNotAvailable(err)) return false;
    throw err;
  }
}

/**
 * One bounded delete of a project's expired rows of `what`; returns the rows deleted (fewer than
 * `limit`: nothing is left). Rows are found through an index and deleted by ctid (a TID scan): a key
 * join (`(pk) IN (SELECT ... LIMIT n)`) may be planned as a hash join that reads the whole table.
 */
export async function trimBatch(q: Queryable, what: TableTrim, projectId: string, cutoff: Date, limit: number) {
  const r = await q.query(TRIMS[what], [projectId, cutoff, limit]);
  return r.rowCount ?? 0;
}

/**
 * The same for one weekly partition of events (ctids are only unique within one table). A partition
 * dropped meanwhile has nothing left: 0.
 */
export async function trimEventsBatch(
  q: Queryable,
  weekStartMs: number,
  projectId: string,
  cutoff: Date,
  limit: number,
) {
  const t = partitionName(weekStartMs); // digits only: safe as an identifier
  try {
    const r = await q.query(
      `DELETE FROM ${t} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${t} WHERE project_id = $1 AND ts < $2 LIMIT $3))`,
      [projectId, cutoff, limit],
    );
    return r.rowCount ?? 0;
  } catch (err) {
    if (isUndefinedTable(err)) return 0;
    throw err;
  }
}

/** Deletes at most `limit` raw heartbeats (any project) older than `before`; the count deleted. */
export async function trimRawHeartbeats(q: Queryable, before: Date, limit: number): Promise<number> {
  const r = await q.query(
    "DELETE FROM heartbeats WHERE ctid = ANY(ARRAY(SELECT ctid FROM heartbeats WHERE at < $1 LIMIT $2))",
    [before, limit],
  );
  return r.rowCount ?? 0;
}

/**
 * Deletes at most `limit` ended runs (any project) beyond the newest `keep` runs of their monitor;
 * the count deleted. A run still running is never deleted (it counts toward the newest, though, so
 * no ended run newer than it goes first). The inner scan reads only the list index (monitor_id,
 * created_at DESC, id DESC of 9004): a monitor within its cap costs one index-only range.
 */
export async function trimRunsOverCap(q: Queryable, keep: number, limit: number): Promise<number> {
  const r = await q.query(
    `DELETE FROM monitor_runs WHERE ctid = ANY(ARRAY(
        SELECT x.ctid FROM monitors m
          CROSS JOIN LATERAL (
            SELECT id FROM monitor_runs WHERE monitor_id = m.id ORDER BY created_at DESC, id DESC OFFSET $1) old
          JOIN monitor_runs x ON x.id = old.id
         WHERE x.outcome <> 'running' LIMIT $2))`,
    [keep, limit],
  );
  return r.rowCount ?? 0;
}

/** Each a delete of at most $3 rows of project $1 older than $2. */
const TRIMS = {
  metricPoints: `DELETE FROM metric_points WHERE ctid = ANY(ARRAY(
      SELECT p.ctid FROM metrics m CROSS JOIN LATERAL (
        SELECT ctid FROM metric_points WHERE metric_id = m.id AND ts < $2 LIMIT $3) p
      WHERE m.project_id = $1 LIMIT $3))`,
  heartbeats: `DELETE FROM heartbeats WHERE ctid = ANY(ARRAY(
      SELECT h.ctid FROM monitors m CROSS JOIN LATERAL (
        SELECT ctid FROM heartbeats WHERE monitor_id = m.id AND at < $2 LIMIT $3) h
      WHERE m.project_id = $1 LIMIT $3))`,
  // Ended runs of cron jobs by their first signal (a running one stays, whatever its age).
  runs: `DELETE FROM monitor_runs WHERE ctid = ANY(ARRAY(
      SELECT r.ctid FROM monitors m CROSS JOIN LATERAL (
        SELECT ctid FROM monitor_runs WHERE monitor_id = m.id AND created_at < $2 AND outcome <> 'running' LIMIT $3) r
      WHERE m.project_id = $1 LIMIT $3))`,
  // Event deliveries only (incident and test deliveries have no event_ts); index of 8003_retention.sql.
  webhookDeliveries: `DELETE FROM webhook_deliveries WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM webhook_deliveries WHERE project_id = $1 AND event_ts < $2 LIMIT $3))`,
  // Whole minute/hour/day buckets: the cutoff is a UTC day boundary.
  rollups: `DELETE FROM analytics_rollups WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM analytics_rollups WHERE project_id = $1 AND grain IN (0, 1, 2) AND bucket < $2 LIMIT $3))`,
  // Columns go by cascade.
  blocks: `DELETE FROM analytics_blocks WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM analytics_blocks WHERE project_id = $1 AND hour < $2 LIMIT $3))`,
  // Its key leads with user_id: the scan reads the project's rows (one pass per run, bounded batches).
  userHours: `DELETE FROM event_user_hours WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM event_user_hours WHERE project_id = $1 AND hour < $2 LIMIT $3))`,
} as const;

/** The trims of whole tables; `events` is trimmed partition by partition (trimEventsBatch). */
export type TableTrim = keyof typeof TRIMS;
export type TrimTarget = TableTrim | "events";

/**
 * In the order the pass runs them: event deliveries first (none is then sent with its event gone), raw
 * rows, then what is derived from them.
 */
export const TRIM_ORDER: readonly TrimTarget[] = [
  "webhookDeliveries",
  "events",
  "metricPoints",
  "heartbeats",
  "runs",
  "rollups",
  "blocks",
  "userHours",
];
