import { z } from "zod";
import { MIN_TIMESTAMP_MS } from "../events/validate.js";
import { cursorFormat, cursorRule } from "../shared/cursor.js";
import { badRequest, notFound } from "../shared/errors.js";
import { isPlainText, textPattern } from "../shared/text.js";
import { parseTimestampMs, TIMESTAMP_MESSAGE } from "../shared/time.js";
import { alsoRefused, validate } from "../shared/validate.js";
import { AGGREGATION_NAMES, INTERVALS, defaultAggregation, type Aggregation, type Interval } from "./model.js";
import type { Selection } from "./query.js";
import type { MetricRow } from "./store.js";
import { MAX_NAME_LENGTH } from "./validate.js";

// Read-request validation (query, timeseries, points, current) and what it resolves to.

/** Most buckets a timeseries may span (a 30-day range in 1m buckets fits). */
const MAX_BUCKETS = 50_000;
export const POINTS_LIMIT_DEFAULT = 1000;
const POINTS_LIMIT_MAX = 10_000;

/** Plain text (textPattern's `plain`) not starting with `$` (no lookahead: generators of test data read it). */
const PLAIN = textPattern(true, false); // ^[^...]*$
const NAME_PATTERN = `^([^$${PLAIN.slice(3, -3)}]${PLAIN.slice(1, -1)})?$`;
const name = z
  .string()
  .min(1, "name is required")
  .max(MAX_NAME_LENGTH)
  .refine((s) => !s.startsWith("$"), "metric names must not start with '$'")
  .refine(isPlainText, "must not contain control characters or invalid Unicode")
  .meta({ pattern: NAME_PATTERN }); // the two refinements, for the OpenAPI document

const zoned = z
  .string()
  .refine((s) => parseTimestampMs(s) !== undefined, TIMESTAMP_MESSAGE)
  .meta({ format: "date-time" });
const time = alsoRefused(
  z.object({ start: zoned, end: zoned }, { error: "time {start, end} is required" }).refine(
    (t) => {
      const a = parseTimestampMs(t.start),
        b = parseTimestampMs(t.end);
      return a === undefined || b === undefined || a <= b;
    },
    { message: "start must not be after end", path: ["start"] },
  ),
  "time.start after time.end",
);

const common = {
  name,
  aggregation: z.enum(AGGREGATION_NAMES).optional(),
  type: z.enum(["measurement", "counter"]).optional(),
  operation: z.enum(["increment", "decrement"]).optional(),
  time,
};

export const querySchema = z.object(common);
export const timeseriesSchema = alsoRefused(
  z.object({
    ...common,
    interval: z.enum(Object.keys(INTERVALS) as [Interval, ...Interval[]]),
  }),
  `a time range of more than ${MAX_BUCKETS} intervals`,
);
export const pointsSchema = z.object({
  name,
  type: common.type,
  operation: common.operation,
  time,
  limit: z.number().int().min(1).max(POINTS_LIMIT_MAX).optional(),
  cursor: cursorRule.optional(),
});
export const currentSchema = z.object({ name });

/** `""` from an unset proto3 string means absent. */
const opt = <T>(v: T | undefined): T | undefined => (v === "" ? undefined : v);

/** Latest instant a range is read up to: far beyond any storable point, and still a 4-digit year. */
const MAX_RANGE_MS = Date.UTC(9000, 0, 1);

/**
 * The validated inclusive time range as half-open epoch ms, clamped to where points can exist
 * (recording refuses timestamps before 2000-01-01), so that rollup boundaries stay in range.
 */
export function rangeOf(t: { start: string; end: string }): { from: number; to: number } {
  // Bounds are inclusive; stored times have millisecond precision, so [start, end + 1 ms).
  const from = Math.min(Math.max(parseTimestampMs(t.start)!, MIN_TIMESTAMP_MS), MAX_RANGE_MS);
  const to = Math.min(Math.max(parseTimestampMs(t.end)! + 1, from), MAX_RANGE_MS);
  return { from, to };
}

export function missingMetric(name: string) {
  return notFound(`metric '${name}'`);
}

/** Checks the optional type/operation narrowing against the metric; answers the stored ops to read. */
export function selection(
  m: MetricRow,
  req: { type?: string; operation?: string },
  range: { from: number; to: number },
): Selection {
  if (req.type !== undefined && req.type !== m.type) {
    throw badRequest(`metric '${m.name}' is a ${m.type}, not a ${req.type}`, [
      { field: "type", message: `the metric is a ${m.type}` },
    ]);
  }
  if (req.operation !== undefined && m.type !== "counter") {
    throw badRequest("operation narrows counters only", [
      { field: "operation", message: `metric '${m.name}' is a measurement` },
    ]);
  }
  const ops =
    m.type === "measurement" ? [0] : req.operation === "increment" ? [1] : req.operation === "decrement" ? [2] : [1, 2];
  return { metricId: m.id, ops, negate: req.operation === "decrement", ...range };
}

export function aggregationFor(m: MetricRow, requested: Aggregation | undefined): Aggregation {
  return requested ?? defaultAggregation(m.type);
}

export function checkBuckets(range: { from: number; to: number }, interval: Interval): void {
  const n = Math.ceil((range.to - range.from) / INTERVALS[interval]);
  if (n > MAX_BUCKETS)
    throw badRequest(`the range spans ${n} buckets of ${interval}; at most ${MAX_BUCKETS}`, [
      { field: "interval", message: "too many buckets for this range" },
    ]);
}

/** Validates with zod after mapping proto3 empty strings to absent. */
export function parse<T extends z.ZodType>(schema: T, req: Record<string, unknown>): z.infer<T> {
  const plain: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(req)) {
    if (k === "$typeName" || k === "projectId") continue;
    plain[k] =
      k === "time" && v !== undefined
        ? { start: opt((v as { start: string }).start), end: opt((v as { end: string }).end) }
        : opt(v);
  }
  if (plain.name === undefined) plain.name = "";
  return validate(schema, plain);
}

/** The points' cursor (the shared format, src/shared/cursor.ts; tag pts1): the last point's (timestamp, event id). */
export const pointsCursor = cursorFormat<{ ts: string; id: string }>("pts1", {
  parts: 2,
  write: (p) => [p.ts, p.id],
  read: ([ts, id]) => {
    const ms = parseTimestampMs(ts);
    return ms === undefined || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)
      ? undefined
      : { ts: new Date(ms).toISOString(), id };
  },
});
export const encodeCursor = (ts: string, id: string): string => pointsCursor.encode({ ts, id });
export const decodeCursor = (c: string): { ts: string; id: string } => pointsCursor.read(c);
