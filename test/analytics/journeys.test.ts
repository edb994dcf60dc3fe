import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import fc from "fast-check";
import { AnalyticsService } from "../../gen/vigil/v1/analytics_pb.js";
import { conversionPath, reachedSteps } from "../../src/analytics/journeys.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { ingest } from "../helpers/events.js";

// Funnels, retention, timeseries measures and group aggregations (decisions.md "Analytics, third
// round") against a straightforward JS computation on the same random events, over many seeds of
// random queries: one app, one data set. Timestamps are drawn from a coarse grid, so many events of
// one actor share a timestamp (ties), and step filters overlap (one event may match several steps).

let t: TestApp;
let p: ProjectFixture;
let seed = 7;
const rnd = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** 2024-03-04 is a Monday. */
const T0 = Date.UTC(2024, 2, 4);
const SPAN = 40 * DAY;
const TYPES = ["view", "signup", "activate", "purchase"];
const PLANS = ["free", "pro", "team"];

interface Ev {
  type: string;
  ts: number;
  userId?: string;
  data: { plan?: string; amount?: number | string };
}
const events: Ev[] = [];

function randomEvent(): Ev {
  // A grid of 6-hour steps over 40 days (160 instants) plus a few ms offsets: ties are common.
  const ts = T0 + Math.floor(rnd() * 160) * 6 * HOUR + (rnd() < 0.2 ? Math.floor(rnd() * 3) : 0);
  const data: Ev["data"] = {};
  if (rnd() < 0.9) data.plan = pick(PLANS);
  if (rnd() < 0.8) data.amount = rnd() < 0.9 ? Math.round(rnd() * 10_000) / 100 : "12";
  return { type: pick(TYPES), ts, userId: rnd() < 0.9 ? `u${Math.floor(rnd() * 25)}` : undefined, data };
}

// The filters the queries draw, each with its JS meaning.
type Filter = { json: unknown; test: (e: Ev) => boolean };
function randomFilter(): Filter {
  const r = rnd();
  if (r < 0.45) {
    const v = pick(TYPES);
    return { json: { field: "event", operator: "equals", value: v }, test: (e) => e.type === v };
  }
  if (r < 0.65) {
    const vs = [pick(TYPES), pick(TYPES)];
    return { json: { field: "event", operator: "in", value: vs }, test: (e) => vs.includes(e.type) };
  }
  if (r < 0.8) {
    const v = pick(PLANS);
    return { json: { field: "data.plan", operator: "equals", value: v }, test: (e) => e.data.plan === v };
  }
  if (r < 0.9) {
    const n = pick([10, 50, 90]);
    return {
      json: { field: "data.amount", operator: "gt", value: n },
      test: (e) => typeof e.data.amount === "number" && e.data.amount > n,
    };
  }
  const a = randomFilter();
  const b = randomFilter();
  return { json: { or: [a.json, b.json] }, test: (e) => a.test(e) || b.test(e) };
}

function randomWindow(): { start: number; end: number } {
  const a = T0 - DAY + Math.floor(rnd() * (SPAN / 2));
  return { start: a, end: a + Math.floor(rnd() * SPAN) };
}
const iso = (w: { start: number; end: number }) => ({
  start: new Date(w.start).toISOString(),
  end: new Date(w.end).toISOString(),
});
const byActor = (): Map<string, Ev[]> => {
  const m = new Map<string, Ev[]>();
  for (const e of events) if (e.userId) m.set(e.userId, [...(m.get(e.userId) ?? []), e]);
  return m;
};

/** A step of the answer: count, conversion, median ms from the step before. */
interface StepAnswer {
  count: number;
  conversion: number | null;
  medianTimeMs: number | null;
}

/** a before b in order (the first differing time decides; equal: true). */
function smallerTimes(a: number[], b: number[]): boolean {
  const i = a.findIndex((x, k) => x !== b[k]);
  return i < 0 || a[i] < b[i];
}

/**
 * The funnel by its definition: a search over distinct events, in step order, non-decreasing
 * times. Each actor's conversion path (docs/analytics.md "Funnels"): of the chains reaching its
 * furthest step, those starting latest, and of these the one whose step times are smallest in
 * order (every chain from each first event at that time is searched: which event serves which
 * step at one timestamp changes what later steps can use). The median of the gaps between steps
 * over the actors reaching a step (the mean of the middle two for an even count).
 */
function oracleFunnel(steps: Filter[], w: { start: number; end: number }, windowMs: number): StepAnswer[] {
  const counts = steps.map(() => 0);
  const gaps: number[][] = steps.map(() => []);
  for (const evs of byActor().values()) {
    const sorted = [...evs].sort((a, b) => a.ts - b.ts);
    // The furthest step from a first event (want > steps: the depth only), or the smallest-times
    // chain of `want` steps from it.
    const reach = (first: Ev, want: number): { best: number; path?: number[] } => {
      let best = 0;
      let path: number[] | undefined;
      const go = (k: number, used: Set<Ev>, times: number[]): void => {
        best = Math.max(best, k);
        if (k === want) {
          if (!path || smallerTimes(times, path)) path = times.slice();
          return;
        }
        if (k === steps.length || (want > steps.length && best === steps.length)) return;
        for (const e of sorted) {
          if (used.has(e) || e.ts < times[k - 1] || e.ts > times[0] + windowMs || !steps[k].test(e)) continue;
          // Candidates come in time order: past the best path's time at this step (its prefix equal), none is better.
          if (path && smallerTimes(path.slice(0, k), times) && e.ts > path[k]) break;
          used.add(e);
          times.push(e.ts);
          go(k + 1, used, times);
          times.pop();
          used.delete(e);
        }
      };
      go(1, new Set([first]), [first.ts]);
      return { best, path };
    };
    const starts = sorted.filter((e) => e.ts >= w.start && e.ts <= w.end && steps[0].test(e));
    let depth = 0;
    for (const e of starts) if (depth < steps.length) depth = Math.max(depth, reach(e, steps.length + 1).best);
    if (depth === 0) continue;
    const paths = starts.map((e) => reach(e, depth).path).filter((x): x is number[] => x !== undefined);
    const t1 = Math.max(...paths.map((x) => x[0]));
    const path = paths.filter((x) => x[0] === t1).reduce((a, b) => (smallerTimes(a, b) ? a : b));
    for (let i = 0; i < depth; i++) {
      counts[i]++;
      if (i > 0) gaps[i].push(path[i] - path[i - 1]);
    }
  }
  const median = (xs: number[]) => {
    if (!xs.length) return null;
    const s = xs.slice().sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  };
  return counts.map((c, i) => ({
    count: c,
    conversion: counts[0] === 0 ? null : c / counts[0],
    medianTimeMs: i === 0 ? null : median(gaps[i]),
  }));
}

/** The breakdown by `data.plan`: the funnel again with the first step also requiring each plan (absent: null). */
function oracleBreakdown(steps: Filter[], w: { start: number; end: number }, windowMs: number, limit: number) {
  const out: { value: string | null; steps: StepAnswer[] }[] = [];
  for (const value of [...PLANS, null]) {
    const first: Filter = { json: null, test: (e) => steps[0].test(e) && (e.data.plan ?? null) === value };
    const answer = oracleFunnel([first, ...steps.slice(1)], w, windowMs);
    if (answer[0].count > 0) out.push({ value, steps: answer });
  }
  // Most first-step actors first; ties by the value's JSON text.
  const text = (v: string | null) => JSON.stringify(v);
  return out
    .sort((a, b) => b.steps[0].count - a.steps[0].count || (text(a.value) < text(b.value) ? -1 : 1))
    .slice(0, limit);
}

function truncate(ms: number, unit: "day" | "week" | "month"): number {
  const day = Math.floor(ms / DAY) * DAY;
  if (unit === "day") return day;
  if (unit === "week") return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
function addPeriods(ms: number, unit: "day" | "week" | "month", p: number): number {
  if (unit === "day") return ms + p * DAY;
  if (unit === "week") return ms + p * 7 * DAY;
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + p, 1);
}

function oracleRetention(
  start: Filter,
  back: Filter,
  unit: "day" | "week" | "month",
  periods: number,
  w: { start: number; end: number },
) {
  const inside = (e: Ev) => e.ts >= w.start && e.ts <= w.end;
  const cohorts = new Map<number, string[]>();
  for (const [a, evs] of byActor()) {
    const firsts = evs.filter((e) => inside(e) && start.test(e)).map((e) => e.ts);
    if (firsts.length === 0) continue;
    const c = truncate(Math.min(...firsts), unit);
    cohorts.set(c, [...(cohorts.get(c) ?? []), a]);
  }
  const actors = byActor();
  return [...cohorts.keys()]
    .sort((x, y) => x - y)
    .map((c) => ({
      start: new Date(c).toISOString(),
      size: cohorts.get(c)!.length,
      values: Array.from({ length: periods }, (_, i) => {
        const from = addPeriods(c, unit, i);
        if (from > w.end) return null;
        const to = addPeriods(c, unit, i + 1);
        return cohorts
          .get(c)!
          .filter((a) => actors.get(a)!.some((e) => inside(e) && back.test(e) && e.ts >= from && e.ts < to)).length;
      }),
    }));
}

const MEASURES = ["sum", "avg", "min", "max", "count", "count_unique"] as const;
function measure(op: (typeof MEASURES)[number], evs: Ev[]): number | null {
  const nums = evs.map((e) => e.data.amount).filter((v): v is number => typeof v === "number");
  switch (op) {
    case "sum":
      return nums.reduce((a, b) => a + b, 0);
    case "avg":
      return nums.length ? nums.reduce((a, b) => a + b, 0) / nums.length : null;
    case "min":
      return nums.length ? Math.min(...nums) : null;
    case "max":
      return nums.length ? Math.max(...nums) : null;
    case "count":
      return evs.filter((e) => e.data.amount !== undefined).length;
    case "count_unique":
      return new Set(evs.filter((e) => e.data.amount !== undefined).map((e) => JSON.stringify(e.data.amount))).size;
  }
}
const near = (a: unknown, b: number | null) =>
  b === null ? a === null : typeof a === "number" && Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));

before(async () => {
  t = await startTestApp({ RATE_LIMIT_EVENTS_PER_MINUTE: "100000", ANALYTICS_SLOT_INTERVAL_MS: "0" });
  p = await project(t.rest);
  for (let i = 0; i < 500; i++) events.push(randomEvent());
  await ingest(
    t.rest,
    p.key,
    events.map((e) => ({ type: e.type, timestamp: new Date(e.ts).toISOString(), userId: e.userId, data: e.data })),
  );
});
after(() => t.close());

const post = (route: string, body: unknown) =>
  t.rest.post(`/v1/projects/${p.projectId}/analytics/${route}`, body, { key: p.key });

// One test at a time: they draw their random queries from one generator, so the queries (and a
// failure) are the same in every run.
describe("product analytics against a JS computation", () => {
  it("funnels: counts, conversion, median times and breakdowns, with ties and overlapping steps, over 60 random queries", async () => {
    let withBreakdown = 0;
    let withMedian = 0;
    for (let q = 0; q < 60; q++) {
      const steps = Array.from({ length: 2 + Math.floor(rnd() * 3) }, randomFilter);
      // Overlapping steps on purpose: the same filter twice needs two different events.
      if (rnd() < 0.3) steps[1] = steps[0];
      const w = randomWindow();
      const windowMs = pick([0.5 * HOUR, 6 * HOUR, DAY, 5 * DAY, 30 * DAY]);
      // A breakdown by plan in some queries (its limit sometimes below the four values).
      const limit = rnd() < 0.4 ? pick([1, 2, 25]) : 0;
      const body = {
        steps: steps.map((s) => ({ filters: s.json })),
        time: iso(w),
        windowMs,
        ...(limit ? { breakdown: "data.plan", ...(limit !== 25 ? { breakdownLimit: limit } : {}) } : {}),
      };
      const r = await post("funnel", body);
      assert.equal(r.status, 200, r.text);
      const want = {
        steps: oracleFunnel(steps, w, windowMs),
        breakdown: limit ? oracleBreakdown(steps, w, windowMs, limit) : [],
      };
      assert.deepEqual(r.body.data, want, JSON.stringify(body));
      if (want.breakdown.length) withBreakdown++;
      if (want.steps.some((x) => x.medianTimeMs !== null && x.medianTimeMs > 0)) withMedian++;
    }
    // The extras were really exercised.
    assert.ok(withBreakdown >= 5 && withMedian >= 10, `${withBreakdown} ${withMedian}`);
  });

  it("funnels: a tie at one timestamp counts once per event", async () => {
    const mine = await project(t.rest);
    const at = "2024-05-01T10:00:00.000Z";
    await ingest(t.rest, mine.key, [
      { type: "a", timestamp: at, userId: "x" },
      { type: "a", timestamp: at, userId: "y" },
      { type: "a", timestamp: at, userId: "y" },
      { type: "a", timestamp: "2024-05-01T09:00:00.000Z", userId: "z" },
      { type: "b", timestamp: "2024-05-03T09:00:00.000Z", userId: "z" },
    ]);
    const a = { filters: { field: "event", operator: "equals", value: "a" } };
    const b = { filters: { field: "event", operator: "equals", value: "b" } };
    const r = await t.rest.post(
      `/v1/projects/${mine.projectId}/analytics/funnel`,
      { steps: [a, a, b], time: { start: "2024-05-01T00:00:00Z", end: "2024-05-01T23:59:59Z" } },
      { key: mine.key },
    );
    assert.equal(r.status, 200, r.text);
    // x: one `a` (not two steps); y: two `a` at one instant reach step 2; z: `b` is 2 days after (window 1 day).
    assert.deepEqual(r.body.data.steps, [
      { count: 3, conversion: 1, medianTimeMs: null },
      { count: 1, conversion: 1 / 3, medianTimeMs: 0 },
      { count: 0, conversion: 0, medianTimeMs: null },
    ]);
    const none = await t.rest.post(
      `/v1/projects/${mine.projectId}/analytics/funnel`,
      { steps: [b, a], time: { start: "2020-01-01T00:00:00Z", end: "2020-01-02T00:00:00Z" } },
      { key: mine.key },
    );
    assert.deepEqual(none.body.data, {
      steps: [
        { count: 0, conversion: null, medianTimeMs: null },
        { count: 0, conversion: null, medianTimeMs: null },
      ],
      breakdown: [],
    });
  });

  it("retention: cohorts and values by day, week and month, over 45 random queries", async () => {
    for (let q = 0; q < 45; q++) {
      const start = randomFilter();
      const back = randomFilter();
      const interval = pick(["day", "week", "month"] as const);
      const periods = 1 + Math.floor(rnd() * 12);
      const w = randomWindow();
      const body = { start: { filters: start.json }, return: { filters: back.json }, interval, periods, time: iso(w) };
      const r = await post("retention", body);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.data.cohorts, oracleRetention(start, back, interval, periods, w), JSON.stringify(body));
    }
  });

  it("timeseries with an aggregation: count and value per bucket, over 30 random queries", async () => {
    for (let q = 0; q < 30; q++) {
      const f = randomFilter();
      const op = pick(MEASURES);
      const interval = pick(["day", "week"] as const);
      const w = randomWindow();
      const body = { filters: f.json, time: iso(w), interval, aggregation: { operation: op, field: "data.amount" } };
      const r = await post("timeseries", body);
      assert.equal(r.status, 200, r.text);
      for (const b of r.body.data.buckets as { time: string; count: number; value: number | null }[]) {
        const from = Date.parse(b.time);
        const to = addPeriods(from, interval, 1);
        const evs = events.filter((e) => f.test(e) && e.ts >= w.start && e.ts <= w.end && e.ts >= from && e.ts < to);
        assert.equal(b.count, evs.length, `${JSON.stringify(body)} ${b.time}`);
        assert.ok(near(b.value, measure(op, evs)), `${JSON.stringify(body)} ${b.time}: ${b.value}`);
      }
    }
  });

  it("group with aggregations: one key per aggregation, over 30 random queries", async () => {
    for (let q = 0; q < 30; q++) {
      const f = randomFilter();
      const ops = [pick(MEASURES), pick(MEASURES)];
      const w = randomWindow();
      const body = {
        filters: f.json,
        time: iso(w),
        groupBy: ["event", "data.plan"],
        limit: 1000,
        aggregations: ops.map((operation, i) => ({ name: `m${i}`, operation, field: "data.amount" })),
      };
      const r = await post("group", body);
      assert.equal(r.status, 200, r.text);
      const evs = events.filter((e) => f.test(e) && e.ts >= w.start && e.ts <= w.end);
      const keys = new Set(evs.map((e) => JSON.stringify([e.type, e.data.plan ?? null])));
      assert.equal(r.body.data.groups.length, keys.size, JSON.stringify(body));
      for (const g of r.body.data.groups as Record<string, unknown>[]) {
        const mine = evs.filter((e) => e.type === g.event && (e.data.plan ?? null) === g["data.plan"]);
        assert.equal(g.count, mine.length);
        ops.forEach((op, i) => assert.ok(near(g[`m${i}`], measure(op, mine)), `${JSON.stringify(body)} ${op}`));
      }
    }
  });

  it("refuses bad bodies with 400 and the error body", async () => {
    const step = { filters: { field: "event", operator: "equals", value: "view" } };
    const time = { start: "2024-03-01T00:00:00Z", end: "2024-03-02T00:00:00Z" };
    const bad: [string, unknown, string][] = [
      ["funnel", { steps: [step], time }, "steps"],
      ["funnel", { steps: Array(11).fill(step), time }, "steps"],
      ["funnel", { steps: [step, step], time, windowMs: 0 }, "windowMs"],
      ["funnel", { steps: [step, step], time, windowMs: 91 * DAY }, "windowMs"],
      ["funnel", { steps: [step, step], time, actor: "groupId" }, "actor"],
      ["funnel", { steps: [step, step] }, "time"],
      ["funnel", { steps: [step, step], time, breakdown: "a b" }, "breakdown"],
      ["funnel", { steps: [step, step], time, breakdown: "" }, "breakdown"],
      ["funnel", { steps: [step, step], time, breakdown: 7 }, "breakdown"],
      ["funnel", { steps: [step, step], time, breakdown: "plan", breakdownLimit: 0 }, "breakdownLimit"],
      ["funnel", { steps: [step, step], time, breakdown: "plan", breakdownLimit: 101 }, "breakdownLimit"],
      ["funnel", { steps: [step, step], time, breakdown: "plan", breakdownLimit: 2.5 }, "breakdownLimit"],
      ["retention", { start: step, return: step, interval: "day", periods: 0, time }, "periods"],
      ["retention", { start: step, return: step, interval: "day", periods: 31, time }, "periods"],
      ["retention", { start: step, return: step, interval: "hour", periods: 3, time }, "interval"],
      ["timeseries", { time, interval: "day", aggregation: { operation: "median", field: "amount" } }, "operation"],
      ["timeseries", { time, interval: "day", aggregation: { operation: "sum" } }, "field"],
      ["group", { time, groupBy: ["event"], aggregations: [{ name: "event", operation: "count" }] }, "name"],
      ["group", { time, groupBy: ["event"], aggregations: [{ name: "count", operation: "count" }] }, "name"],
    ];
    for (const [route, body, field] of bad) {
      const r = await post(route, body);
      assert.equal(r.status, 400, `${route} ${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.body.error.code, "validation_failed", r.text);
      assert.equal(typeof r.body.error.message, "string");
      assert.ok(
        JSON.stringify(r.body.error.details ?? r.body.error.message).includes(field),
        `${route} ${JSON.stringify(body)}: ${r.text}`,
      );
    }
  });

  it("answers over gRPC", async () => {
    const c = createClient(AnalyticsService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${p.key}` };
    const steps = [{}, {}]; // no filters: every event
    const f = await c.funnel(
      { projectId: p.projectId, steps, time: iso({ start: T0, end: T0 + SPAN }), breakdown: "plan", breakdownLimit: 2 },
      { headers },
    );
    assert.equal(f.data?.steps.length, 2);
    assert.ok(Number(f.data?.steps[0].count) > 0);
    assert.ok((f.data?.steps[1].medianTimeMs ?? -1) >= 0);
    assert.equal(f.data?.breakdown.length, 2);
    assert.ok(f.data?.breakdown.every((b) => b.value?.kind.case === "stringValue"));
    const r = await c.retention(
      { projectId: p.projectId, interval: "week", periods: 3n, time: iso({ start: T0, end: T0 + SPAN }) },
      { headers },
    );
    assert.ok((r.data?.cohorts.length ?? 0) > 0);
  });
});

describe("reachedSteps and conversionPath (fast-check)", () => {
  it("equal an exhaustive search of every chain on dense ties and overlapping masks", () => {
    // Every chain (distinct events, step order, non-decreasing times within the window, t1 in
    // [from, to]); the conversion path is the deepest, then the latest t1, then the smallest times in
    // order; reachedSteps is its length.
    const brute = (ts: number[], masks: number[], steps: number, from: number, to: number, win: number) => {
      let best: number[] = [];
      const better = (a: number[], b: number[]) => {
        if (a.length !== b.length) return a.length > b.length;
        if (a[0] !== b[0]) return a[0] > b[0];
        for (let i = 1; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i];
        return false;
      };
      const go = (used: boolean[], times: number[]): void => {
        if (better(times, best)) best = times.slice();
        if (times.length === steps) return;
        ts.forEach((t, e) => {
          const k = times.length;
          if (used[e] || t < times[k - 1] || t > times[0] + win || (masks[e] & (1 << k)) === 0) return;
          used[e] = true;
          go(used, [...times, t]);
          used[e] = false;
        });
      };
      ts.forEach((t, e) => {
        if (t >= from && t <= to && masks[e] & 1)
          go(
            ts.map((_, i) => i === e),
            [t],
          );
      });
      return best;
    };
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 1, max: 15 })), { maxLength: 9 }),
        fc.integer({ min: 2, max: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 4 }),
        (evs, steps, from, win) => {
          const sorted = [...evs].sort((a, b) => a[0] - b[0]);
          const ts = sorted.map((e) => e[0]);
          const masks = sorted.map((e) => e[1]);
          const to = from + 2;
          const want = brute(ts, masks, steps, from, to, win);
          assert.equal(reachedSteps({ ts, masks }, steps, from, to, win), want.length);
          assert.deepEqual(conversionPath({ ts, masks }, steps, from, to, win), want);
        },
      ),
      { numRuns: 4000, seed: 35 },
    );
  });
});
