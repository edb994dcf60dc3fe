import { z } from "zod";
import { badRequest } from "../shared/errors.js";
import { alsoRefused, validate } from "../shared/validate.js";
import { cursorRule } from "../shared/cursor.js";
import { fieldProblem, resolveField, type Field } from "./fields.js";
import { OPERATION_NAMES, isNumeric, parseOperation, type Operation } from "./aggregations.js";
import type { Aggregation } from "./queries.js";
import { INTERVALS, type Interval } from "./time.js";

// Validation of the request parts proto cannot express (ranges, enums, cross-field rules).

const limit = (def: number, max: number) =>
  z.number().int("must be an integer").min(1, "must be at least 1").max(max, `must be at most ${max}`).default(def);
const bigintToNumber = (v: unknown) => (typeof v === "bigint" ? Number(v) : v);

const interval = z.enum(INTERVALS as [Interval, ...Interval[]], { message: `must be one of ${INTERVALS.join(", ")}` });

export function parseInterval(v: unknown): Interval {
  return validate(z.object({ interval }), { interval: v || undefined }).interval;
}

export function parseLimit(v: unknown, def: number, max: number, name = "limit"): number {
  return validate(z.object({ [name]: limit(def, max) }), { [name]: bigintToNumber(v) })[name] as number;
}

const fieldName = z.string().superRefine((v, ctx) => {
  const p = fieldProblem(v);
  if (p) ctx.addIssue({ code: "custom", message: p });
});

/** Aggregations, at least `min` (group takes none: an absent list is an empty one over RPC). */
const aggList = (min: number) =>
  z
    .array(
      z
        .object({
          name: z.string().trim().min(1, "is required").max(100),
          field: fieldName.optional(),
          operation: z.string().refine((v) => parseOperation(v) !== undefined, `must be ${OPERATION_NAMES}`),
        })
        .superRefine((a, ctx) => {
          // Counts need no field; numeric operations (and a name that is none) do.
          const op = parseOperation(a.operation);
          if ((!op || isNumeric(op)) && !a.field)
            ctx.addIssue({ code: "custom", path: ["field"], message: `is required for ${a.operation}` });
        }),
    )
    .min(min, "needs at least one aggregation")
    .max(50, "at most 50 aggregations")
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((a, i) => {
        if (seen.has(a.name)) ctx.addIssue({ code: "custom", path: [i, "name"], message: "names must be unique" });
        seen.add(a.name);
      });
    });

const aggSchema = aggList(1);

export function parseAggregations(v: { name: string; field?: string; operation: string }[]): Aggregation[] {
  const list = validate(z.object({ aggregations: aggSchema }), {
    aggregations: v.map((a) => ({ name: a.name, field: a.field || undefined, operation: a.operation })),
  }).aggregations;
  return list.map((a, i) => ({
    name: a.name,
    operation: parseOperation(a.operation) as Operation,
    field: a.field ? resolveField(a.field, `aggregations[${i}].field`) : null,
  }));
}

/** A measure per timeseries bucket: an aggregation without a name. */
export function parseMeasure(v: { operation: string; field?: string } | undefined): Aggregation | null {
  if (!v) return null;
  const [a] = parseAggregations([{ name: "value", operation: v.operation, field: v.field }]);
  return a;
}

/** Group aggregations: optional, and no name may clash with a group-by field or `count`. */
export function parseGroupAggregations(
  v: { name: string; field?: string; operation: string }[],
  groupBy: string[],
): Aggregation[] {
  if (v.length === 0) return [];
  const aggs = parseAggregations(v);
  aggs.forEach((a, i) => {
    if (a.name === "count" || groupBy.includes(a.name))
      throw badRequest(`aggregations[${i}].name: '${a.name}' is already a key of each group`, [
        { field: `aggregations[${i}].name`, message: "must differ from count and the groupBy fields" },
      ]);
  });
  return aggs;
}

/** The funnel's bounds (decisions.md: 2-10 steps; the window: docs/analytics.md). */
const MAX_WINDOW_MS = 90 * 86_400_000;
export const FUNNEL_MIN_STEPS = 2;
export const FUNNEL_MAX_STEPS = 10;
/** A funnel's conversion window (also an alert's funnel query's: src/alerts/requests.ts). */
export const conversionWindowSchema = z
  .number()
  .int("must be an integer")
  .min(1, "must be at least 1")
  .max(MAX_WINDOW_MS, `must be at most ${MAX_WINDOW_MS} (90 days)`)
  .default(86_400_000);
/** Most values of a funnel's breakdown. */
const MAX_BREAKDOWN_VALUES = 100;
const funnelSchema = z.object({
  steps: z
    .number()
    .int()
    .min(FUNNEL_MIN_STEPS, `needs at least ${FUNNEL_MIN_STEPS} steps`)
    .max(FUNNEL_MAX_STEPS, `at most ${FUNNEL_MAX_STEPS} steps`),
  windowMs: conversionWindowSchema,
  actor: z.enum(["userId"], { message: "must be userId" }).default("userId"),
  breakdownLimit: limit(25, MAX_BREAKDOWN_VALUES),
});
export function parseFunnel(v: {
  steps: number;
  windowMs?: bigint;
  actor: string;
  breakdown?: string;
  breakdownLimit?: number;
}): { windowMs: number; breakdown?: { field: Field; limit: number } } {
  const { windowMs, breakdownLimit } = validate(funnelSchema, {
    steps: v.steps,
    windowMs: bigintToNumber(v.windowMs),
    actor: v.actor || undefined,
    breakdownLimit: v.breakdownLimit,
  });
  return {
    windowMs,
    breakdown:
      v.breakdown === undefined ? undefined : { field: parseField(v.breakdown, "breakdown"), limit: breakdownLimit },
  };
}

const RETENTION_INTERVALS = ["day", "week", "month"] as const;
/** Retention's intervals (also an alert's retention query's: src/alerts/requests.ts). */
export const retentionIntervalSchema = z.enum(RETENTION_INTERVALS, {
  message: `must be one of ${RETENTION_INTERVALS.join(", ")}`,
});
export const MAX_RETENTION_PERIODS = 30;
const retentionSchema = z.object({
  interval: retentionIntervalSchema,
  periods: z
    .number({ message: "is required" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(MAX_RETENTION_PERIODS, `must be at most ${MAX_RETENTION_PERIODS}`),
});

export function parseRetention(v: { interval: string; periods?: bigint }): { interval: Interval; periods: number } {
  return validate(retentionSchema, { interval: v.interval || undefined, periods: bigintToNumber(v.periods) });
}

export function parseField(v: string, where: string): Field {
  return resolveField(v === "" ? undefined : v, where);
}

/** Most group-by fields. */
const MAX_GROUP_BY = 10;

export function parseGroupBy(v: string[]): Field[] {
  if (v.length === 0)
    throw badRequest("groupBy: needs at least one field", [{ field: "groupBy", message: "needs at least one field" }]);
  if (v.length > MAX_GROUP_BY)
    throw badRequest(`groupBy: at most ${MAX_GROUP_BY} fields`, [
      { field: "groupBy", message: `at most ${MAX_GROUP_BY} fields` },
    ]);
  if (new Set(v).size !== v.length)
    throw badRequest("groupBy: fields must be unique", [{ field: "groupBy", message: "fields must be unique" }]);
  if (v.includes("count"))
    throw badRequest("groupBy: 'count' names the result count; use data.count", [
      { field: "groupBy", message: "'count' is reserved in results; use data.count" },
    ]);
  return v.map((f, i) => resolveField(f, `groupBy[${i}]`));
}

/**
 * The rules above per RPC, for the OpenAPI document (bind's `rules`): the handlers check each part
 * with the functions above (parseWindow: src/analytics/time.ts), built from the same pieces. Filters
 * (a grammar, src/analytics/filters.ts), a field's grammar and `time.start <= time.end` are in prose.
 */
const instant = z.string().meta({ format: "date-time" });
const time = alsoRefused(z.object({ start: instant, end: instant }), "time.start after time.end");
const FIELD_GRAMMAR = "a field name outside the field grammar (docs/analytics.md)";
const field = alsoRefused(z.string().min(1), FIELD_GRAMMAR);
/** Every analytics body takes `filters`: a grammar of its own (src/analytics/filters.ts), stated in prose. */
const filtered = <T extends z.ZodType>(rule: T) =>
  alsoRefused(rule, "filters outside the filter grammar (docs/analytics.md)");
export const analyticsRules = {
  queryEvents: filtered(
    z.object({
      time: time.optional(),
      pagination: z.object({ limit: limit(50, 100), cursor: cursorRule.optional() }).optional(),
    }),
  ),
  exportEvents: filtered(z.object({ time: time.optional() })),
  count: filtered(z.object({ time })),
  aggregate: filtered(
    alsoRefused(
      z.object({ time, aggregations: aggSchema }),
      `an aggregation's operation other than ${OPERATION_NAMES}`,
      "an aggregation without a field (all but count need one)",
      "two aggregations of one name",
      FIELD_GRAMMAR,
    ),
  ),
  unique: filtered(z.object({ time, field, limit: limit(100, 1000) })),
  timeseries: filtered(
    alsoRefused(
      z.object({
        time,
        interval,
        aggregation: z.object({ operation: z.string(), field: field.optional() }).optional(),
      }),
      `an aggregation's operation other than ${OPERATION_NAMES}`,
      "an aggregation without a field (all but count need one)",
    ),
  ),
  group: filtered(
    alsoRefused(
      z.object({
        time,
        groupBy: z.array(field).min(1).max(MAX_GROUP_BY).meta({ uniqueItems: true }),
        limit: limit(100, 1000),
        aggregations: aggList(0).optional(),
      }),
      "a groupBy field named count",
      "an aggregation named count or as a groupBy field",
      "two aggregations of one name",
    ),
  ),
  funnel: filtered(
    z.object({
      steps: z.array(z.object({})).min(2).max(10),
      time,
      windowMs: funnelSchema.shape.windowMs,
      actor: funnelSchema.shape.actor,
      breakdown: field.optional(),
      breakdownLimit: funnelSchema.shape.breakdownLimit,
    }),
  ),
  retention: filtered(z.object({ time, ...retentionSchema.shape })),
};
