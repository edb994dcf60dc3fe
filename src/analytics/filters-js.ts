import { EVENT_RECORD, type EventRecord } from "../events/record.js";
import { assertNever } from "../shared/never.js";
import { daysFromCivil } from "../shared/time.js";
import type { Field } from "./fields.js";
import type { Condition, Node, Scalar } from "./filters.js";

// A filter tree evaluated on one event record in JS (pure), with exactly the semantics of its SQL
// (compile.ts): webhooks decide with it whether an event is delivered (src/webhooks/triggers.ts).
// test/webhooks/filters.test.ts checks it against the SQL path on random events and filters.
//
// The SQL rules it follows, per compile.ts:
// - A JSON field is `column #> path` with JSON null read as missing; a path segment indexes an
//   array when PostgreSQL's strtol reads all of it as an int (negative counts from the end).
// - equals/in compare JSON values by type (1 is not "1"; 1 = 1.0); a text column only equals
//   strings, a time column compares instants.
// - Text operators read JSON strings only (a number never contains anything), case-sensitively.
// - gt/gte/lt/lte with a number compare JSON numbers only; with a timestamp they compare a time
//   column, or a string that analytics_try_timestamptz (2000_analytics.sql) reads as one.
// - Negations are complements (`NOT COALESCE(x, FALSE)`): a missing field matches not_equals.
// SQL's NULL needs no third value: no negation wraps a group and AND/OR are monotone, so NULL is
// false here (as in blocks/eval.ts).

type Json = unknown;

const FIELD_OF_COLUMN: ReadonlyMap<string, keyof EventRecord> = new Map(
  EVENT_RECORD.map((f) => [f.column, f.field as keyof EventRecord]),
);

const INT_MIN = -(2n ** 31n);
const INT_MAX = 2n ** 31n - 1n;

/** PostgreSQL's `#>` step into an array: the element, or undefined (not an int, out of range). */
function arrayStep(a: Json[], seg: string): Json {
  if (!/^-?[0-9]+$/.test(seg)) return undefined;
  const i = BigInt(seg);
  if (i > INT_MAX || i < INT_MIN) return undefined;
  const n = BigInt(a.length);
  const k = i >= 0n ? i : i === INT_MIN || -i > n ? -1n : n + i;
  return k >= 0n && k < n ? a[Number(k)] : undefined;
}

/** The JSON value at the field's path (`NULLIF(col #> path, 'null')`): undefined when missing or null. */
function jsonAt(e: EventRecord, f: Extract<Field, { kind: "json" }>): Json {
  let v: Json = e[f.column];
  for (const seg of f.path) {
    if (Array.isArray(v)) v = arrayStep(v, seg);
    else if (v !== null && typeof v === "object" && Object.hasOwn(v, seg)) v = (v as Record<string, Json>)[seg];
    else return undefined;
  }
  return v === null ? undefined : v;
}

/** A column field's value: text, a Date, or null. */
function columnAt(e: EventRecord, f: Extract<Field, { kind: "column" }>): string | Date | null {
  const name = FIELD_OF_COLUMN.get(f.column);
  const v = name === undefined ? null : e[name];
  return typeof v === "string" || v instanceof Date ? v : null;
}

/** The text of a string-valued field (textSql): null when it is not a JSON string / a null column. */
function textOf(e: EventRecord, f: Field): string | null {
  if (f.kind === "column") {
    const v = columnAt(e, f);
    return typeof v === "string" ? v : null;
  }
  const v = jsonAt(e, f);
  return typeof v === "string" ? v : null;
}

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const TRY_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/;
const USECS_PER_DAY = 86_400_000_000n;

/** C's rint (round half to even) of a double. */
function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Epoch microseconds of `analytics_try_timestamptz(text)`: its regex, then PostgreSQL's reading of
 * the text as timestamptz (years 1..9999 from the regex, real dates, hour 24 and second 60 allowed
 * while the time of day is at most 24:00:00, the fraction rounded to microseconds as PostgreSQL
 * does, offsets up to 15:59), null where the SQL answers NULL.
 */
function tryTimestampMicros(text: string): bigint | null {
  const m = TRY_TIMESTAMP.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (year < 1 || month < 1 || month > 12 || day < 1) return null;
  if (day > (month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1])) return null;
  // PostgreSQL reads the fraction with strtod and rounds it with rint (ParseFractionalSecond).
  const fsec = m[7] === undefined ? 0 : rint(Number(`0${m[7]}`) * 1_000_000);
  if (minute > 59 || second > 60) return null;
  const timeOfDay = BigInt((hour * 60 + minute) * 60 + second) * 1_000_000n + BigInt(fsec);
  if (timeOfDay > USECS_PER_DAY) return null;
  let offsetSec = 0;
  if (m[8] !== undefined) {
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 15 || om > 59) return null;
    offsetSec = (m[8] === "-" ? -1 : 1) * (oh * 3600 + om * 60);
  }
  return BigInt(daysFromCivil(year, month, day)) * USECS_PER_DAY + timeOfDay - BigInt(offsetSec) * 1_000_000n;
}

/** A validated filter time value (canonical UTC text) in epoch microseconds, as `$n::timestamptz` reads it. */
const valueMicros = (v: string): bigint => tryTimestampMicros(v) ?? 0n;

const dateMicros = (d: Date): bigint => BigInt(d.getTime()) * 1000n;

/** The instant of a field for a timestamp comparison: a time column, else a string read as a timestamp. */
function instantOf(e: EventRecord, f: Field): bigint | null {
  if (f.kind === "column" && f.valueType === "time") {
    const v = columnAt(e, f);
    return v instanceof Date ? dateMicros(v) : null;
  }
  const t = textOf(e, f);
  return t === null ? null : tryTimestampMicros(t);
}

function equalsAny(e: EventRecord, f: Field, vs: Scalar[]): boolean {
  if (f.kind === "column") {
    const v = columnAt(e, f);
    if (v === null) return false;
    if (v instanceof Date) {
      const at = dateMicros(v);
      return vs.some((x) => typeof x === "string" && valueMicros(x) === at);
    }
    return vs.some((x) => x === v);
  }
  const v = jsonAt(e, f);
  return vs.some((x) => x === v);
}

const CMP = {
  gt: (a: number | bigint, b: number | bigint) => a > b,
  gte: (a: number | bigint, b: number | bigint) => a >= b,
  lt: (a: number | bigint, b: number | bigint) => a < b,
  lte: (a: number | bigint, b: number | bigint) => a <= b,
} as const;

function compare(e: EventRecord, f: Field, op: keyof typeof CMP, value: number | string): boolean {
  if (typeof value === "number") {
    if (f.kind === "column") return false;
    const v = jsonAt(e, f);
    return typeof v === "number" && CMP[op](v, value);
  }
  const at = instantOf(e, f);
  return at !== null && CMP[op](at, valueMicros(value));
}

/** Every operator (filters.ts lists them); a missing one is a compile error (assertNever). */
function condition(e: EventRecord, c: Condition): boolean {
  const f = c.field;
  const text = (test: (s: string) => boolean) => {
    const t = textOf(e, f);
    return t !== null && test(t);
  };
  switch (c.op) {
    case "equals":
      return equalsAny(e, f, [c.value]);
    case "not_equals":
      return !equalsAny(e, f, [c.value]);
    case "in":
      return equalsAny(e, f, c.value);
    case "not_in":
      return !equalsAny(e, f, c.value);
    case "contains":
      return text((s) => s.includes(c.value));
    case "not_contains":
      return !text((s) => s.includes(c.value));
    case "starts_with":
      return text((s) => s.startsWith(c.value));
    case "not_starts_with":
      return !text((s) => s.startsWith(c.value));
    case "ends_with":
      return text((s) => s.endsWith(c.value));
    case "not_ends_with":
      return !text((s) => s.endsWith(c.value));
    case "exists":
    case "not_exists": {
      const present = f.kind === "column" ? columnAt(e, f) !== null : jsonAt(e, f) !== undefined;
      return c.op === "exists" ? present : !present;
    }
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      return compare(e, f, c.op, c.value);
    default:
      return assertNever(c, "operator");
  }
}

/** Whether the event passes the filter (every event when there is none; an empty group constrains nothing). */
export function matchesFilter(n: Node | null, e: EventRecord): boolean {
  if (!n) return true;
  if (n.kind === "cond") return condition(e, n);
  if (n.children.length === 0) return true;
  return n.kind === "and" ? n.children.every((c) => matchesFilter(c, e)) : n.children.some((c) => matchesFilter(c, e));
}
