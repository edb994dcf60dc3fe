import type { JsonValue } from "@bufbuild/protobuf";
import type { Value } from "@bufbuild/protobuf/wkt";
import { z } from "zod";
import { cursorRule } from "../shared/cursor.js";
import { isNumeric, OPERATION_NAMES, parseOperation } from "../analytics/aggregations.js";
import { fieldProblem } from "../analytics/fields.js";
import {
  conversionWindowSchema,
  FUNNEL_MAX_STEPS,
  FUNNEL_MIN_STEPS,
  MAX_RETENTION_PERIODS,
  retentionIntervalSchema,
} from "../analytics/requests.js";
import { parseFilters } from "../analytics/filters.js";
import { AGGREGATION_NAMES } from "../metrics/model.js";
import { ApiError } from "../shared/errors.js";
import { cursorFormat } from "../shared/cursor.js";
import { isPlainText, textSchema } from "../shared/text.js";
import { parseTimestampMs, timestampSchema } from "../shared/time.js";
import { valueToJson } from "../shared/value.js";
import { SLUG_RE } from "../uptime/model.js";
import { NO_DATA_POLICIES, OPERATORS } from "./model.js";

// Input rules of the alert routes (decisions.md: Alerts; docs/alerts.md "Routes"). The query is a
// union on `source`; its filters are the canonical filter model (src/analytics/filters.ts), its
// operations those of analytics/aggregate and of metrics/query.

const MIN_WINDOW_MS = 10_000;
const MAX_WINDOW_MS = 2_592_000_000;
const MIN_EVERY_MS = 10_000;
const MAX_MS = MAX_WINDOW_MS;

const ms = (min: number, max: number) =>
  z.number().int("must be a whole number of milliseconds").min(min, `at least ${min}`).max(max, `at most ${max}`);

const name = textSchema({ min: 1, max: 200 });
const slug = z
  .string()
  .trim()
  .toLowerCase()
  .regex(SLUG_RE, "lowercase letters, digits, '.', '_' or '-' (1-100, starting and ending with a letter or digit)");

const operator = z.enum(OPERATORS);
const condition = z.strictObject({ operator, value: z.number() });
const resolve = z.strictObject({ operator, value: z.number(), forMs: ms(0, MAX_MS).default(0) });

/**
 * Filters of the canonical model (a grammar, src/analytics/filters.ts: in prose in the document, as
 * analytics' own filters): checked by its parser, its details named in the message.
 */
const filters = z.custom<JsonValue>().superRefine((v, ctx) => {
  try {
    parseFilters(v);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const details = Array.isArray(err.restDetails) ? (err.restDetails as { field: string; message: string }[]) : [];
    for (const d of details) ctx.addIssue({ code: "custom", message: `${d.field}: ${d.message}` });
    if (!details.length) ctx.addIssue({ code: "custom", message: err.rawMessage });
  }
});

const metricName = z
  .string()
  .min(1, "is required")
  .max(200)
  .refine((s) => !s.startsWith("$"), "metric names must not start with '$'")
  .refine(isPlainText, "must not contain control characters or invalid Unicode");

const metricQuery = z.strictObject({
  source: z.literal("metric"),
  name: metricName,
  aggregation: z.enum(AGGREGATION_NAMES).optional(),
});
const eventsQuery = z
  .strictObject({
    source: z.literal("events"),
    filters: filters.optional(),
    operation: z.string().refine((v) => parseOperation(v) !== undefined, `must be ${OPERATION_NAMES}`),
    field: z
      .string()
      .refine((v) => fieldProblem(v) === null, "not a field")
      .optional(),
  })
  .superRefine((q, ctx) => {
    const op = parseOperation(q.operation);
    if (op && isNumeric(op) && !q.field)
      ctx.addIssue({ code: "custom", path: ["field"], message: `is required for ${q.operation}` });
  });
const side = z.strictObject({ filters: filters.optional() });
const ratioQuery = z.strictObject({ source: z.literal("ratio"), numerator: side, denominator: side });

/** analytics/funnel's body but `time` (the rule's window, shifted: samples.ts) and `actor` (userId). */
const funnelQuery = z.strictObject({
  source: z.literal("funnel"),
  steps: z
    .array(side)
    .min(FUNNEL_MIN_STEPS, `needs at least ${FUNNEL_MIN_STEPS} steps`)
    .max(FUNNEL_MAX_STEPS, `at most ${FUNNEL_MAX_STEPS} steps`),
  conversionWindowMs: conversionWindowSchema,
});
/** analytics/retention's body but `time` (the rule's window) and `periods` (period + 1): one cell. */
const retentionQuery = z.strictObject({
  source: z.literal("retention"),
  start: side,
  return: side,
  interval: retentionIntervalSchema,
  period: z
    .number()
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(MAX_RETENTION_PERIODS - 1, `must be at most ${MAX_RETENTION_PERIODS - 1}`)
    .default(1),
});

const query = z.discriminatedUnion("source", [metricQuery, eventsQuery, ratioQuery, funnelQuery, retentionQuery]);
export type AlertQuery = z.infer<typeof query>;

/** The decision and cadence fields every rule has (create, preview); PATCH takes each optionally. */
const ruleFields = {
  query,
  condition,
  windowMs: ms(MIN_WINDOW_MS, MAX_WINDOW_MS),
  everyMs: ms(MIN_EVERY_MS, MAX_MS).default(60_000),
  forMs: ms(0, MAX_MS).default(0),
  resolve: resolve.nullable().default(null),
  noData: z.enum(NO_DATA_POLICIES).default("ok"),
  minSamples: z.number().int().min(1, "at least 1").max(1_000_000_000).default(1),
};

export const createSchema = z.object({ name, slug: slug.optional(), ...ruleFields });

export const updateSchema = z.object({
  name: name.optional(),
  slug: slug.optional(),
  query: query.optional(),
  condition: condition.optional(),
  windowMs: ruleFields.windowMs.optional(),
  everyMs: ms(MIN_EVERY_MS, MAX_MS).optional(),
  forMs: ms(0, MAX_MS).optional(),
  resolve: resolve.nullable().optional(),
  noData: z.enum(NO_DATA_POLICIES).optional(),
  minSamples: z.number().int().min(1, "at least 1").max(1_000_000_000).optional(),
});

const time = z
  .object({ start: timestampSchema, end: timestampSchema }, { error: "time {start, end} is required" })
  .refine((t) => t.start.getTime() <= t.end.getTime(), { message: "start must not be after end", path: ["start"] });

export const previewSchema = z
  .object({
    ...ruleFields,
    slug: slug.optional(),
    evaluationOffsetMs: z.number().int().min(0, "must not be negative").optional(),
    time,
  })
  .refine((p) => p.evaluationOffsetMs === undefined || p.evaluationOffsetMs < p.everyMs, {
    message: "must be less than everyMs",
    path: ["evaluationOffsetMs"],
  });

const listLimit = (def: number, max: number) =>
  z.number().int().min(1, `must be between 1 and ${max}`).max(max, `must be between 1 and ${max}`).default(def);
export const listSchema = z.object({ limit: listLimit(50, 100), cursor: cursorRule.optional() });
export const evaluationListSchema = z.object({ limit: listLimit(100, 1000), cursor: cursorRule.optional() });

const US = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ALERT_ID = /^alr_[0-9A-Za-z]{1,64}$/;

/** The alert list's cursor (tag alr1): the last alert's (created_at to the microsecond, id). */
export const alertCursor = cursorFormat<{ at: string; id: string }>("alr1", {
  parts: 2,
  write: (p) => [p.at, p.id],
  read: ([at, id]) => (US.test(at) && parseTimestampMs(at) !== undefined && ALERT_ID.test(id) ? { at, id } : undefined),
});

/** The evaluation list's cursor (tag aev1): the last evaluation's time. */
export const evaluationCursor = cursorFormat<{ at: string }>("aev1", {
  parts: 1,
  write: (p) => [p.at],
  read: ([at]) => (parseTimestampMs(at) !== undefined ? { at } : undefined),
});

/** A request's fields as plain JSON for zod: unset proto3 fields absent, 64-bit ints as numbers, Values as JSON. */
export function plainRule(req: {
  name?: string;
  slug?: string;
  query?: Value;
  condition?: { operator: string; value?: number };
  windowMs?: bigint;
  everyMs?: bigint;
  forMs?: bigint;
  resolve?: Value;
  noData?: string;
  minSamples?: number;
  evaluationOffsetMs?: bigint;
  time?: { start: string; end: string };
}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (k: string, v: unknown) => {
    if (v !== undefined) out[k] = v;
  };
  const num = (v: bigint | undefined) => (v === undefined ? undefined : Number(v));
  put("name", req.name);
  put("slug", req.slug);
  put("query", valueToJson(req.query, "query"));
  put("condition", req.condition ? { operator: req.condition.operator, value: req.condition.value } : undefined);
  put("windowMs", num(req.windowMs));
  put("everyMs", num(req.everyMs));
  put("forMs", num(req.forMs));
  put("resolve", req.resolve === undefined ? undefined : (valueToJson(req.resolve, "resolve") ?? null));
  put("noData", req.noData);
  put("minSamples", req.minSamples);
  put("evaluationOffsetMs", num(req.evaluationOffsetMs));
  put("time", req.time ? { start: req.time.start, end: req.time.end } : undefined);
  return out;
}

/** JSON of a stored query (jsonb) back to the domain type. */
export const storedQuery = (v: JsonValue): AlertQuery => query.parse(v);
