// Cron schedules of scheduled monitors (decisions.md: "Cron jobs and ping keys"), as pure functions.
// Five fields (minute hour day-of-month month day-of-week) in an IANA time zone. croner enumerates
// the matching local wall-clock times (it runs in UTC here, where no DST exists); which instant a
// wall time runs at is decided here, by one rule for every schedule: a local time skipped by a DST
// change runs at the first instant after the gap, a local time that occurs twice runs once, at its
// first occurrence. (croner's own zone mode applies that only to "fixed-time" jobs and lets interval
// jobs skip the gap and run twice in a repeated hour, which decisions.md does not.) docs/uptime.md.

import { Cron } from "croner";
import { LRUCache } from "lru-cache";

export interface Schedule {
  cron: string;
  /** An IANA zone name, as the runtime's Intl names it (`europe/berlin` is kept as `Europe/Berlin`). */
  timezone: string;
}

/** Why a schedule is refused: the field (`cron` or `timezone`) and a message naming the cron field. */
export interface ScheduleRefusal {
  field: "cron" | "timezone";
  message: string;
}

type FieldName = "minute" | "hour" | "day of month" | "month" | "day of week";

interface FieldSpec {
  name: FieldName;
  min: number;
  max: number;
  /** Largest step (croner's limit: the number of values of the field). */
  maxStep: number;
  names?: readonly string[];
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"] as const;
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;

const FIELDS: readonly FieldSpec[] = [
  { name: "minute", min: 0, max: 59, maxStep: 60 },
  { name: "hour", min: 0, max: 23, maxStep: 24 },
  { name: "day of month", min: 1, max: 31, maxStep: 31 },
  { name: "month", min: 1, max: 12, maxStep: 12, names: MONTHS },
  { name: "day of week", min: 0, max: 7, maxStep: 7, names: DAYS },
];

// One item of a list: `*`, `*/step`, `a`, `a-b`, `a-b/step` (a value is a number or, in month and
// day of week, a three-letter name). `a/step`, `?`, `L`, `W`, `#`, `+` and `@` macros are refused.
const ITEM = /^(?:\*(?:\/(\d+))?|([0-9]+|[a-z]{3})(?:-([0-9]+|[a-z]{3})(?:\/(\d+))?)?)$/i;

function valueOf(spec: FieldSpec, token: string): number | string {
  if (/^\d+$/.test(token)) {
    const n = Number(token);
    if (n < spec.min || n > spec.max) return `${spec.name}: ${token} is outside ${spec.min}-${spec.max}`;
    return n;
  }
  const i = spec.names?.indexOf(token.toLowerCase() as never) ?? -1;
  if (i < 0) return `${spec.name}: "${token}" is not a number${spec.names ? " or a name" : ""}`;
  return spec.name === "month" ? i + 1 : i;
}

/** The values a field allows, or the refusal message. */
function fieldValues(spec: FieldSpec, text: string): Set<number> | string {
  const out = new Set<number>();
  for (const item of text.split(",")) {
    const m = ITEM.exec(item);
    if (!m) {
      const hint = /^\d+\/\d+$/.test(item) ? ` (write a range with a step: ${item.split("/")[0]}-${spec.max}/...)` : "";
      return `${spec.name}: "${item}" is not a value, range, step or *${hint}`;
    }
    const [, starStep, from, to, rangeStep] = m;
    const stepText = starStep ?? rangeStep;
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1 || step > spec.maxStep) return `${spec.name}: the step ${stepText} is outside 1-${spec.maxStep}`;
    let lo = spec.min;
    let hi = spec.name === "day of week" ? 6 : spec.max;
    if (from !== undefined) {
      const a = valueOf(spec, from);
      if (typeof a === "string") return a;
      const b = to === undefined ? a : valueOf(spec, to);
      if (typeof b === "string") return b;
      if (b < a) return `${spec.name}: the range ${item} goes down`;
      [lo, hi] = [a, b];
    }
    for (let v = lo; v <= hi; v += step) out.add(spec.name === "day of week" && v === 7 ? 0 : v);
  }
  return out;
}

// Days in each month, February in a leap year: a schedule restricted to days no month it names has
// (`0 0 31 2 *`) would never run, and a monitor whose deadline never comes is refused.
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function checkCron(cron: string): string | null {
  const parts = cron.trim().split(/\s+/);
  if (parts[0].startsWith("@"))
    return `${parts[0]}: @ macros are not accepted; write the five fields (@daily is 0 0 * * *)`;
  if (parts.length !== 5 || parts[0] === "")
    return `a cron expression has five fields (minute hour day-of-month month day-of-week), not ${parts[0] === "" ? 0 : parts.length}`;
  const sets: Set<number>[] = [];
  for (const [i, spec] of FIELDS.entries()) {
    const r = fieldValues(spec, parts[i]);
    if (typeof r === "string") return r;
    sets.push(r);
  }
  // With a day of week of `*`, only the day of month decides (either-match needs both restricted).
  if (parts[4] === "*" && ![...sets[3]].some((mo) => [...sets[2]].some((d) => d <= MONTH_DAYS[mo - 1])))
    return "the days of month never occur in the months named: the schedule would never run";
  return null;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, f);
  }
  return f;
}

const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

function checkZone(zone: string): { zone: string } | string {
  if (!ZONE_NAME.test(zone)) return `"${zone}" is not an IANA time zone name (such as Europe/Berlin or UTC)`;
  try {
    return { zone: new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone };
  } catch {
    return `"${zone}" is not a known IANA time zone`;
  }
}

/** Validates a schedule (timezone defaults to UTC) and returns it with the zone's canonical name. */
export function parseSchedule(input: {
  cron: string;
  timezone?: string | null;
}): { ok: true; schedule: Schedule } | { ok: false; refusal: ScheduleRefusal } {
  const cronError = checkCron(input.cron);
  if (cronError !== null) return { ok: false, refusal: { field: "cron", message: cronError } };
  const z = checkZone(input.timezone ?? "UTC");
  if (typeof z === "string") return { ok: false, refusal: { field: "timezone", message: z } };
  return { ok: true, schedule: { cron: input.cron.trim().replace(/\s+/g, " "), timezone: z.zone } };
}

// Parsed patterns, shared by every monitor with the same expression (croner's parse is ~100 µs).
const patterns = new LRUCache<string, Cron>({ max: 10_000 });

function pattern(cron: string): Cron {
  let c = patterns.get(cron);
  if (!c) {
    const error = checkCron(cron);
    if (error !== null) throw new Error(`invalid cron expression "${cron}": ${error}`);
    c = new Cron(cron, { mode: "5-part", utcOffset: 0, domAndDow: false });
    patterns.set(cron, c);
  }
  return c;
}

const EN_US = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+):(\d+)$/; // "3/29/2026, 03:00:00"

/** The local wall-clock time of instant `t` in `zone`, as epoch ms of that wall time read as UTC. */
function wallOf(zone: string, t: number): number {
  const second = Math.floor(t / 1000) * 1000;
  const f = formatter(zone);
  // format() and a regular expression: ~1.4 µs against formatToParts' ~12 µs; the parts are the
  // fallback should a runtime write the date another way.
  const m = EN_US.exec(f.format(second));
  let wall: number;
  if (m) wall = Date.UTC(+m[3], +m[1] - 1, +m[2], +m[4], +m[5], +m[6]);
  else {
    const p: Record<string, number> = {};
    for (const { type, value } of f.formatToParts(second)) if (type !== "literal") p[type] = Number(value);
    wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  }
  return wall + (t - second);
}

const DAY = 86_400_000;

/**
 * The instant a wall time `w` runs at: its only occurrence, the first of two (a repeated local
 * time), or the first instant after the gap (a skipped one). The candidate offsets are those a day
 * before and after, as the Temporal proposal's reference implementation finds them.
 */
function runInstant(zone: string, w: number): number {
  const before = wallOf(zone, w - DAY) - (w - DAY);
  const after = wallOf(zone, w + DAY) - (w + DAY);
  const hits = [w - before, w - after].filter((c) => wallOf(zone, c) === w);
  if (hits.length > 0) return Math.min(...hits);
  // In a gap: the transition lies in (w - after, w - before]; find its first second by bisection
  // (the first instant whose wall time is past w).
  let lo = Math.floor((w - after) / 1000);
  let hi = Math.ceil((w - before) / 1000);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallOf(zone, mid * 1000) > w) hi = mid;
    else lo = mid;
  }
  return hi * 1000;
}

/**
 * nextRunAfter's answers by schedule and minute of `t`. Runs fall on whole minutes of wall time and
 * a zone's offset is a whole number of minutes (every IANA offset since the 1970s; an offset with
 * seconds is never cached), so every instant of one minute has the same next run: the many signals
 * of one schedule in a minute compute it once (about 24 µs each otherwise).
 */
const nextByMinute = new LRUCache<string, { at: number | null }>({ max: 10_000 });

/** The first run strictly after `t` (epoch ms), or null when none comes (croner's search horizon). */
export function nextRunAfter(schedule: Schedule, t: number): number | null {
  const minute = Math.floor(t / 60_000);
  const key = `${minute} ${schedule.timezone} ${schedule.cron}`;
  const hit = nextByMinute.get(key);
  if (hit) return hit.at;
  const at = searchNextRun(schedule, t);
  if ((wallOf(schedule.timezone, minute * 60_000) - minute * 60_000) % 60_000 === 0) nextByMinute.set(key, { at });
  return at;
}

/** nextRunAfter without its cache: the search itself. */
export function searchNextRun(schedule: Schedule, t: number): number | null {
  const cron = pattern(schedule.cron);
  // A run after t is a wall time after t's own wall time; in the second pass of a repeated hour the
  // next wall times ran at their first occurrence, before t, and are passed over.
  let w = wallOf(schedule.timezone, t);
  for (;;) {
    const next = cron.nextRun(new Date(w));
    if (next === null) return null;
    w = next.getTime();
    const at = runInstant(schedule.timezone, w);
    if (at > t) return at;
  }
}

/** The next `count` runs strictly after `after`, in order, without duplicates. */
export function nextRuns(schedule: Schedule, after: number, count: number): number[] {
  const out: number[] = [];
  for (let t = after; out.length < count;) {
    const next = nextRunAfter(schedule, t);
    if (next === null) break;
    out.push(next);
    t = next;
  }
  return out;
}
