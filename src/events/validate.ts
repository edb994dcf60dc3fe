import type { ClaimKeyKind } from "./claims.js";
import { IngestEventRequestSchema } from "../../gen/vigil/v1/events_pb.js";
import type { NewEvent } from "./pipeline.js";
import { itemKeys, jsonProblem, problemField, unknownItemKey } from "../shared/json.js";
import { DAY_MS, parseTimestampMs, TIMESTAMP_MESSAGE } from "../shared/time.js";
import { CLIENT_ID_MESSAGE, clientUuid, UUID } from "../shared/ids.js";
import { textPattern } from "../shared/text.js";
import { alsoRefused, batchItem } from "../shared/validate.js";
import { z } from "zod";

// Validation of one incoming event (single route, batch item, or another feature's input).
// Pure: takes the receive time, returns either the event or a {code, field, message} refusal.

/** `$` types SDKs may send; `$measure`, `$increment`, `$decrement` come only from metrics routes. */
const CLIENT_RESERVED_TYPES = new Set(["$page", "$identify", "$group", "$error"]);
export const MAX_EVENT_BYTES = 1024 * 1024;
/** Events per batch (more: 413). */
export const MAX_BATCH_EVENTS = 1000;
const MAX_TYPE_LENGTH = 200;
const MAX_ID_LENGTH = 256;
/** Oldest and newest accepted timestamps: ids carry the time (UUIDv7), partitions are weekly. */
export const MIN_TIMESTAMP_MS = Date.UTC(2000, 0, 1);
export const MAX_FUTURE_MS = DAY_MS;

export interface EventRefusal {
  code: "validation_failed" | "reserved_type" | "event_too_large";
  field: string;
  message: string;
}

/** An event's keys: the fields of IngestEventRequest (a batch item has the single-event shape). */
const EVENT_KEYS = itemKeys(IngestEventRequestSchema);

/**
 * checkEvent's rules as a zod schema, from the same constants: what the OpenAPI document states for
 * an event (bind's `rules`). checkEvent stays hand-written (the hot path; no zod per event), and
 * test/events/event-rules.test.ts holds the two to the same verdicts. Not stated: the timestamp's
 * range (2000-01-01 to 24 hours ahead), `$identify`/`$group` needing userId/groupId, the size limit.
 */
const reserved = [...CLIENT_RESERVED_TYPES].map((t) => t.slice(1)).join("|");
const EVENT_TYPE_PATTERN = `^(\\$(${reserved})|[^$\\s\\u0000][^\\u0000]*|\\s+[^\\s\\u0000][^\\u0000]*)$`;
const optionalText = z
  .string()
  .max(MAX_ID_LENGTH)
  .regex(new RegExp(textPattern(false, false)))
  .nullable()
  .optional();
const jsonObject = z.record(z.string(), z.unknown()).nullable().optional();
/**
 * A point's time as given (events and metrics): RFC 3339, and within a range JSON Schema cannot state
 * (its upper end moves with the clock).
 */
export const timestampRule = alsoRefused(
  z.string().meta({ format: "date-time" }),
  "timestamp before 2000-01-01T00:00:00Z or more than 24 hours after the server's clock",
);

export const eventRules = z.strictObject({
  id: z.string().regex(UUID).meta({ format: "uuid" }).nullable().optional(),
  type: z.string().min(1).max(MAX_TYPE_LENGTH).regex(new RegExp(EVENT_TYPE_PATTERN)),
  timestamp: timestampRule.nullable().optional(),
  userId: optionalText,
  groupId: optionalText,
  source: optionalText,
  data: jsonObject,
  context: jsonObject,
  tags: jsonObject,
});

/** A batch's body as checked (sizes: IngestEventBatch's handler). */
export const eventBatchRules = z.object({
  events: z.array(batchItem("an event (POST /v1/events' body)")).min(1).max(MAX_BATCH_EVENTS),
});

export type EventCheck = { ok: true; event: NewEvent } | { ok: false; error: EventRefusal };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const refuse = (field: string, message: string, code: EventRefusal["code"] = "validation_failed"): EventCheck => ({
  ok: false,
  error: { code, field, message },
});

class Refused {
  constructor(readonly check: EventCheck) {}
}

function optionalId(raw: Record<string, unknown>, field: string): string | null {
  const v = raw[field];
  if (v === undefined || v === null || v === "") return null;
  if (typeof v !== "string") throw new Refused(refuse(field, `${field} must be a string`));
  if (v.length > MAX_ID_LENGTH)
    throw new Refused(refuse(field, `${field} must be at most ${MAX_ID_LENGTH} characters`));
  return v;
}

function objectField(raw: Record<string, unknown>, field: string): Record<string, unknown> {
  const v = raw[field];
  if (v === undefined || v === null) return {};
  if (!isPlainObject(v)) throw new Refused(refuse(field, `${field} must be a JSON object`));
  return v;
}

/**
 * JSON.stringify(JSON.parse(text)) takes at most 5.25 times the UTF-8 bytes of `text`: whitespace
 * and repeated keys vanish; string escapes never grow (a character that stringify escapes had to be
 * escaped in the text too, and \uXXXX may become the character itself; an invalid UTF-8 byte read as
 * U+FFFD grows 3x); the largest growth is a number such as 1e20 (4 bytes) printed as
 * 100000000000000000000 (21). So no part of a parsed body of n bytes serializes to more than 6n.
 */
export const REPARSE_GROWTH = 6;

/**
 * Checks one event in the single-event shape. `sizeBound` is an upper bound of its serialized size
 * when the caller knows one (see REPARSE_GROWTH): the exact size is measured only above the limit.
 */
/**
 * `keyKind`: the claim namespace of the caller (claims.ts: a publishable key's client ids are its own);
 * `sizeBound`: no event of the body can serialize to more (skips the size check below it).
 */
export function checkEvent(raw: unknown, now: Date, keyKind: ClaimKeyKind, sizeBound?: number): EventCheck {
  if (!isPlainObject(raw)) return refuse("(event)", "an event must be a JSON object");
  // A key that is no field would be dropped without a word (Segment's `properties`): refused.
  const unknown = unknownItemKey(raw, EVENT_KEYS);
  if (unknown) return refuse(unknown.field, unknown.message);
  // One walk over the whole event: text PostgreSQL can store, finite numbers, bounded depth.
  const problem = jsonProblem(raw);
  if (problem) {
    const field = problemField("", problem) || "(event)";
    return refuse(field, `${field} ${problem.message}`);
  }
  const bytes = sizeBound !== undefined && sizeBound <= MAX_EVENT_BYTES ? 0 : Buffer.byteLength(JSON.stringify(raw));
  if (bytes > MAX_EVENT_BYTES)
    return refuse("(event)", `event is ${bytes} bytes serialized; the limit is ${MAX_EVENT_BYTES}`, "event_too_large");

  const type = raw.type;
  if (type === undefined || type === null || type === "") return refuse("type", "type is required");
  if (typeof type !== "string") return refuse("type", "type must be a string");
  if (type.trim() === "") return refuse("type", "type is required");
  if (type.length > MAX_TYPE_LENGTH) return refuse("type", `type must be at most ${MAX_TYPE_LENGTH} characters`);
  if (type.startsWith("$") && !CLIENT_RESERVED_TYPES.has(type)) {
    return refuse(
      "type",
      `event type '${type}' is reserved: types starting with '$' are refused except ${[...CLIENT_RESERVED_TYPES].join(", ")}`,
      "reserved_type",
    );
  }

  let userId: string | null, groupId: string | null, source: string | null;
  let data: Record<string, unknown>, context: Record<string, unknown>, tags: Record<string, unknown>;
  try {
    userId = optionalId(raw, "userId");
    groupId = optionalId(raw, "groupId");
    source = optionalId(raw, "source");
    data = objectField(raw, "data");
    context = objectField(raw, "context");
    tags = objectField(raw, "tags");
  } catch (err) {
    if (err instanceof Refused) return err.check;
    throw err;
  }

  // The client id (claims.ts): absent or null means none; anything but a UUID is refused.
  let id: string | undefined;
  if (raw.id !== undefined && raw.id !== null) {
    id = clientUuid(raw.id);
    if (id === undefined) return refuse("id", CLIENT_ID_MESSAGE);
  }

  if (type === "$identify" && userId === null) return refuse("userId", "a $identify event needs a userId");
  if (type === "$group" && groupId === null) return refuse("groupId", "a $group event needs a groupId");

  let timestamp = now;
  const ts = raw.timestamp;
  if (ts !== undefined && ts !== null) {
    if (typeof ts !== "string") return refuse("timestamp", `timestamp ${TIMESTAMP_MESSAGE}`);
    const ms = parseTimestampMs(ts);
    if (ms === undefined) return refuse("timestamp", `timestamp ${TIMESTAMP_MESSAGE}`);
    if (ms < MIN_TIMESTAMP_MS) return refuse("timestamp", "timestamp must not be before 2000-01-01T00:00:00Z");
    if (ms > now.getTime() + MAX_FUTURE_MS)
      return refuse("timestamp", "timestamp must not be more than 24 hours in the future");
    timestamp = new Date(ms);
  }

  const event: NewEvent = { type, timestamp, userId, groupId, source, data, context, tags };
  if (id !== undefined) event.claim = { kind: "event", keyKind, id };
  return { ok: true, event };
}
