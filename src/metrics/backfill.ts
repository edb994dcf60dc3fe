import type { Queryable } from "../storage/db.js";
import { ORIGIN_MS } from "./model.js";

// Rebuilds a metric's derived state (rollups, running total, latest value) from its raw points:
// for bulk loads and for repair. Same levels, alignment and signed values as the ingest hook.

const origin = new Date(ORIGIN_MS).toISOString();

/** Rebuilds rollups and registry figures of the given metrics (all metrics when ids is undefined). */
export async function rebuildDerived(db: Queryable, ids?: string[]): Promise<void> {
  const where = ids ? "metric_id = ANY($1::bigint[])" : "true";
  const params = ids ? [ids] : [];
  await db.query(`DELETE FROM metric_rollups WHERE ${where}`, params);
  // Minutes from raw points, then hours from minutes, then days from hours.
  await db.query(
    `INSERT INTO metric_rollups (metric_id, level, bucket, op, n, sum, min, max)
     SELECT metric_id, 1, date_bin('1 minute', ts, '${origin}'), op, count(*), sum(v), min(v), max(v)
     FROM metric_points WHERE ${where} GROUP BY 1, 3, 4`,
    params,
  );
  for (const [level, width] of [
    [2, "1 hour"],
    [3, "1 day"],
  ] as const) {
    await db.query(
      `INSERT INTO metric_rollups (metric_id, level, bucket, op, n, sum, min, max)
       SELECT metric_id, ${level}, date_bin('${width}', bucket, '${origin}'), op, sum(n), sum(sum), min(min), max(max)
       FROM metric_rollups WHERE level = ${level - 1} AND ${where} GROUP BY 1, 3, 4`,
      params,
    );
  }
  await db.query(
    `UPDATE metrics m SET
       total = CASE WHEN m.type = 'counter' THEN COALESCE((SELECT sum(sum) FROM metric_rollups r WHERE r.metric_id = m.id AND r.level = 3), 0) ELSE 0 END,
       last_ts = (SELECT max(ts) FROM metric_points p WHERE p.metric_id = m.id),
       last_value = CASE WHEN m.type = 'measurement' THEN
         (SELECT v FROM metric_points p WHERE p.metric_id = m.id ORDER BY ts DESC, event_id DESC LIMIT 1) END
     WHERE ${ids ? "m.id = ANY($1::bigint[])" : "true"}`,
    params,
  );
}
