import type pg from "pg";
import { isUndefinedTable } from "../shared/pg-errors.js";

// SQL of the purge sweeper (purge.ts): which projects wait to be purged, which tables hold a
// project's rows, and one bounded batch of deletion at a time (each statement its own short
// transaction, so a kill -9 loses at most the batch in flight and a restart simply goes on).

/** A pool, a pooled client or a plain client: anything that runs a statement. */
export type Queryable = Pick<pg.ClientBase, "query">;

export interface DeletedProjectRow {
  id: string;
  deleted_at: Date;
  swept_from: Date | null;
}

/** A table with a `project_id` column (a partitioned table counts once, for all its partitions). */
export interface OwnedTable {
  name: string;
  /**
   * The tables that hold its rows, as quoted SQL names: itself, or its partitions (at any depth) when
   * it is partitioned.
   */
  leaves: string[];
}

/** Projects deleted and not yet purged, oldest first. */
export async function deletedProjects(q: Queryable): Promise<DeletedProjectRow[]> {
  const r = await q.query<DeletedProjectRow>(
    "SELECT id, deleted_at, swept_from FROM deleted_projects ORDER BY deleted_at, id",
  );
  return r.rows;
}

/** Marks when the sweeper first saw the project (after the delete committed); returns that time. */
export async function markSwept(q: Queryable, id: string): Promise<Date> {
  const r = await q.query<{ swept_from: Date }>(
    "UPDATE deleted_projects SET swept_from = COALESCE(swept_from, now()) WHERE id = $1 RETURNING swept_from",
    [id],
  );
  return r.rows[0]?.swept_from ?? new Date(0);
}

/** The purge is done: the project's last trace. */
export async function forgetDeletedProject(q: Queryable, id: string): Promise<void> {
  await q.query("DELETE FROM deleted_projects WHERE id = $1", [id]);
}

/**
 * Every table of the schema with a `project_id` column, found in the catalog so that a table added
 * later (by any feature) is purged without a change here. Partitions are reached through their parent.
 * Left out: the tables whose rows went with the project row already, by a chain of ON DELETE CASCADE
 * foreign keys on NOT NULL columns up to `projects` (api_keys, monitors, incidents, webhooks,
 * webhook_deliveries, pages, ...): looking for rows there would only scan tables that may lack a
 * project_id index.
 */
export async function ownedTables(q: Queryable): Promise<OwnedTable[]> {
  const r = await q.query<{ name: string; leaves: string[] }>(
    `WITH RECURSIVE cascaded AS (
       SELECT 'projects'::regclass::oid AS oid
       UNION
       SELECT f.conrelid FROM pg_constraint f JOIN cascaded ON f.confrelid = cascaded.oid
        WHERE f.contype = 'f' AND f.confdeltype = 'c'
          AND NOT EXISTS (
            SELECT 1 FROM unnest(f.conkey) AS k(attnum)
              JOIN pg_attribute fa ON fa.attrelid = f.conrelid AND fa.attnum = k.attnum
             WHERE NOT fa.attnotnull)
     )
     SELECT c.relname AS name,
            CASE WHEN c.relkind = 'p' THEN
              ARRAY(SELECT format('%I.%I', ln.nspname, lc.relname)
                      FROM pg_partition_tree(c.oid) l
                      JOIN pg_class lc ON lc.oid = l.relid
                      JOIN pg_namespace ln ON ln.oid = lc.relnamespace
                     WHERE l.isleaf ORDER BY 1)
            ELSE ARRAY[format('%I.%I', n.nspname, c.relname)] END AS leaves
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'project_id' AND NOT a.attisdropped
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND c.oid NOT IN (SELECT oid FROM cascaded)
      ORDER BY c.relname`,
  );
  return r.rows;
}

/**
 * Deletes at most `limit` rows of the project from one leaf table (a plain table or a partition);
 * returns how many. The rows are found through the table's project_id index and deleted by ctid (a
 * TID scan): a key join (`(pk) IN (SELECT ...)`) was planned as a hash join over every partition of
 * `events`, all tenants' rows read for each batch. A partition dropped meanwhile (retention) has
 * nothing left to delete.
 */
export async function deleteBatch(q: Queryable, leaf: string, projectId: string, limit: number): Promise<number> {
  const t = leaf; // quoted by ownedTables (format %I)
  try {
    const r = await q.query(
      `DELETE FROM ${t} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${t} WHERE project_id = $1 LIMIT $2))`,
      [projectId, limit],
    );
    return r.rowCount ?? 0;
  } catch (err) {
    if (isUndefinedTable(err)) return 0;
    throw err;
  }
}

/** The metric tables keyed by metric, not project: reached through the project's metrics. */
const METRIC_CHILDREN = ["metric_points", "metric_rollups"];

/** Deletes at most `limit` points or rollups of the project's metrics (before the metrics rows go). */
export async function deleteMetricChildrenBatch(q: Queryable, projectId: string, limit: number): Promise<number> {
  let deleted = 0;
  for (const name of METRIC_CHILDREN) {
    const r = await q.query(
      `DELETE FROM ${name} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${name} WHERE metric_id IN (SELECT id FROM metrics WHERE project_id = $1) LIMIT $2))`,
      [projectId, limit],
    );
    deleted += r.rowCount ?? 0;
    if (deleted >= limit) break;
  }
  return deleted;
}

/**
 * True when no other client transaction of this database began before `since`: every write that may
 * have started before the sweep (its credentials checked before the delete) has ended.
 */
export async function writersBeforeEnded(q: Queryable, since: Date): Promise<boolean> {
  const r = await q.query(
    `SELECT 1 FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
        AND xact_start IS NOT NULL AND xact_start < $1
      LIMIT 1`,
    [since],
  );
  return r.rowCount === 0;
}

/** The database's clock (the one transactions' start times are read against). */
export async function dbNow(q: Queryable): Promise<Date> {
  const r = await q.query<{ now: Date }>("SELECT clock_timestamp() AS now");
  return r.rows[0].now;
}
