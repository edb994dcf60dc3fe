import { badRequest } from "../shared/errors.js";
import { canonicalTimestamp, parseTimestampParts, TIMESTAMP_MESSAGE } from "../shared/time.js";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../shared/time.js";

// Time: the shared timestamp grammar (src/shared/time.ts), inclusive windows, UTC buckets and the
// decomposition of a window into whole rollup buckets plus raw edges. All pure.

export interface Instant {
  /** Milliseconds since the epoch. */
  ms: number;
  /** Sub-millisecond part in nanoseconds (0..999999), kept so that bounds stay exact. */
  subMsNanos: number;
  /** The instant as canonical UTC text (never the client's text), for PostgreSQL `$n::timestamptz`. */
  text: string;
}

/** Parses a timestamp of the one input grammar (src/shared/time.ts); null when it is not one. */
export function parseInstant(v: unknown): Instant | null {
  if (typeof v !== "string") return null;
  const p = parseTimestampParts(v);
  return p ? { ms: p.ms, subMsNanos: p.subMsNanos, text: canonicalTimestamp(p) } : null;
}

export interface Window {
  start: Instant;
  end: Instant;
}

function instantProblem(v: unknown): string | null {
  if (v === undefined || v === null || v === "") return "is required";
  if (typeof v !== "string") return "must be a string";
  return parseInstant(v) ? null : TIMESTAMP_MESSAGE;
}

/**
 * Validates `time`; required where a window applies. Returns null when absent and optional; a `time`
 * that is given needs both bounds, also where it is optional (`{}` is not "no window").
 */
export function parseWindow(time: { start?: string; end?: string } | undefined, required: boolean): Window | null {
  if (!time || (required && time.start === undefined && time.end === undefined)) {
    if (!required) return null;
    throw badRequest("time: start and end are required", [{ field: "time", message: "is required" }]);
  }
  const details: { field: string; message: string }[] = [];
  const ps = instantProblem(time.start);
  const pe = instantProblem(time.end);
  if (ps) details.push({ field: "time.start", message: ps });
  if (pe) details.push({ field: "time.end", message: pe });
  if (details.length)
    throw badRequest(`invalid time: ${details.map((d) => `${d.field} ${d.message}`).join("; ")}`, details);
  const start = parseInstant(time.start)!;
  const end = parseInstant(time.end)!;
  if (start.ms > end.ms || (start.ms === end.ms && start.subMsNanos > end.subMsNanos)) {
    throw badRequest("time.start must not be after time.end", [{ field: "time", message: "start is after end" }]);
  }
  return { start, end };
}

export type Interval = "minute" | "hour" | "day" | "week" | "month";
export const INTERVALS: Interval[] = ["minute", "hour", "day", "week", "month"];

/** Start of the UTC bucket containing `ms` (weeks start Monday 00:00 UTC, months on the 1st). */
export function truncate(ms: number, unit: Interval): number {
  switch (unit) {
    case "minute":
      return Math.floor(ms / MINUTE_MS) * MINUTE_MS;
    case "hour":
      return Math.floor(ms / HOUR_MS) * HOUR_MS;
    case "day":
      return Math.floor(ms / DAY_MS) * DAY_MS;
    case "week": {
      const day = Math.floor(ms / DAY_MS) * DAY_MS;
      const dow = (new Date(day).getUTCDay() + 6) % 7; // Monday = 0
      return day - dow * DAY_MS;
    }
    case "month": {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

/** Start of the bucket after the one starting at `ms`. */
export function nextBucket(ms: number, unit: Interval): number {
  switch (unit) {
    case "minute":
      return ms + MINUTE_MS;
    case "hour":
      return ms + HOUR_MS;
    case "day":
      return ms + DAY_MS;
    case "week":
      return ms + 7 * DAY_MS;
    case "month": {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

/** Every bucket start of the window, in order (zero buckets included by the caller). */
export function bucketStarts(w: Window, unit: Interval, max: number): number[] {
  const out: number[] = [];
  for (let b = truncate(w.start.ms, unit); b <= w.end.ms; b = nextBucket(b, unit)) {
    out.push(b);
    if (out.length > max)
      throw badRequest(`the window has more than ${max} ${unit} buckets; use a larger interval`, [
        { field: "interval", message: `more than ${max} buckets` },
      ]);
  }
  return out;
}

export type Grain = "minute" | "hour" | "day";
const GRAIN_MS: Record<Grain, number> = { minute: MINUTE_MS, hour: HOUR_MS, day: DAY_MS };
const GRAINS: Grain[] = ["day", "hour", "minute"];

/** Half-open [from, to) ranges in ms. */
export interface Piece {
  grain: Grain | "raw";
  from: number;
  to: number;
}

/**
 * Splits an inclusive window into whole rollup buckets (largest grain first, never coarser than
 * `maxGrain`) and raw edges, so that summing rollups over the buckets and counting raw rows over
 * the edges gives exactly the raw count. Pieces are half-open [from, to) in ms; the caller also
 * bounds raw pieces by the exact window, so sub-millisecond bounds stay exact. A rollup bucket is
 * used only when every instant in it lies inside the window.
 */
export function decompose(w: Window, maxGrain: Grain): Piece[] {
  const lo = w.start.ms;
  const hi = w.end.ms + 1;
  const gLo = w.start.ms + (w.start.subMsNanos > 0 ? 1 : 0);
  const gHi = w.end.ms + (w.end.subMsNanos >= 999_000 ? 1 : 0);
  const allowed = GRAINS.slice(GRAINS.indexOf(maxGrain));
  const pieces: Piece[] = [];
  const push = (p: Piece): void => {
    if (p.from >= p.to) return;
    const last = pieces[pieces.length - 1];
    if (last && last.grain === "raw" && p.grain === "raw" && last.to === p.from) last.to = p.to;
    else pieces.push(p);
  };
  const split = (from: number, to: number, gi: number): void => {
    if (from >= to) return;
    if (gi >= allowed.length) return push({ grain: "raw", from, to });
    const g = GRAIN_MS[allowed[gi]];
    const a = Math.ceil(from / g) * g;
    const b = Math.floor(to / g) * g;
    if (a >= b) return split(from, to, gi + 1);
    split(from, a, gi + 1);
    push({ grain: allowed[gi], from: a, to: b });
    split(b, to, gi + 1);
  };
  if (gLo >= gHi) {
    push({ grain: "raw", from: lo, to: hi });
    return pieces;
  }
  push({ grain: "raw", from: lo, to: gLo });
  split(gLo, gHi, 0);
  push({ grain: "raw", from: gHi, to: hi });
  return pieces;
}
