import type { PoolClient } from "pg";
import type { Projection, StoredEvent } from "../events/pipeline.js";
import type { Grain } from "./time.js";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../shared/time.js";

// Rollups: event counts per (project, grain, UTC bucket, type) for grains minute/hour/day,
// maintained from stored events by the derived-records projector (the benches, which load events
// with COPY, rebuild them from events: test/helpers/backfill.ts).

export const GRAIN_CODE: Record<Grain, number> = { minute: 0, hour: 1, day: 2 };

/** A rollup delta as stored in `ingest_deltas`: [grain, bucket ms, type, count]. */
type RollupDelta = [number, number, string, number][];

type RollupAcc = Map<string, [number, number, string, number]>;

function addCount(acc: RollupAcc, grain: number, bucket: number, type: string, count: number): void {
  const k = `${grain}|${bucket}|${type}`;
  const a = acc.get(k);
  if (a) a[3] += count;
  else acc.set(k, [grain, bucket, type, count]);
}

/** Counts of one project's events per (grain, UTC bucket, type). Pure. */
export function rollupDelta(events: StoredEvent[]): RollupDelta | null {
  if (events.length === 0) return null;
  // Minutes first (one key per event), then hours and days from the minute counts.
  const minutes: RollupAcc = new Map();
  for (const e of events) addCount(minutes, 0, Math.floor(e.timestamp.getTime() / MINUTE_MS) * MINUTE_MS, e.type, 1);
  const acc: RollupAcc = new Map(minutes);
  for (const [, bucket, type, count] of minutes.values()) {
    addCount(acc, 1, Math.floor(bucket / HOUR_MS) * HOUR_MS, type, count);
    addCount(acc, 2, Math.floor(bucket / DAY_MS) * DAY_MS, type, count);
  }
  return [...acc.values()];
}

/**
 * Rollups as a derived projection (events/projector.ts): deltas of many ingest groups merged into one
 * upsert, rows in key order (no deadlocks between projectors).
 */
export const rollupProjection: Projection<RollupDelta> = {
  name: "rollups",
  delta: rollupDelta,
  async apply(client: PoolClient, projectId: string, deltas: RollupDelta[]) {
    const acc: RollupAcc = new Map();
    for (const d of deltas) for (const [grain, bucket, type, count] of d) addCount(acc, grain, bucket, type, count);
    const rows = [...acc.values()].sort(
      (a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0),
    );
    if (!rows.length) return;
    await client.query({
      name: "analytics_rollups_apply",
      text: `INSERT INTO analytics_rollups (project_id, grain, bucket, type, count)
             SELECT $1, g, b, t, c FROM unnest($2::smallint[], $3::timestamptz[], $4::text[], $5::bigint[]) AS x(g, b, t, c)
             ON CONFLICT (project_id, grain, bucket, type) DO UPDATE SET count = analytics_rollups.count + EXCLUDED.count`,
      values: [
        projectId,
        rows.map((r) => r[0]),
        rows.map((r) => new Date(r[1])),
        rows.map((r) => r[2]),
        rows.map((r) => r[3]),
      ],
    });
  },
};
