import { RecordMetricRequestSchema } from "../../gen/vigil/v1/metrics_pb.js";
import { z } from "zod";
import { MAX_FUTURE_MS, MIN_TIMESTAMP_MS, timestampRule } from "../events/validate.js";
import { CLIENT_ID_MESSAGE, clientUuid, UUID } from "../shared/ids.js";
import { itemKeys, NUMBER_PROBLEM, unknownItemKey } from "../shared/json.js";
import { setOwn } from "../shared/objects.js";
import { isPlainText, isStorableText, textPattern } from "../shared/text.js";
import { alsoRefused, batchItem } from "../shared/validate.js";
import { parseTimestampMs, TIMESTAMP_MESSAGE } from "../shared/time.js";
import { EVENT_TYPE, type InputType, type Operation, metricTypeOf, opOf, type MetricType } from "./model.js";

// Validation of one recorded point (the single route and each batch item share it). Pure: takes
// the receive time; answers the point or the first refusal as {field, message}.

export const MAX_NAME_LENGTH = 200;
const MAX_UNIT_LENGTH = 50;
const MAX_TAGS = 50;
const MAX_TAG_KEY_LENGTH = 100;
const MAX_TAG_VALUE_LENGTH = 500;
export const BATCH_MAX = 500;

export interface MetricInput {
  type: InputType;
  metricType: MetricType;
  op: Operation;
  name: string;
  value: number;
  unit: string | null;
  timestamp: Date;
  tags: Record<string, string | number | boolean>;
  /** The client id (events/claims.ts): a point whose id is stored already is not recorded again. */
  id: string | null;
}

interface Refusal {
  field: string;
  message: string;
}

export type MetricCheck = { ok: true; metric: MetricInput } | { ok: false; error: Refusal };

/** A point's keys: the fields of RecordMetricRequest but its project (a batch's is the route's). */
const METRIC_KEYS = itemKeys(RecordMetricRequestSchema, ["projectId"]);

const INPUT_TYPES = Object.keys(EVENT_TYPE) as InputType[];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

class Refused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.message);
  }
}
const fail = (field: string, message: string): never => {
  throw new Refused({ field, message });
};

/** A metric name: non-empty, no leading `$` (reserved), no control characters, bounded. */
function checkName(v: unknown, field = "name"): string {
  if (v === undefined || v === null || v === "") fail(field, "name is required");
  if (typeof v !== "string") fail(field, "name must be a string");
  const name = v as string;
  if (name.trim() === "") fail(field, "name is required");
  if (name.startsWith("$")) fail(field, "metric names must not start with '$' (reserved for internal events)");
  if (name.length > MAX_NAME_LENGTH) fail(field, `name must be at most ${MAX_NAME_LENGTH} characters`);
  if (!isPlainText(name)) fail(field, "name must not contain control characters or invalid Unicode");
  return name;
}

function checkTags(v: unknown): Record<string, string | number | boolean> {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) fail("tags", "tags must be a JSON object");
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_TAGS) fail("tags", `at most ${MAX_TAGS} tags`);
  const out: Record<string, string | number | boolean> = {};
  for (const [k, x] of entries) {
    if (k === "" || k.length > MAX_TAG_KEY_LENGTH || !isPlainText(k))
      fail("tags", `tag keys must be 1-${MAX_TAG_KEY_LENGTH} characters without control characters`);
    const field = `tags.${k}`;
    if (typeof x === "string") {
      if (x.length > MAX_TAG_VALUE_LENGTH) fail(field, `tag values must be at most ${MAX_TAG_VALUE_LENGTH} characters`);
      if (!isStorableText(x)) fail(field, "tag values must not contain NUL characters or invalid Unicode");
    } else if (typeof x === "number") {
      if (!Number.isFinite(x)) fail(field, `tag values ${NUMBER_PROBLEM}`);
    } else if (typeof x !== "boolean") {
      fail(field, "tag values must be strings, numbers or booleans");
    }
    setOwn(out, k, x as string | number | boolean); // a tag named __proto__ is data too
  }
  return out;
}

function checkTimestamp(v: unknown, now: Date): Date {
  if (v === undefined || v === null) return now;
  if (typeof v !== "string") fail("timestamp", `timestamp ${TIMESTAMP_MESSAGE}`);
  const ms = parseTimestampMs(v as string);
  if (ms === undefined) fail("timestamp", `timestamp ${TIMESTAMP_MESSAGE}`);
  if ((ms as number) < MIN_TIMESTAMP_MS) fail("timestamp", "timestamp must not be before 2000-01-01T00:00:00Z");
  if ((ms as number) > now.getTime() + MAX_FUTURE_MS)
    fail("timestamp", "timestamp must not be more than 24 hours in the future");
  return new Date(ms as number);
}

function check(raw: unknown, now: Date): MetricInput {
  if (!isObject(raw)) fail("(metric)", "a metric must be a JSON object");
  const r = raw as Record<string, unknown>;
  // A key that is no field would be dropped without a word: refused, naming it.
  const unknown = unknownItemKey(r, METRIC_KEYS);
  if (unknown) fail(unknown.field, unknown.message);
  const t = r.type;
  if (t === undefined || t === null || t === "") fail("type", `type is required: one of ${INPUT_TYPES.join(", ")}`);
  if (typeof t !== "string" || !INPUT_TYPES.includes(t as InputType))
    fail("type", `type must be one of ${INPUT_TYPES.join(", ")}`);
  const type = t as InputType;
  const name = checkName(r.name);
  const value = r.value;
  if (value === undefined || value === null) fail("value", "value is required");
  if (typeof value !== "number" || !Number.isFinite(value)) fail("value", "value must be a finite JSON number");
  if (type !== "measurement" && (value as number) < 0)
    fail(
      "value",
      `a counter change must be non-negative (use type '${type === "increment" ? "decrement" : "increment"}' for the other direction)`,
    );
  let unit: string | null = null;
  if (r.unit !== undefined && r.unit !== null && r.unit !== "") {
    if (typeof r.unit !== "string") fail("unit", "unit must be a string");
    if ((r.unit as string).length > MAX_UNIT_LENGTH || !isPlainText(r.unit as string))
      fail("unit", `unit must be at most ${MAX_UNIT_LENGTH} characters without control characters`);
    unit = r.unit as string;
  }
  const timestamp = checkTimestamp(r.timestamp, now);
  const tags = checkTags(r.tags);
  let id: string | null = null;
  if (r.id !== undefined && r.id !== null) id = clientUuid(r.id) ?? fail("id", CLIENT_ID_MESSAGE);
  // -0 would read back as a decrement of 0 from a signed column; store +0.
  return {
    type,
    metricType: metricTypeOf(type),
    op: opOf(type),
    name,
    value: (value as number) === 0 ? 0 : (value as number),
    unit,
    timestamp,
    tags,
    id,
  };
}

/** Checks one metric in the single-metric shape. */
export function checkMetric(raw: unknown, now: Date): MetricCheck {
  try {
    return { ok: true, metric: check(raw, now) };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, error: err.refusal };
    throw err;
  }
}

/**
 * The rules `checkMetric` enforces, as a zod schema for the OpenAPI document (bind's `rules`, like
 * events' `eventRules`): the hand-written check above stays the hot path, and
 * test/metrics/metric-rules.test.ts checks that both give the same verdict on what this states.
 */
export const metricRules = alsoRefused(
  z.strictObject({
    id: z.string().regex(UUID).meta({ format: "uuid" }).nullable().optional(),
    type: z.enum(INPUT_TYPES as [InputType, ...InputType[]]),
    name: z
      .string()
      .max(MAX_NAME_LENGTH)
      .regex(new RegExp(textPattern(true, true, "$"))),
    value: z.number(),
    unit: z
      .string()
      .max(MAX_UNIT_LENGTH)
      .regex(new RegExp(textPattern(true, false)))
      .nullable()
      .optional(),
    timestamp: timestampRule.nullable().optional(),
    tags: z.record(z.string(), z.unknown()).nullable().optional(),
  }),
  "value below 0 with type increment or decrement",
  `tags: at most ${MAX_TAGS}, keys of 1-${MAX_TAG_KEY_LENGTH} characters without control characters, values strings (at most ${MAX_TAG_VALUE_LENGTH} characters), numbers or booleans`,
);

export const metricBatchRules = z.object({
  metrics: z.array(batchItem("a metric (POST .../metrics' body)")).min(1).max(BATCH_MAX),
});
