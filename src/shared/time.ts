import { z } from "zod";

// Durations in milliseconds: the one definition (UTC days, no leap seconds).
const SECOND_MS = 1_000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;
export const WEEK_MS = 7 * DAY_MS;

// The one timestamp grammar of every input, on every route (decisions.md "Time values"):
// RFC 3339 `date-time` with a required offset.
//
//   YYYY-MM-DD ("T" | "t") hh:mm:ss [.fraction] ("Z" | "z" | ("+" | "-") hh:mm)
//
// * Seconds are required; the fraction has 1 to 9 digits (kept to the nanosecond where a caller
//   needs it, e.g. analytics bounds; stored times keep milliseconds).
// * Real calendar dates only (2024-02-30 is refused, 2024-02-29 is fine); years 0001-9999, and the
//   instant in UTC must also fall within 0001-01-01 .. 9999-12-31.
// * Offsets 00:00 to 23:59 either way (RFC 3339 `time-numoffset`); `-00:00` is UTC.
// * Leap seconds: `:60` is accepted only where one can occur, at 23:59:60 UTC on the last day of a
//   month, and is read as the last millisecond of that day (23:59:59.999Z, its fraction dropped):
//   the second stays on its own day and sorts after every whole second of it (as stored times have
//   milliseconds). `:60` anywhere else is refused.
// * No space instead of `T`, no `+0200` or `+02`, no missing seconds, no surrounding whitespace.
// Output is always UTC with `Z` (`toISOString()`).
//
// Hand-written over char codes: this runs once per ingested event, and a regex plus Date.UTC cost
// more than these few comparisons.

export interface ParsedTime {
  /** Milliseconds since the epoch. */
  ms: number;
  /** The fraction beyond the millisecond, in nanoseconds (0..999999). */
  subMsNanos: number;
}

export const TIMESTAMP_MESSAGE =
  "must be an RFC 3339 timestamp with an offset, such as 2024-05-06T10:00:00Z or 2024-05-06T12:00:00.5+02:00";

/**
 * The grammar's shape as a regular expression (ECMAScript and RE2 alike), for the descriptors'
 * protovalidate rules (src/openapi/proto-validate.ts), where a format cannot name this parser: each
 * text the parser accepts matches it; what it matches and the parser refuses is a date the calendar
 * lacks (2024-02-30, year 0000), a leap second where none can occur, or an instant outside years
 * 0001-9999 in UTC. test/foundation/time.test.ts holds it to the parser.
 */
export const TIMESTAMP_SHAPE =
  "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)" +
  "(\\.[0-9]{1,9})?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";

/** 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z. */
const MIN_MS = -62_135_596_800_000;
const END_MS = 253_402_300_800_000;

const digit = (c: number) => c - 48;
const isDigit = (c: number) => c >= 48 && c <= 57;

/** Two digits at `i` as a number, or -1. */
function two(s: string, i: number): number {
  const a = s.charCodeAt(i),
    b = s.charCodeAt(i + 1);
  return isDigit(a) && isDigit(b) ? digit(a) * 10 + digit(b) : -1;
}

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysIn = (y: number, m: number) => (m === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[m - 1]);

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** Parses a timestamp of the grammar above; undefined when the text is not one. */
export function parseTimestampParts(text: string): ParsedTime | undefined {
  const n = text.length;
  if (n < 20 || n > 35) return undefined;
  const y0 = two(text, 0),
    y1 = two(text, 2);
  if (y0 < 0 || y1 < 0 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45) return undefined;
  const year = y0 * 100 + y1,
    month = two(text, 5),
    day = two(text, 8);
  const t = text.charCodeAt(10);
  if (t !== 84 && t !== 116) return undefined; // T t
  if (text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return undefined; // :
  const hour = two(text, 11),
    minute = two(text, 14),
    second = two(text, 17);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return undefined;

  let i = 19;
  let nanos = 0;
  if (text.charCodeAt(i) === 46) {
    // .fraction: 1-9 digits, scaled to nanoseconds
    i++;
    const start = i;
    while (i < n && isDigit(text.charCodeAt(i))) {
      if (i - start < 9) nanos = nanos * 10 + digit(text.charCodeAt(i));
      i++;
    }
    const len = i - start;
    if (len === 0 || len > 9) return undefined;
    for (let k = len; k < 9; k++) nanos *= 10;
  }

  let offsetMin: number;
  const z = text.charCodeAt(i);
  if (z === 90 || z === 122) {
    // Z z
    if (i + 1 !== n) return undefined;
    offsetMin = 0;
  } else if (z === 43 || z === 45) {
    // + -
    if (i + 6 !== n || text.charCodeAt(i + 3) !== 58) return undefined;
    const oh = two(text, i + 1),
      om = two(text, i + 4);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return undefined;
    offsetMin = (z === 45 ? -1 : 1) * (oh * 60 + om);
  } else return undefined;

  const leap = second === 60;
  let ms =
    daysFromCivil(year, month, day) * DAY_MS + ((hour * 60 + minute - offsetMin) * 60 + (leap ? 59 : second)) * 1000;
  if (leap) {
    // Only 23:59:60 UTC on the last day of a month; read as the last millisecond of that day.
    const next = ms + 1000;
    if (next % DAY_MS !== 0 || new Date(next).getUTCDate() !== 1) return undefined;
    ms += 999;
    nanos = 0;
  } else {
    ms += Math.floor(nanos / 1_000_000);
    nanos %= 1_000_000;
  }
  if (ms < MIN_MS || ms >= END_MS) return undefined;
  return { ms, subMsNanos: nanos };
}

/** Epoch milliseconds of a timestamp (fraction beyond the millisecond dropped), or undefined. */
export function parseTimestampMs(text: string): number | undefined {
  return parseTimestampParts(text)?.ms;
}

/** The instant of a timestamp, or undefined when the text is not one. */
export function parseTimestamp(text: string): Date | undefined {
  const ms = parseTimestampParts(text)?.ms;
  return ms === undefined ? undefined : new Date(ms);
}

/**
 * The instant as UTC text with every fraction digit kept (`2024-05-06T08:00:00.123456789Z`): what
 * to hand PostgreSQL as `$n::timestamptz`, so that it never reads the client's text itself.
 */
export function canonicalTimestamp(p: ParsedTime): string {
  const iso = new Date(p.ms).toISOString(); // ...T08:00:00.123Z
  return p.subMsNanos === 0 ? iso : `${iso.slice(0, -1)}${String(p.subMsNanos).padStart(6, "0")}Z`;
}

/** A zod string of the grammar above, read as a Date. */
export const timestampSchema = z
  .string()
  .transform((v, ctx) => {
    const ms = parseTimestampMs(v);
    if (ms === undefined) {
      ctx.addIssue({ code: "custom", message: TIMESTAMP_MESSAGE });
      return z.NEVER;
    }
    return new Date(ms);
  })
  .meta({ format: "date-time" }); // RFC 3339, as the grammar above reads it (for the OpenAPI document)
