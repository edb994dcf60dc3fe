import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { nextRunAfter, nextRuns, parseSchedule, searchNextRun, type Schedule } from "../../src/uptime/schedule.js";
import { seeded } from "../helpers/faults.js";

// Cron schedules of scheduled monitors (decisions.md: "Cron jobs and ping keys"). The DST rule: a
// local time skipped by a DST change runs at the first instant after the gap; a local time that
// occurs twice runs once, at its first occurrence. Checked on hand-picked cases and against an
// independent brute force (walk UTC minutes, read each one's wall time with Intl, match the fields
// with a parser of its own, apply the two rules by its own logic) on seeded random expressions.

const MIN = 60_000;
const iso = (t: number) => new Date(t).toISOString();
const at = (s: string) => Date.parse(s);

function schedule(cron: string, timezone?: string): Schedule {
  const r = parseSchedule({ cron, timezone });
  assert.ok(r.ok, `${cron} ${timezone ?? ""}: ${r.ok ? "" : r.refusal.message}`);
  return r.schedule;
}
const runs = (cron: string, timezone: string, after: string, count: number) =>
  nextRuns(schedule(cron, timezone), at(after), count).map(iso);

describe("DST: a skipped local time runs at the first instant after the gap", () => {
  it("Europe/Berlin spring (2026-03-29, 02:00 CET -> 03:00 CEST): 30 2 * * * runs at 03:00 CEST", () => {
    assert.deepEqual(runs("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 3), [
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T00:30:00.000Z",
      "2026-03-31T00:30:00.000Z",
    ]);
  });
  it("America/New_York spring (2026-03-08, 02:00 EST -> 03:00 EDT): 30 2 * * * runs at 03:00 EDT", () => {
    assert.deepEqual(runs("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", 3), [
      "2026-03-07T07:30:00.000Z",
      "2026-03-08T07:00:00.000Z",
      "2026-03-09T06:30:00.000Z",
    ]);
  });
  it("several skipped times meet at the end of the gap once; every minute goes on after it", () => {
    assert.deepEqual(runs("0,15,45 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", 2), [
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T00:00:00.000Z",
    ]);
    assert.deepEqual(runs("* * * * *", "Europe/Berlin", "2026-03-29T00:58:00Z", 3), [
      "2026-03-29T00:59:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-29T01:01:00.000Z",
    ]);
  });
});

describe("DST: a repeated local time runs once, at its first occurrence", () => {
  it("Europe/Berlin autumn (2026-10-25, 03:00 CEST -> 02:00 CET): 30 2 * * * once, in CEST", () => {
    assert.deepEqual(runs("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2), [
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
    // From inside the second pass, the repeated time does not come again.
    assert.equal(
      iso(nextRunAfter(schedule("30 2 * * *", "Europe/Berlin"), at("2026-10-25T01:10:00Z"))!),
      "2026-10-26T01:30:00.000Z",
    );
  });
  it("America/New_York autumn (2026-11-01, 02:00 EDT -> 01:00 EST): 30 1 * * * once, in EDT", () => {
    assert.deepEqual(runs("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2), [
      "2026-11-01T05:30:00.000Z",
      "2026-11-02T06:30:00.000Z",
    ]);
  });
  it("every minute: no run in the second pass of the repeated hour", () => {
    const r = nextRuns(schedule("* * * * *", "America/New_York"), at("2026-11-01T05:58:00Z"), 3).map(iso);
    assert.deepEqual(r, ["2026-11-01T05:59:00.000Z", "2026-11-01T07:00:00.000Z", "2026-11-01T07:01:00.000Z"]);
  });
});

describe("fields", () => {
  it("steps, lists, ranges, month and day names (case-insensitive), 7 is Sunday", () => {
    assert.deepEqual(runs("*/20 9-10 * * MON-fri", "UTC", "2026-11-27T10:30:00Z", 4), [
      "2026-11-27T10:40:00.000Z",
      "2026-11-30T09:00:00.000Z",
      "2026-11-30T09:20:00.000Z",
      "2026-11-30T09:40:00.000Z",
    ]);
    assert.deepEqual(runs("0 6 1,15 jan,Jul *", "UTC", "2026-01-01T07:00:00Z", 3), [
      "2026-01-15T06:00:00.000Z",
      "2026-07-01T06:00:00.000Z",
      "2026-07-15T06:00:00.000Z",
    ]);
    assert.deepEqual(runs("0 0 * * 7", "UTC", "2026-11-27T00:00:00Z", 1), ["2026-11-29T00:00:00.000Z"]);
    assert.deepEqual(runs("5 10-20/5 * * *", "Asia/Kolkata", "2026-11-27T00:00:00Z", 3), [
      "2026-11-27T04:35:00.000Z",
      "2026-11-27T09:35:00.000Z",
      "2026-11-27T14:35:00.000Z",
    ]);
  });
  it("day of month and day of week both restricted: either matches (Vixie); one restricted: it alone", () => {
    // 2026-11: Fridays are 6, 13, 20, 27; the 13th is also one. 2026-12-13 is a Sunday.
    const from = "2026-11-01T00:00:00Z";
    assert.deepEqual(runs("0 12 10 * fri", "UTC", from, 5), [
      "2026-11-06T12:00:00.000Z",
      "2026-11-10T12:00:00.000Z",
      "2026-11-13T12:00:00.000Z",
      "2026-11-20T12:00:00.000Z",
      "2026-11-27T12:00:00.000Z",
    ]);
    assert.deepEqual(runs("0 12 10 * *", "UTC", from, 2), ["2026-11-10T12:00:00.000Z", "2026-12-10T12:00:00.000Z"]);
    assert.deepEqual(runs("0 12 * * fri", "UTC", from, 2), ["2026-11-06T12:00:00.000Z", "2026-11-13T12:00:00.000Z"]);
  });
  it("a schedule is normalised: the zone's canonical name, single spaces, UTC by default", () => {
    assert.deepEqual(parseSchedule({ cron: " 0  3 * * * " }), {
      ok: true,
      schedule: { cron: "0 3 * * *", timezone: "UTC" },
    });
    assert.deepEqual(parseSchedule({ cron: "0 3 * * *", timezone: "europe/berlin" }), {
      ok: true,
      schedule: { cron: "0 3 * * *", timezone: "Europe/Berlin" },
    });
  });
  it("refusals name the field and say why", () => {
    const cases: [string, string | undefined, "cron" | "timezone", RegExp][] = [
      ["0 0 * * * *", undefined, "cron", /five fields.*not 6/],
      ["* * * *", undefined, "cron", /five fields.*not 4/],
      ["", undefined, "cron", /five fields/],
      ["@daily", undefined, "cron", /@ macros are not accepted/],
      ["60 * * * *", undefined, "cron", /^minute: 60 is outside 0-59/],
      ["0 24 * * *", undefined, "cron", /^hour: 24 is outside 0-23/],
      ["0 0 0 * *", undefined, "cron", /^day of month: 0 is outside 1-31/],
      ["0 0 * 13 *", undefined, "cron", /^month: 13 is outside 1-12/],
      ["0 0 * * 8", undefined, "cron", /^day of week: 8 is outside 0-7/],
      ["5/5 * * * *", undefined, "cron", /^minute: "5\/5".*5-59/],
      ["*/0 * * * *", undefined, "cron", /^minute: the step 0 is outside 1-60/],
      ["0 22-2 * * *", undefined, "cron", /^hour: the range 22-2 goes down/],
      ["0 0 L * *", undefined, "cron", /^day of month: "L"/],
      ["0 0 15W * *", undefined, "cron", /^day of month: "15W"/],
      ["0 0 * * MON#2", undefined, "cron", /^day of week: "MON#2"/],
      ["0 0 * * +MON", undefined, "cron", /^day of week: "\+MON"/],
      ["0 0 ? * *", undefined, "cron", /^day of month: "\?"/],
      ["0 0 * * monday", undefined, "cron", /^day of week: "monday"/],
      ["0 0 * foo *", undefined, "cron", /^month: "foo" is not a number or a name/],
      ["0 0 mon * *", undefined, "cron", /^day of month: "mon" is not a number$/],
      ["1,,2 * * * *", undefined, "cron", /^minute: "" is not/],
      ["0 0 31 2,4 *", undefined, "cron", /never run/],
      ["* * * * *", "Mars/Olympus", "timezone", /not a known IANA time zone/],
      ["* * * * *", "+01:00", "timezone", /not an IANA time zone name/],
      ["* * * * *", "", "timezone", /not an IANA time zone name/],
    ];
    for (const [cron, timezone, field, message] of cases) {
      const r = parseSchedule({ cron, timezone });
      assert.ok(!r.ok, `${JSON.stringify(cron)} ${timezone ?? ""} is refused`);
      assert.equal(r.refusal.field, field, cron);
      assert.match(r.refusal.message, message, cron);
    }
    // Not refused: Feb 29 (leap years), 31 with a month that has it, either-match with a weekday.
    for (const cron of ["0 0 29 2 *", "0 0 31 1-2 *", "0 0 31 2 mon", "0 0 * * 5-7", "0 0 * * 1-7/2"])
      assert.ok(parseSchedule({ cron }).ok, cron);
  });
});

// ---- The independent reference ----------------------------------------------------------------

const NAMES: Record<number, string[]> = {
  3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
  4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};
const BOUNDS: [number, number][] = [
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12],
  [0, 7],
];

/** The values of field `i` (its own little parser: items, ranges, steps, names, dow 7 = 0). */
function refValues(i: number, text: string): Set<number> {
  const out = new Set<number>();
  const num = (s: string) => (/^\d+$/.test(s) ? Number(s) : NAMES[i].indexOf(s.toLowerCase()) + (i === 3 ? 1 : 0));
  for (const item of text.split(",")) {
    const [range, step = "1"] = item.split("/");
    let [lo, hi] = BOUNDS[i];
    if (i === 4 && range === "*") hi = 6;
    if (range !== "*") {
      const [a, b = a] = range.split("-");
      lo = num(a);
      hi = num(b);
    }
    for (let v = lo; v <= hi; v += Number(step)) out.add(i === 4 ? v % 7 : v);
  }
  return out;
}

const dayFields = new Map<number, [number, number, number]>();

/** Day of month, month and day of week of a day number (days since 1970-01-01). */
function fieldsOfDay(day: number): [number, number, number] {
  let f = dayFields.get(day);
  if (!f) {
    const d = new Date(day * 86_400_000);
    f = [d.getUTCDate(), d.getUTCMonth() + 1, d.getUTCDay()];
    dayFields.set(day, f);
  }
  return f;
}

function refMatcher(cron: string): (wallMinute: number) => boolean {
  const parts = cron.split(" ");
  const [mi, ho, dom, mo, dow] = parts.map((p, i) => refValues(i, p));
  const either = parts[2] !== "*" && parts[4] !== "*";
  return (wm) => {
    const ofDay = ((wm % 1440) + 1440) % 1440;
    if (!mi.has(ofDay % 60) || !ho.has(Math.floor(ofDay / 60))) return false;
    const [date, month, weekday] = fieldsOfDay((wm - ofDay) / 1440);
    if (!mo.has(month)) return false;
    return either ? dom.has(date) || dow.has(weekday) : dom.has(date) && dow.has(weekday);
  };
}

interface Walk {
  zone: string;
  /** UTC minute numbers, one per minute of the window. */
  utc: number[];
  /** The wall-clock minute (the wall time read as UTC, in minutes) of each. */
  wall: number[];
  /** Wall minutes skipped just before each (a gap), if any. */
  skipped: Map<number, number[]>;
  /** Minutes whose wall time already occurred (the second pass of a repeated time). */
  repeated: Set<number>;
  /** Indexes where a gap ends or a repeat begins. */
  changes: number[];
}

function walk(zone: string, from: string, to: string): Walk {
  const f = new Intl.DateTimeFormat("en-GB", {
    timeZone: zone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  const w: Walk = { zone, utc: [], wall: [], skipped: new Map(), repeated: new Set(), changes: [] };
  let maxSeen = -Infinity;
  for (let u = at(from) / MIN, k = 0; u <= at(to) / MIN; u++, k++) {
    const m = /^(\d\d)\/(\d\d)\/(\d{4}), (\d\d):(\d\d)$/.exec(f.format(u * MIN))!; // "29/03/2026, 03:00"
    const wm = Date.UTC(+m[3], +m[2] - 1, +m[1], +m[4], +m[5]) / MIN;
    w.utc.push(u);
    w.wall.push(wm);
    if (k > 0 && wm > w.wall[k - 1] + 1) {
      w.skipped.set(
        k,
        Array.from({ length: wm - w.wall[k - 1] - 1 }, (_, j) => w.wall[k - 1] + 1 + j),
      );
      w.changes.push(k);
    }
    if (wm <= maxSeen) {
      if (!w.repeated.has(k - 1)) w.changes.push(k);
      w.repeated.add(k);
    }
    maxSeen = Math.max(maxSeen, wm);
  }
  return w;
}

/** The first `count` runs by the brute force after minute index `k` of the window: epoch ms. */
function refRuns(w: Walk, match: (wallMinute: number) => boolean, k: number, count: number): number[] {
  const out: number[] = [];
  for (let i = k + 1; i < w.utc.length && out.length < count; i++) {
    if (w.repeated.has(i)) continue;
    if (match(w.wall[i]) || (w.skipped.get(i) ?? []).some(match)) out.push(w.utc[i] * MIN);
  }
  return out;
}

function randomCron(rnd: () => number): string {
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
  const value = (i: number, v: number) =>
    NAMES[i] && v <= (i === 3 ? 12 : 6) && rnd() < 0.3 ? NAMES[i][i === 3 ? v - 1 : v] : String(v);
  const field = (i: number, starChance: number, near?: number[]): string => {
    if (rnd() < starChance) return rnd() < 0.7 ? "*" : `*/${int(1, [60, 24, 31, 12, 7][i])}`;
    const [lo, hi] = BOUNDS[i];
    const one = () => (near && rnd() < 0.6 ? pick(near) : int(lo, hi));
    return Array.from({ length: int(1, 3) }, () => {
      const kind = rnd();
      const a = one();
      if (kind < 0.5) return value(i, a);
      const b = int(a, hi);
      const range = `${value(i, a)}-${value(i, b)}`;
      return kind < 0.8 ? range : `${range}/${int(1, [60, 24, 31, 12, 7][i])}`;
    }).join(",");
  };
  // Hours near the transitions (0-3 local) and mostly unrestricted days keep runs near the changes.
  return [field(0, 0.4), field(1, 0.3, [0, 1, 2, 3, 23]), field(2, 0.8), field(3, 0.85), field(4, 0.8)].join(" ");
}

describe("against the brute force on random expressions", () => {
  // Each window holds both changes of the year: Europe and the US (spring Mar 8/29, autumn Oct 25/
  // Nov 1), Lord Howe (30-minute changes, Apr 5 and Oct 4), Santiago (its clock skips and repeats
  // midnight's hour: Apr 5 and Sep 6), and Kolkata (no DST, offset +05:30).
  const windows: [string, string, string][] = [];
  for (const zone of ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata"])
    windows.push(
      [zone, "2026-03-01T00:00:00Z", "2026-04-10T00:00:00Z"],
      [zone, "2026-09-01T00:00:00Z", "2026-11-05T00:00:00Z"],
    );

  it("the same runs, in order, from starts near each change and anywhere in the window", () => {
    const rnd = seeded(20261127);
    let compared = 0;
    let nearChange = 0;
    for (const [zone, from, to] of windows) {
      const w = walk(zone, from, to);
      if (zone !== "Asia/Kolkata")
        assert.ok(w.changes.length >= 1, `${zone} ${from}: the window holds its DST changes`);
      for (let n = 0; n < 40; n++) {
        const cron = randomCron(rnd);
        const parsed = parseSchedule({ cron, timezone: zone });
        if (!parsed.ok) continue; // e.g. days that never occur in the months drawn
        const match = refMatcher(cron);
        for (let s = 0; s < 3; s++) {
          const k =
            w.changes.length > 0 && s < 2
              ? Math.max(0, Math.min(w.utc.length - 1, w.changes[int(rnd, w.changes.length)] - int(rnd, 6 * 60)))
              : int(rnd, w.utc.length);
          const start = w.utc[k] * MIN + (rnd() < 0.5 ? 0 : int(rnd, MIN));
          const end = w.utc[w.utc.length - 1] * MIN;
          const want = refRuns(w, match, k, 25);
          const got: number[] = nextRuns(parsed.schedule, start, 25).filter((t) => t <= end);
          assert.deepEqual(got.map(iso), want.map(iso), `${cron} in ${zone} after ${iso(start)}`);
          compared++;
          if (want.some((t) => w.changes.some((c) => Math.abs(w.utc[c] * MIN - t) <= 2 * 3_600_000))) nearChange++;
        }
      }
    }
    assert.ok(compared >= 500, `compared ${compared} cases`);
    assert.ok(nearChange >= 150, `${nearChange} cases had runs within 2 h of a change`);
  });

  it("the answer cached per minute is the search's for every instant of that minute", () => {
    const rnd = seeded(20261128);
    let compared = 0;
    for (const [zone, from, to] of windows) {
      const w = walk(zone, from, to);
      for (let n = 0; n < 20; n++) {
        const parsed = parseSchedule({ cron: randomCron(rnd), timezone: zone });
        if (!parsed.ok) continue;
        // Minutes near the changes, each asked at several instants in a random order (the first
        // fills the cache, the others read it).
        for (let s = 0; s < 5; s++) {
          const k =
            w.changes.length > 0
              ? Math.max(0, Math.min(w.utc.length - 1, w.changes[int(rnd, w.changes.length)] - int(rnd, 120)))
              : int(rnd, w.utc.length);
          for (const offset of [int(rnd, MIN), 0, MIN - 1, int(rnd, MIN)]) {
            const t = w.utc[k] * MIN + offset;
            assert.equal(nextRunAfter(parsed.schedule, t), searchNextRun(parsed.schedule, t), `${zone} ${iso(t)}`);
            compared++;
          }
        }
      }
    }
    assert.ok(compared >= 1_000, `compared ${compared} cases`);
  });
});

function int(rnd: () => number, n: number): number {
  return Math.floor(rnd() * n);
}
