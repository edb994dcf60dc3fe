import type { PoolClient } from "pg";
import type { StoredEvent } from "../shared/hooks.js";
import type { Db, Queryable } from "../storage/db.js";
import type { Grain } from "./time.js";

// Rollups: event counts per (project, grain, UTC bucket, type) for grains minute/hour/day,
// maintained inside the ingest transaction (one statement per batch) and rebuildable from events.

export const GRAIN_CODE: Record<Grain, number> = { minute: 0, hour: 1, day: 2 };

const GRAINS_SQL = "(VALUES (0::smallint, 'minute'), (1::smallint, 'hour'), (2::smallint, 'day')) AS g(grain, unit)";

/** The eventsCommitting hook: one upsert for the whole batch, rows in key order (no deadlocks). */
export async function upsertRollups(client: PoolClient, events: StoredEvent[]): Promise<void> {
  if (events.length === 0) return;
  const p: string[] = new Array(events.length);
  const t: Date[] = new Array(events.length);
  const ty: string[] = new Array(events.length);
  events.forEach((e, i) => {
    p[i] = e.projectId;
    t[i] = e.timestamp;
    ty[i] = e.type;
  });
  await client.query(
    `INSERT INTO analytics_rollups (project_id, grain, bucket, type, count)
     SELECT x.p, g.grain, date_trunc(g.unit, x.t, 'UTC'), x.ty, count(*)
     FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS x(p, t, ty) CROSS JOIN ${GRAINS_SQL}
     GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
     ON CONFLICT (project_id, grain, bucket, type) DO UPDATE SET count = analytics_rollups.count + EXCLUDED.count`,
    [p, t, ty],
  );
}

/**
 * Rebuilds a project's rollups for [from, to) (whole days) from the stored events: the backfill for
 * data loaded outside the ingest path. Runs in one transaction per day so the table stays consistent.
 */
export async function rebuildRollups(db: Db, projectId: string, from: Date, to: Date): Promise<void> {
  const DAY = 86_400_000;
  for (let d = Math.floor(from.getTime() / DAY) * DAY; d < to.getTime(); d += DAY) {
    const c = await db.connect();
    try {
      await c.query("BEGIN");
      const a = new Date(d), b = new Date(d + DAY);
      await c.query("DELETE FROM analytics_rollups WHERE project_id = $1 AND bucket >= $2 AND bucket < $3", [projectId, a, b]);
      await c.query(
        `INSERT INTO analytics_rollups (project_id, grain, bucket, type, count)
         SELECT $1, g.grain, date_trunc(g.unit, e.ts, 'UTC'), e.type, count(*)
         FROM events e CROSS JOIN ${GRAINS_SQL}
         WHERE e.project_id = $1 AND e.ts >= $2 AND e.ts < $3
         GROUP BY 2, 3, 4`,
        [projectId, a, b],
      );
      await c.query("COMMIT");
    } catch (err) {
      await c.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }
}

/** Deletes nothing else: exported for tests that compare rollups with raw counts. */
export async function rollupTotal(db: Queryable, projectId: string, grain: Grain): Promise<number> {
  const r = await db.query<{ n: number }>("SELECT COALESCE(sum(count), 0)::float8 AS n FROM analytics_rollups WHERE project_id = $1 AND grain = $2", [projectId, GRAIN_CODE[grain]]);
  return r.rows[0].n;
}
