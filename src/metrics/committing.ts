import type { PoolClient } from "pg";
import type { CommittingStep, StoredEvent } from "../events/pipeline.js";
import {
  LEVELS,
  OP_CODE,
  OP_OF_EVENT,
  bucketStart,
  metricTypeOf,
  signed,
  type MetricType,
  type Operation,
} from "./model.js";

// A committing step of the ingest pipeline (events/pipeline.ts; wired in server/features.ts):
// inside the ingest transaction, right after the events are inserted, the
// $measure/$increment/$decrement events among them become metric points, minute/hour/day
// rollups, and the registry's running total and latest value. Committed with the events or not
// at all: nothing lost, nothing twice (a point's key holds its event id).

/** A metric event as stored, reduced to what the metric tables need. */
export interface PointRow {
  projectId: string;
  name: string;
  op: Operation;
  /** Signed: decrements are negative. */
  v: number;
  ts: number;
  eventId: string;
  tags: Record<string, unknown>;
  unit: string | null;
}

/** Picks the metric events out of a batch; cheap (one pass, no allocation) when there are none. */
export function metricPoints(events: StoredEvent[]): PointRow[] {
  let out: PointRow[] | undefined;
  for (const e of events) {
    if (e.type.charCodeAt(0) !== 36) continue; // '$'
    const op = OP_OF_EVENT[e.type];
    if (!op) continue;
    const { name, value, unit } = e.data as { name?: unknown; value?: unknown; unit?: unknown };
    if (typeof name !== "string" || typeof value !== "number" || !Number.isFinite(value)) continue;
    (out ??= []).push({
      projectId: e.projectId,
      name,
      op,
      v: signed(op, value),
      ts: e.timestamp.getTime(),
      eventId: e.id,
      tags: e.tags,
      unit: typeof unit === "string" ? unit : null,
    });
  }
  return out ?? [];
}

/** One registry row per (project, name): what the batch adds to it. */
export interface RegistryDelta {
  projectId: string;
  name: string;
  type: MetricType;
  unit: string | null;
  total: number;
  lastValue: number | null;
  lastTs: number;
}

/** Folds points into registry deltas, sorted by (project, name) so row locks are always taken in one order. */
export function registryDeltas(points: PointRow[]): RegistryDelta[] {
  const byKey = new Map<string, RegistryDelta>();
  for (const p of points) {
    const key = `${p.projectId}\u0000${p.name}`;
    let d = byKey.get(key);
    if (!d) {
      // The first point decides the type it registers with; a mismatching later one is skipped below.
      d = {
        projectId: p.projectId,
        name: p.name,
        type: metricTypeOf(p.op),
        unit: null,
        total: 0,
        lastValue: null,
        lastTs: -Infinity,
      };
      byKey.set(key, d);
    }
    if (d.type !== metricTypeOf(p.op)) continue;
    if (p.unit !== null) d.unit = p.unit;
    if (d.type === "counter") d.total += p.v;
    if (p.ts >= d.lastTs) {
      d.lastTs = p.ts;
      if (d.type === "measurement") d.lastValue = p.v;
    }
  }
  return [...byKey.values()].sort((a, b) =>
    a.projectId < b.projectId ? -1 : a.projectId > b.projectId ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
}

export interface RollupRow {
  metricId: string;
  level: number;
  bucket: number;
  op: number;
  n: number;
  sum: number;
  min: number;
  max: number;
}

/** Per-minute, hour and day moments of the points, sorted by key (lock order). */
export function rollupRows(points: { metricId: string; op: Operation; v: number; ts: number }[]): RollupRow[] {
  const rows = new Map<string, RollupRow>();
  for (const p of points) {
    const op = OP_CODE[p.op];
    for (const { level, width } of LEVELS) {
      const bucket = bucketStart(p.ts, width);
      const key = `${p.metricId}|${level}|${bucket}|${op}`;
      const r = rows.get(key);
      if (!r) rows.set(key, { metricId: p.metricId, level, bucket, op, n: 1, sum: p.v, min: p.v, max: p.v });
      else {
        r.n++;
        r.sum += p.v;
        if (p.v < r.min) r.min = p.v;
        if (p.v > r.max) r.max = p.v;
      }
    }
  }
  return [...rows.values()].sort(
    (a, b) =>
      Number(BigInt(a.metricId) - BigInt(b.metricId)) || a.level - b.level || a.bucket - b.bucket || a.op - b.op,
  );
}

const UPSERT_REGISTRY = `
INSERT INTO metrics AS m (project_id, name, type, unit, total, last_value, last_ts, created_at)
SELECT p, n, t, u, tot, lv, lt, now() FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::float8[], $7::timestamptz[]) AS x(p, n, t, u, tot, lv, lt)
ON CONFLICT (project_id, name) DO UPDATE SET
  unit = COALESCE(EXCLUDED.unit, m.unit),
  total = m.total + EXCLUDED.total,
  last_value = CASE WHEN m.last_ts IS NULL OR EXCLUDED.last_ts >= m.last_ts THEN EXCLUDED.last_value ELSE m.last_value END,
  last_ts = GREATEST(m.last_ts, EXCLUDED.last_ts)
WHERE m.type = EXCLUDED.type
RETURNING id::text, project_id, name, type`;

const INSERT_POINTS = `
INSERT INTO metric_points (metric_id, ts, event_id, v, op, tags)
SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::uuid[], $4::float8[], $5::int2[], $6::jsonb[])`;

const UPSERT_ROLLUPS = `
INSERT INTO metric_rollups AS r (metric_id, level, bucket, op, n, sum, min, max)
SELECT * FROM unnest($1::bigint[], $2::int2[], $3::timestamptz[], $4::int2[], $5::int8[], $6::float8[], $7::float8[], $8::float8[])
ON CONFLICT (metric_id, level, bucket, op) DO UPDATE SET
  n = r.n + EXCLUDED.n, sum = r.sum + EXCLUDED.sum, min = LEAST(r.min, EXCLUDED.min), max = GREATEST(r.max, EXCLUDED.max)`;

const iso = (ms: number) => new Date(ms).toISOString();

/** Writes the points, rollups and registry changes of the metric events in `events`. */
async function recordMetricEvents(client: PoolClient, events: StoredEvent[]): Promise<number> {
  const points = metricPoints(events);
  if (points.length === 0) return 0;
  const deltas = registryDeltas(points);
  const reg = await client.query<{ id: string; project_id: string; name: string; type: MetricType }>(UPSERT_REGISTRY, [
    deltas.map((d) => d.projectId),
    deltas.map((d) => d.name),
    deltas.map((d) => d.type),
    deltas.map((d) => d.unit),
    deltas.map((d) => d.total),
    deltas.map((d) => d.lastValue),
    deltas.map((d) => iso(d.lastTs)),
  ]);
  const ids = new Map<string, { id: string; type: MetricType }>();
  for (const r of reg.rows) ids.set(`${r.project_id}\u0000${r.name}`, { id: r.id, type: r.type });
  // A point whose name is registered with the other type is not stored as a point (the metrics
  // routes refuse it with 409 before it gets here; this guards direct writers).
  const kept: (PointRow & { metricId: string })[] = [];
  for (const p of points) {
    const m = ids.get(`${p.projectId}\u0000${p.name}`);
    if (m && m.type === metricTypeOf(p.op)) kept.push({ ...p, metricId: m.id });
  }
  if (kept.length === 0) return 0;
  await client.query(INSERT_POINTS, [
    kept.map((p) => p.metricId),
    kept.map((p) => iso(p.ts)),
    kept.map((p) => p.eventId),
    kept.map((p) => p.v),
    kept.map((p) => OP_CODE[p.op]),
    kept.map((p) => JSON.stringify(p.tags ?? {})),
  ]);
  const rollups = rollupRows(kept);
  await client.query(UPSERT_ROLLUPS, [
    rollups.map((r) => r.metricId),
    rollups.map((r) => r.level),
    rollups.map((r) => iso(r.bucket)),
    rollups.map((r) => r.op),
    rollups.map((r) => r.n),
    rollups.map((r) => r.sum),
    rollups.map((r) => r.min),
    rollups.map((r) => r.max),
  ]);
  return kept.length;
}

export const metricsCommitting: CommittingStep = {
  name: "metrics: points and rollups of $measure/$increment/$decrement",
  async run(client: PoolClient, events: StoredEvent[]) {
    await recordMetricEvents(client, events);
  },
  idle: (events: StoredEvent[]) => metricPoints(events).length === 0,
};
