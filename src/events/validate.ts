import type { NewEvent } from "../shared/ingest.js";

// Validation of one incoming event (single route, batch item, or another feature's input).
// Pure: takes the receive time, returns either the event or a {code, field, message} refusal.

/** `$` types SDKs may send; `$measure`, `$increment`, `$decrement` come only from metrics routes. */
export const CLIENT_RESERVED_TYPES = new Set(["$page", "$identify", "$group", "$error"]);
export const MAX_EVENT_BYTES = 1024 * 1024;
export const MAX_TYPE_LENGTH = 200;
export const MAX_ID_LENGTH = 256;
/** Oldest and newest accepted timestamps: ids carry the time (UUIDv7), partitions are weekly. */
export const MIN_TIMESTAMP_MS = Date.UTC(2000, 0, 1);
export const MAX_FUTURE_MS = 24 * 3600_000;

export interface EventRefusal {
  code: "validation_failed" | "reserved_type" | "event_too_large";
  field: string;
  message: string;
}

export type EventCheck = { ok: true; event: NewEvent } | { ok: false; error: EventRefusal };

const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)$/i;

/**
 * Parses an ISO 8601 date-time that carries a timezone (`Z` or an offset). Returns epoch ms, or
 * undefined when the text is not such a time (no timezone, impossible date, garbage).
 */
export function parseZonedTime(text: string): number | undefined {
  const m = ISO.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = "0", frac = "", zone] = m;
  const year = +y, month = +mo, day = +d, hour = +h, minute = +mi, second = +s;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  // Date.UTC maps years 0-99 to 1900-1999: set the full year explicitly.
  const at = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, Math.floor(Number(`0.${frac || "0"}`) * 1000)));
  at.setUTCFullYear(year, month - 1, day);
  const local = at.getTime();
  if (new Date(local).getUTCDate() !== day) return undefined; // 2024-02-30 and the like
  let offsetMin = 0;
  if (zone.toUpperCase() !== "Z") {
    const digits = zone.slice(1).replace(":", "");
    const oh = +digits.slice(0, 2), om = digits.length > 2 ? +digits.slice(2) : 0;
    if (oh > 23 || om > 59) return undefined;
    offsetMin = (zone[0] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  return local - offsetMin * 60_000;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const refuse = (field: string, message: string, code: EventRefusal["code"] = "validation_failed"): EventCheck => ({ ok: false, error: { code, field, message } });

class Refused {
  constructor(readonly check: EventCheck) {}
}

function optionalId(raw: Record<string, unknown>, field: string): string | null {
  const v = raw[field];
  if (v === undefined || v === null || v === "") return null;
  if (typeof v !== "string") throw new Refused(refuse(field, `${field} must be a string`));
  if (v.length > MAX_ID_LENGTH) throw new Refused(refuse(field, `${field} must be at most ${MAX_ID_LENGTH} characters`));
  return v;
}

function objectField(raw: Record<string, unknown>, field: string): Record<string, unknown> {
  const v = raw[field];
  if (v === undefined || v === null) return {};
  if (!isPlainObject(v)) throw new Refused(refuse(field, `${field} must be a JSON object`));
  return v;
}

export const MAX_DEPTH = 64;
const BAD_TEXT = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why a JSON value cannot be stored (PostgreSQL text and jsonb refuse NUL characters and lone
 * surrogates; very deep nesting exhausts parsers; numbers must be finite), or undefined when it can.
 */
export function unstorable(v: unknown, depth = 0): string | undefined {
  if (typeof v === "string") return BAD_TEXT.test(v) ? "contains a NUL character or invalid Unicode" : undefined;
  // JSON.parse reads 1e400 as Infinity, which JSON (and jsonb) cannot hold.
  if (typeof v === "number") return Number.isFinite(v) ? undefined : "contains a number beyond the range of a 64-bit float";
  if (typeof v !== "object" || v === null) return undefined;
  if (depth >= MAX_DEPTH) return `is nested deeper than ${MAX_DEPTH} levels`;
  if (Array.isArray(v)) {
    for (const x of v) {
      const why = unstorable(x, depth + 1);
      if (why) return why;
    }
    return undefined;
  }
  for (const k in v) {
    if (BAD_TEXT.test(k)) return "contains a NUL character or invalid Unicode";
    const why = unstorable((v as Record<string, unknown>)[k], depth + 1);
    if (why) return why;
  }
  return undefined;
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
export function checkEvent(raw: unknown, now: Date, sizeBound?: number): EventCheck {
  if (!isPlainObject(raw)) return refuse("(event)", "an event must be a JSON object");
  const why = unstorable(raw);
  if (why) return refuse("(event)", `event ${why}`);
  const bytes = sizeBound !== undefined && sizeBound <= MAX_EVENT_BYTES ? 0 : Buffer.byteLength(JSON.stringify(raw));
  if (bytes > MAX_EVENT_BYTES) return refuse("(event)", `event is ${bytes} bytes serialized; the limit is ${MAX_EVENT_BYTES}`, "event_too_large");

  const type = raw.type;
  if (type === undefined || type === null || type === "") return refuse("type", "type is required");
  if (typeof type !== "string") return refuse("type", "type must be a string");
  if (type.trim() === "") return refuse("type", "type is required");
  if (type.length > MAX_TYPE_LENGTH) return refuse("type", `type must be at most ${MAX_TYPE_LENGTH} characters`);
  if (type.startsWith("$") && !CLIENT_RESERVED_TYPES.has(type)) {
    return refuse("type", `event type '${type}' is reserved: types starting with '$' are refused except ${[...CLIENT_RESERVED_TYPES].join(", ")}`, "reserved_type");
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

  if (type === "$identify" && userId === null) return refuse("userId", "a $identify event needs a userId");
  if (type === "$group" && groupId === null) return refuse("groupId", "a $group event needs a groupId");

  let timestamp = now;
  const ts = raw.timestamp;
  if (ts !== undefined && ts !== null) {
    if (typeof ts !== "string") return refuse("timestamp", "timestamp must be an ISO 8601 string");
    const ms = parseZonedTime(ts);
    if (ms === undefined) return refuse("timestamp", "timestamp must be an ISO 8601 date-time with a timezone (Z or an offset such as +02:00)");
    if (ms < MIN_TIMESTAMP_MS) return refuse("timestamp", "timestamp must not be before 2000-01-01T00:00:00Z");
    if (ms > now.getTime() + MAX_FUTURE_MS) return refuse("timestamp", "timestamp must not be more than 24 hours in the future");
    timestamp = new Date(ms);
  }

  return {
    ok: true,
    event: {
      type,
      timestamp,
      userId,
      groupId,
      source,
      data,
      context,
      tags,
    },
  };
}
