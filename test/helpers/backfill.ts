import { GRAIN_CODE } from "../../src/analytics/rollups.js";
import { DAY_MS } from "../../src/shared/time.js";
import { ORIGIN_MS } from "../../src/metrics/model.js";
import { backgroundTx, type Db, type Queryable } from "../../src/storage/db.js";

// Derived state rebuilt from stored raw data, for data loaded outside the ingest path: the benches
// (bench/_events-load.ts, bench/metrics.ts) bulk-load events and points with COPY, then build what
// ingest would have written. Not a repair tool of the service (a rebuild racing live ingest would
// count some deltas twice), so it lives here; test/metrics/derived.test.ts checks that
// rebuildDerived reproduces exactly what the metric ingest hook wrote.

/** The grains of analytics_rollups as a VALUES list: (code, date_trunc unit). */
const GRAINS_SQL = `(VALUES ${Object.entries(GRAIN_CODE)
  .map(([unit, code]) => `(${code}::smallint, '${unit}')`)
  .join(", ")}) AS g(grain, unit)`;

const origin = new Date(ORIGIN_MS).toISOString();

/**
 * Rebuilds metrics' rollups and registry figures (total, latest value) from their raw points, with the
 * ingest hook's levels, alignment and signed values (all metrics when ids is undefined).
 */
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

/**
 * Rebuilds a project's rollups for [from, to) (whole days) from the stored events: the backfill for
 * data loaded outside the ingest path. Runs in one transaction per day so the table stays consistent.
 */
export async function rebuildRollups(db: Db, projectId: string, from: Date, to: Date): Promise<void> {
  for (let d = Math.floor(from.getTime() / DAY_MS) * DAY_MS; d < to.getTime(); d += DAY_MS) {
    await backgroundTx(db, async (c) => {
      const a = new Date(d),
        b = new Date(d + DAY_MS);
      await c.query("DELETE FROM analytics_rollups WHERE project_id = $1 AND bucket >= $2 AND bucket < $3", [
        projectId,
        a,
        b,
      ]);
      await c.query(
        `INSERT INTO analytics_rollups (project_id, grain, bucket, type, count)
         SELECT $1, g.grain, date_trunc(g.unit, e.ts, 'UTC'), e.type, count(*)
         FROM events e CROSS JOIN ${GRAINS_SQL}
         WHERE e.project_id = $1 AND e.ts >= $2 AND e.ts < $3
         GROUP BY 2, 3, 4`,
        [projectId, a, b],
      );
    });
  }
}
