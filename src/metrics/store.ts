import type { JsonObject } from "@bufbuild/protobuf";
import type { Queryable } from "../storage/db.js";
import { ProjectGoneError } from "../shared/gone.js";
import { OP_NAME, type MetricType } from "./model.js";

// The metric name registry and the raw point reads.

export interface MetricRow {
  id: string;
  name: string;
  type: MetricType;
  unit: string | null;
  total: number;
  last_value: number | null;
  last_ts: Date | null;
}

/** A metric that has at least one stored point (a name only reserved by a failed write is not one). */
export async function findMetric(db: Queryable, projectId: string, name: string): Promise<MetricRow | undefined> {
  const r = await db.query<MetricRow>(
    "SELECT id::text, name, type, unit, total, last_value, last_ts FROM metrics WHERE project_id = $1 AND name = $2 AND last_ts IS NOT NULL",
    [projectId, name],
  );
  return r.rows[0];
}

/**
 * Reserves each name with its type unless it exists, then answers every name's registered type.
 * The unique (project_id, name) key settles races: a concurrent first writer of the other type
 * makes this INSERT wait for it and then see its row.
 */
export async function registerTypes(
  db: Queryable,
  projectId: string,
  wanted: Map<string, MetricType>,
): Promise<Map<string, MetricType>> {
  const names = [...wanted.keys()].sort();
  await db.query(
    "INSERT INTO metrics (project_id, name, type) SELECT $1, n, t FROM unnest($2::text[], $3::text[]) AS x(n, t) ORDER BY n ON CONFLICT (project_id, name) DO NOTHING",
    [projectId, names, names.map((n) => wanted.get(n))],
  );
  const r = await db.query<{ name: string; type: MetricType }>(
    "SELECT name, type FROM metrics WHERE project_id = $1 AND name = ANY($2::text[])",
    [projectId, names],
  );
  // A name inserted (or found) above and gone now was deleted with its project in between.
  if (r.rows.length < names.length) throw new ProjectGoneError();
  return new Map(r.rows.map((x) => [x.name, x.type]));
}

export async function listMetrics(db: Queryable, projectId: string): Promise<{ name: string; type: MetricType }[]> {
  const r = await db.query<{ name: string; type: MetricType }>(
    "SELECT name, type FROM metrics WHERE project_id = $1 AND last_ts IS NOT NULL ORDER BY name",
    [projectId],
  );
  return r.rows;
}

export interface StoredPoint {
  timestamp: string;
  value: number;
  operation: string;
  tags: JsonObject;
  eventId: string;
}

/** Raw points in [from, to) oldest first, after the (ts, event id) cursor; one more than `limit` tells hasMore. */
export async function readPoints(
  db: Queryable,
  q: { metricId: string; ops: number[]; from: number; to: number; limit: number; after?: { ts: string; id: string } },
): Promise<StoredPoint[]> {
  const params: unknown[] = [
    q.metricId,
    q.ops,
    new Date(q.from).toISOString(),
    new Date(q.to).toISOString(),
    q.limit + 1,
  ];
  let cursor = "";
  if (q.after) {
    params.push(q.after.ts, q.after.id);
    cursor = " AND (ts, event_id) > ($6::timestamptz, $7::uuid)";
  }
  const r = await db.query<{ ts: Date; event_id: string; v: number; op: number; tags: JsonObject }>(
    `SELECT ts, event_id, v, op, tags FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= $3 AND ts < $4${cursor} ORDER BY ts, event_id LIMIT $5`,
    params,
  );
  return r.rows.map((x) => ({
    timestamp: x.ts.toISOString(),
    // Values as recorded: a decrement's stored -v reads back as v (and never as -0).
    value: x.op === 2 ? 0 - x.v : x.v,
    operation: OP_NAME[x.op],
    tags: x.tags,
    eventId: x.event_id,
  }));
}
