import type { Queryable } from "../storage/db.js";
import {
  ORIGIN_MS,
  fromMoments,
  percentileOf,
  planSegments,
  type Aggregation,
  type MomentAggregation,
  type Moments,
  type Segment,
} from "./model.js";

// Aggregates over a metric's range. Moment aggregations (count, sum, avg, min, max) read the
// coarsest rollups that fit (days, hours, minutes) and raw points only at the partial-minute
// edges; exact percentiles read raw points (percentile_cont over the index-only range scan).

export interface Selection {
  metricId: string;
  /** Stored op codes to include (measurement [0]; counter [1, 2]; one side [1] or [2]). */
  ops: number[];
  /** Values of a decrement-only selection are reported as recorded (non-negative). */
  negate: boolean;
  /** Half-open [from, to) in epoch ms. */
  from: number;
  to: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * One UNION ALL branch per segment. `params` already holds $1 metric id, $2 ops and, when
 * `bucketed`, $3 the bucket interval (each row then carries its bucket as column b).
 */
function segmentSql(segments: Segment[], params: unknown[], bucketed: boolean): string {
  const bin = (col: string) =>
    bucketed ? `date_bin($3::interval, ${col}, '${iso(ORIGIN_MS)}'::timestamptz) AS b, ` : "";
  const parts: string[] = [];
  for (const s of segments) {
    params.push(iso(s.from), iso(s.to));
    const a = `$${params.length - 1}`,
      z = `$${params.length}`;
    if (s.level === 0) {
      parts.push(
        bucketed
          ? `SELECT ${bin("ts")}count(*) AS n, sum(v) AS s, min(v) AS mn, max(v) AS mx FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= ${a} AND ts < ${z} GROUP BY 1`
          : `SELECT count(*) AS n, sum(v) AS s, min(v) AS mn, max(v) AS mx FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= ${a} AND ts < ${z}`,
      );
    } else {
      parts.push(
        `SELECT ${bin("bucket")}n, sum AS s, min AS mn, max AS mx FROM metric_rollups WHERE metric_id = $1 AND level = ${s.level} AND op = ANY($2::int2[]) AND bucket >= ${a} AND bucket < ${z}`,
      );
    }
  }
  return parts.join("\nUNION ALL\n");
}

export interface AggregateResult {
  value: number | null;
  count: number;
}

type MomentRow = { n: number | null; s: number | null; mn: number | null; mx: number | null };
const moments = (r: MomentRow): Moments => ({ n: Number(r.n ?? 0), sum: r.s ?? 0, min: r.mn, max: r.mx });

/** One aggregate over the selection. */
export async function aggregate(db: Queryable, sel: Selection, agg: Aggregation): Promise<AggregateResult> {
  const p = percentileOf(agg);
  if (p !== undefined) {
    const r = await db.query<{ n: number; value: number | null }>(
      "SELECT count(*) AS n, percentile_cont($3::float8) WITHIN GROUP (ORDER BY v * $4::float8) AS value FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= $5 AND ts < $6",
      [sel.metricId, sel.ops, p, sel.negate ? -1 : 1, iso(sel.from), iso(sel.to)],
    );
    return { value: r.rows[0].n === 0 ? null : r.rows[0].value, count: Number(r.rows[0].n) };
  }
  const moment = agg as MomentAggregation;
  const segments = planSegments(sel.from, sel.to);
  if (segments.length === 0)
    return { value: fromMoments(moment, { n: 0, sum: 0, min: null, max: null }, sel.negate), count: 0 };
  const params: unknown[] = [sel.metricId, sel.ops];
  const union = segmentSql(segments, params, false);
  const r = await db.query<MomentRow>(
    `SELECT sum(n) AS n, sum(s) AS s, min(mn) AS mn, max(mx) AS mx FROM (\n${union}\n) parts`,
    params,
  );
  const m = moments(r.rows[0]);
  return { value: fromMoments(moment, m, sel.negate), count: m.n };
}

export interface Bucket {
  timestamp: string;
  value: number | null;
  count: number;
}

/** Aggregates per bucket of `widthMs` (aligned to UTC, weeks from Monday); empty buckets are absent. */
export async function timeseries(db: Queryable, sel: Selection, agg: Aggregation, widthMs: number): Promise<Bucket[]> {
  const interval = `${widthMs / 1000} seconds`;
  const p = percentileOf(agg);
  if (p !== undefined) {
    const r = await db.query<{ b: Date; n: number; value: number | null }>(
      `SELECT date_bin($3::interval, ts, '${iso(ORIGIN_MS)}'::timestamptz) AS b, count(*) AS n, percentile_cont($4::float8) WITHIN GROUP (ORDER BY v * $5::float8) AS value
       FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= $6 AND ts < $7 GROUP BY 1 ORDER BY 1`,
      [sel.metricId, sel.ops, interval, p, sel.negate ? -1 : 1, iso(sel.from), iso(sel.to)],
    );
    return r.rows.map((x) => ({ timestamp: x.b.toISOString(), value: x.value, count: Number(x.n) }));
  }
  const moment = agg as MomentAggregation;
  const segments = planSegments(sel.from, sel.to, widthMs);
  if (segments.length === 0) return [];
  const params: unknown[] = [sel.metricId, sel.ops, interval];
  const union = segmentSql(segments, params, true);
  const r = await db.query<MomentRow & { b: Date }>(
    `SELECT b, sum(n) AS n, sum(s) AS s, min(mn) AS mn, max(mx) AS mx FROM (\n${union}\n) parts GROUP BY b HAVING sum(n) > 0 ORDER BY b`,
    params,
  );
  return r.rows.map((x) => ({
    timestamp: x.b.toISOString(),
    value: fromMoments(moment, moments(x), sel.negate),
    count: Number(x.n),
  }));
}

/**
 * The moments of many half-open ranges `[from, to)` of one selection (alert preview; froms and tos
 * each non-decreasing) in one statement: the distinct bounds cut the whole range into segments, the
 * points are aggregated per segment (GROUP BY width_bucket over the sorted bounds) and each range
 * adds up the segments it covers. Equal to `aggregate`'s moments of each range (which reads rollups
 * for whole minutes: the same points, summed in another order): counts, minima and maxima always,
 * sums when `exactSums` (integers whose magnitudes sum to at most 2^53, exact in any order).
 */
export async function rangeMoments(
  db: Queryable,
  sel: Pick<Selection, "metricId" | "ops">,
  ranges: readonly { from: number; to: number }[],
): Promise<{ ranges: Moments[]; exactSums: boolean }> {
  if (!ranges.length) return { ranges: [], exactSums: true };
  const bounds = [...new Set(ranges.flatMap((r) => [r.from, r.to]))].sort((a, b) => a - b);
  const r = await db.query<MomentRow & { j: number; fr: string; ab: number | null }>(
    `SELECT width_bucket(ts, $3::timestamptz[]) AS j, count(*) AS n, sum(v) AS s, min(v) AS mn, max(v) AS mx,
            count(*) FILTER (WHERE v <> trunc(v)) AS fr, sum(abs(v)) AS ab
       FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= $4 AND ts < $5 GROUP BY 1`,
    [sel.metricId, sel.ops, bounds.map(iso), iso(bounds[0]), iso(bounds[bounds.length - 1])],
  );
  // Segment j (1-based, as width_bucket numbers them) is [bounds[j-1], bounds[j]).
  const segments: (Moments | undefined)[] = [];
  // Sums are exact in any order when every value is an integer and their magnitudes sum to at most 2^53.
  let fractional = 0;
  let magnitude = 0;
  for (const x of r.rows) {
    segments[Number(x.j)] = moments(x);
    fractional += Number(x.fr);
    magnitude += x.ab ?? 0;
  }
  const out: Moments[] = [];
  let i = 0;
  for (const range of ranges) {
    while (bounds[i] < range.from) i++;
    const m: Moments = { n: 0, sum: 0, min: null, max: null };
    for (let j = i + 1; j < bounds.length && bounds[j - 1] < range.to; j++) {
      const s = segments[j];
      if (!s) continue;
      m.n += s.n;
      m.sum += s.sum;
      if (s.min !== null && (m.min === null || s.min < m.min)) m.min = s.min;
      if (s.max !== null && (m.max === null || s.max > m.max)) m.max = s.max;
    }
    out.push(m);
  }
  return { ranges: out, exactSums: fractional === 0 && magnitude <= Number.MAX_SAFE_INTEGER };
}
