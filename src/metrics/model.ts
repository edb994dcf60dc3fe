import { assertNever } from "../shared/never.js";

import { DAY_MS, HOUR_MS, MINUTE_MS, WEEK_MS } from "../shared/time.js";

// The metrics domain: types, and the pure decisions (operations, aggregation defaults, bucket
// alignment, and how a time range splits into rollup levels and raw edges).

export type MetricType = "measurement" | "counter";
export type Operation = "measure" | "increment" | "decrement";
export type InputType = "measurement" | "increment" | "decrement";

/** Stored op codes (metric_points.op, metric_rollups.op). */
export const OP_CODE: Record<Operation, number> = { measure: 0, increment: 1, decrement: 2 };
export const OP_NAME: Operation[] = ["measure", "increment", "decrement"];

/** The internal event type of each input type, and back. */
export const EVENT_TYPE: Record<InputType, string> = {
  measurement: "$measure",
  increment: "$increment",
  decrement: "$decrement",
};
export const OP_OF_EVENT: Record<string, Operation | undefined> = {
  $measure: "measure",
  $increment: "increment",
  $decrement: "decrement",
};

export const metricTypeOf = (t: InputType | Operation): MetricType =>
  t === "measurement" || t === "measure" ? "measurement" : "counter";
export const opOf = (t: InputType): Operation => (t === "measurement" ? "measure" : t);

/** Signed value as stored: decrements are negative so that a plain sum is the net change. */
export const signed = (op: Operation, value: number): number => (op === "decrement" ? -value : value);

/**
 * The metric aggregations (docs/metrics.md), the one table of them: a `moment` one is answered from
 * count, sum, min and max, which rollups keep (fromMoments below; a new one is a compile error there
 * until it is computed); a `percentile` one reads raw points (exact percentile_cont at `fraction`).
 * docs/architecture.md: "Add a metric aggregation".
 */
const AGGREGATIONS = {
  avg: { kind: "moment" },
  min: { kind: "moment" },
  max: { kind: "moment" },
  sum: { kind: "moment" },
  count: { kind: "moment" },
  p25: { kind: "percentile", fraction: 0.25 },
  p50: { kind: "percentile", fraction: 0.5 },
  p75: { kind: "percentile", fraction: 0.75 },
  p90: { kind: "percentile", fraction: 0.9 },
  p95: { kind: "percentile", fraction: 0.95 },
  p99: { kind: "percentile", fraction: 0.99 },
} as const satisfies Record<string, { kind: "moment" } | { kind: "percentile"; fraction: number }>;
export type Aggregation = keyof typeof AGGREGATIONS;
/** Every aggregation's name, for zod's enum. */
export const AGGREGATION_NAMES = Object.keys(AGGREGATIONS) as [Aggregation, ...Aggregation[]];
export type MomentAggregation = {
  [K in Aggregation]: (typeof AGGREGATIONS)[K]["kind"] extends "moment" ? K : never;
}[Aggregation];

/** The fraction of a percentile aggregation; undefined for a moment one. */
export function percentileOf(agg: Aggregation): number | undefined {
  const a = AGGREGATIONS[agg];
  return a.kind === "percentile" ? a.fraction : undefined;
}

/** avg for measurements; sum (the net change over the range) for counters. */
export function defaultAggregation(type: MetricType): Aggregation {
  return type === "counter" ? "sum" : "avg";
}

/** A Monday (1970-01-05T00:00:00Z): the origin every bucket is aligned to, so weeks start on Monday. */
export const ORIGIN_MS = 4 * DAY_MS;

export const INTERVALS = {
  "1m": MINUTE_MS,
  "5m": 5 * MINUTE_MS,
  "15m": 15 * MINUTE_MS,
  "30m": 30 * MINUTE_MS,
  "1h": HOUR_MS,
  "6h": 6 * HOUR_MS,
  "12h": 12 * HOUR_MS,
  "1d": DAY_MS,
  "1w": WEEK_MS,
} as const;
export type Interval = keyof typeof INTERVALS;

/** Start of the UTC-aligned bucket of width `widthMs` that holds `ms` (weeks from Monday). */
export function bucketStart(ms: number, widthMs: number): number {
  return ms - mod(ms - ORIGIN_MS, widthMs);
}

function mod(a: number, b: number): number {
  return ((a % b) + b) % b;
}

/** Rollup levels as stored (metric_rollups.level) and their widths, finest first. */
export const LEVELS = [
  { level: 1, width: MINUTE_MS },
  { level: 2, width: HOUR_MS },
  { level: 3, width: DAY_MS },
] as const;

/** A piece of a range: read from rollup `level`, or from raw points when level is 0. Half-open. */
export interface Segment {
  level: number;
  from: number;
  to: number;
}

/**
 * Splits the half-open range [from, to) into the fewest rollup rows: whole days, then whole hours,
 * then whole minutes, and raw points for the partial minutes at the edges. Only levels no wider
 * than `maxWidth` are used (a timeseries of 15m buckets cannot read hourly rows); every level
 * width divides every interval, so a rollup row never straddles a bucket.
 */
export function planSegments(from: number, to: number, maxWidth = Infinity): Segment[] {
  const levels = LEVELS.filter((l) => l.width <= maxWidth);
  const out: Segment[] = [];
  const split = (a: number, b: number, i: number): void => {
    if (a >= b) return;
    if (i < 0) {
      out.push({ level: 0, from: a, to: b });
      return;
    }
    const w = levels[i].width;
    const lo = bucketStart(a, w) === a ? a : bucketStart(a, w) + w;
    const hi = bucketStart(b, w);
    if (lo >= hi) return split(a, b, i - 1);
    split(a, lo, i - 1);
    out.push({ level: levels[i].level, from: lo, to: hi });
    split(hi, b, i - 1);
  };
  split(from, to, levels.length - 1);
  return out;
}

/** count/sum/min/max of signed values, as read from rollups or raw points. */
export interface Moments {
  n: number;
  sum: number;
  min: number | null;
  max: number | null;
}

/**
 * The answer of a non-percentile aggregation from signed moments. `negate` is set when the query
 * narrows a counter to its decrements: their values are reported as recorded (non-negative).
 */
export function fromMoments(agg: MomentAggregation, m: Moments, negate: boolean): number | null {
  const s = negate ? -1 : 1;
  switch (agg) {
    case "count":
      return m.n;
    case "sum":
      return m.n === 0 ? 0 : s * m.sum;
    case "avg":
      return m.n === 0 ? null : (s * m.sum) / m.n;
    case "min":
      return m.n === 0 ? null : negate ? -(m.max as number) : m.min;
    case "max":
      return m.n === 0 ? null : negate ? -(m.min as number) : m.max;
    default:
      return assertNever(agg, "moment aggregation");
  }
}
