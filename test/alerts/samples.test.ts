import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { ingest } from "../helpers/events.js";
import { seeded } from "../helpers/faults.js";
import type { Res } from "../helpers/rest.js";
import { useProject } from "../helpers/use.js";

// Exact samples (issue #31 point 4; decisions.md: Alerts): the value an alert sees at `t` equals
// what metrics/query or analytics/aggregate (or the two analytics/count answers of a ratio) answer
// for time {start: t - windowMs, end: t}. Random points and events over three hours, windows that
// cross minute and hour edges (rollups plus raw edges), compared through preview, which evaluates
// with the same sample code as live evaluation. Funnel and retention sources equal analytics/funnel
// and analytics/retention (issue #35 point 6).

const DAY = Date.UTC(2024, 2, 4, 10, 0, 0);
const SPAN = 3 * 3_600_000;
const DAY_MS = 86_400_000;
const rnd = seeded(3101);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
const iso = (ms: number) => new Date(ms).toISOString();

const { t, p } = useProject({ ...GENEROUS_LIMITS, RATE_LIMIT_EVENTS_PER_MINUTE: "1000000" }, {}, async () => {
  const metrics = [];
  for (let i = 0; i < 600; i++) {
    const ts = DAY + Math.floor(rnd() * SPAN);
    metrics.push({
      type: "measurement",
      name: "latency",
      value: Math.round(rnd() * 100_000) / 100,
      timestamp: iso(ts),
    });
    const inc = rnd() < 0.7;
    metrics.push({
      type: inc ? "increment" : "decrement",
      name: "queue",
      value: 1 + Math.floor(rnd() * 9),
      timestamp: iso(DAY + Math.floor(rnd() * SPAN)),
    });
  }
  for (let i = 0; i < metrics.length; i += 500) {
    const r: Res = await t.rest.post(
      `/v1/projects/${p.projectId}/metrics/batch`,
      { metrics: metrics.slice(i, i + 500) },
      { key: p.key },
    );
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.data.rejected, 0, r.text);
  }
  const events = [];
  for (let i = 0; i < 1500; i++) {
    events.push({
      type: pick(["request", "request", "request", "error", "signup"]),
      timestamp: iso(DAY + Math.floor(rnd() * SPAN)),
      userId: `u${Math.floor(rnd() * 40)}`,
      data: { ms: Math.round(rnd() * 5000), plan: pick(["free", "pro"]) },
    });
  }
  await ingest(t.rest, p.key, events);
  // Retention: 30 actors joining on the ten days before DAY, each back on a later day at random; all
  // before DAY - 3 h, out of every other case's windows (its own generator: the cases' picks stay).
  const r2 = seeded(3402);
  const journeys = [];
  for (let i = 0; i < 30; i++) {
    const joined = DAY - 10 * DAY_MS + Math.floor(r2() * 8 * DAY_MS);
    journeys.push({ type: "join", timestamp: iso(joined), userId: `r${i}` });
    for (let d = 1; joined + d * DAY_MS < DAY - 3 * 3_600_000; d++)
      if (r2() < 0.5) journeys.push({ type: "visit", timestamp: iso(joined + d * DAY_MS), userId: `r${i}` });
  }
  await ingest(t.rest, p.key, journeys);
});

const post = (route: string, body: unknown) =>
  t.rest.post(`/v1/projects/${p.projectId}/${route}`, body, { key: p.key });

async function previewValues(
  query: unknown,
  windowMs: number,
  everyMs: number,
  offsetMs: number,
  time = { start: iso(DAY), end: iso(DAY + SPAN) },
) {
  const r = await post("alerts/preview", {
    query,
    condition: { operator: "gt", value: 0 },
    windowMs,
    everyMs,
    evaluationOffsetMs: offsetMs,
    time,
  });
  assert.equal(r.status, 200, r.text);
  return r.body.data.evaluations as { at: string; value: number | null }[];
}

const WINDOWS = [90_000, 600_000, 3_600_000 + 1234, 2 * 3_600_000 + 61_001];

describe("alert samples equal the endpoints' answers", () => {
  it("metric aggregations equal metrics/query for the same window", async () => {
    const cases: [string, string][] = [
      ["latency", "avg"],
      ["latency", "p95"],
      ["latency", "max"],
      ["latency", "count"],
      ["queue", "sum"],
      ["queue", "min"],
    ];
    for (const [name, aggregation] of cases) {
      const windowMs = pick(WINDOWS);
      const evs = await previewValues(
        { source: "metric", name, aggregation },
        windowMs,
        900_000,
        Math.floor(rnd() * 900_000),
      );
      assert.ok(evs.length >= 11);
      assert.ok(evs.filter((e) => e.value !== null).length >= 8, "values to compare");
      for (const e of evs) {
        const at = Date.parse(e.at);
        const q = await post("metrics/query", { name, aggregation, time: { start: iso(at - windowMs), end: e.at } });
        assert.equal(q.status, 200, q.text);
        const expected = q.body.data.count === 0 ? null : q.body.data.value;
        assert.equal(e.value, expected, `${name} ${aggregation} over ${windowMs} ms at ${e.at}`);
      }
    }
  });

  it("events aggregates equal analytics/aggregate for the same window", async () => {
    const cases: { filters?: unknown; operation: string; field?: string }[] = [
      { operation: "count" },
      { filters: { field: "type", operator: "equals", value: "error" }, operation: "count" },
      { filters: { field: "type", operator: "equals", value: "request" }, operation: "p95", field: "data.ms" },
      { operation: "avg", field: "data.ms" },
      { filters: { field: "data.plan", operator: "equals", value: "pro" }, operation: "count_unique" },
      { operation: "sum", field: "data.ms" },
      { filters: { field: "type", operator: "in", value: ["request", "signup"] }, operation: "count" },
      { filters: { field: "data.plan", operator: "equals", value: "free" }, operation: "max", field: "data.ms" },
      { operation: "min", field: "data.ms" },
    ];
    for (const [i, c] of cases.entries()) {
      const windowMs = pick(WINDOWS);
      // Every other case on whole minutes (offset 0, a window of whole minutes): counts of types then read the minute rollups.
      const aligned = i % 2 === 1;
      const evs = await previewValues(
        { source: "events", ...c },
        aligned ? Math.ceil(windowMs / 60_000) * 60_000 : windowMs,
        900_000,
        aligned ? 0 : Math.floor(rnd() * 900_000),
      );
      assert.ok(evs.filter((e) => e.value !== null).length >= 8, "values to compare");
      for (const e of evs) {
        const at = Date.parse(e.at);
        const time = { start: iso(at - (aligned ? Math.ceil(windowMs / 60_000) * 60_000 : windowMs)), end: e.at };
        const a = await post("analytics/aggregate", {
          time,
          filters: c.filters,
          aggregations: [
            { name: "v", operation: c.operation, field: c.field },
            { name: "n", operation: "count" },
          ],
        });
        assert.equal(a.status, 200, a.text);
        const [v, n] = a.body.data.results;
        const expected = n.value === 0 ? null : v.value;
        assert.equal(e.value, expected, `${JSON.stringify(c)} over ${windowMs} ms at ${e.at}`);
      }
    }
  });

  it("a ratio is the two analytics/count answers, no data without denominator events", async () => {
    const numerator = { filters: { field: "type", operator: "equals", value: "error" } };
    const denominator = { filters: { field: "type", operator: "in", value: ["request", "error"] } };
    for (const windowMs of [90_000, 3_600_000]) {
      const evs = await previewValues({ source: "ratio", numerator, denominator }, windowMs, 600_000, 0);
      assert.ok(evs.filter((e) => e.value !== null && e.value > 0).length >= 8, "values to compare");
      for (const e of evs) {
        const at = Date.parse(e.at);
        const time = { start: iso(at - windowMs), end: e.at };
        const [n, d] = await Promise.all([
          post("analytics/count", { time, ...numerator }),
          post("analytics/count", { time, ...denominator }),
        ]);
        const expected = d.body.data.count === 0 ? null : n.body.data.count / d.body.data.count;
        assert.equal(e.value, expected, `ratio over ${windowMs} ms at ${e.at}`);
      }
    }
  });
});

describe("funnel and retention samples equal analytics/funnel and analytics/retention", { concurrency: true }, () => {
  it("a funnel's conversion: last step / first over the window ending one conversion window before t", async () => {
    const steps = [
      { filters: { field: "type", operator: "equals", value: "signup" } },
      { filters: { field: "type", operator: "equals", value: "request" } },
      { filters: { field: "type", operator: "equals", value: "error" } },
    ];
    for (const [windowMs, conversionWindowMs] of [
      [3_600_000, 1_200_000],
      [1_800_000 + 7, 600_001],
    ]) {
      const evs = await previewValues({ source: "funnel", steps, conversionWindowMs }, windowMs, 600_000, 12_345);
      assert.ok(evs.filter((e) => e.value !== null && e.value > 0 && e.value < 1).length >= 8, "values to compare");
      for (const e of evs) {
        const at = Date.parse(e.at);
        const f = await post("analytics/funnel", {
          steps,
          windowMs: conversionWindowMs,
          time: { start: iso(at - conversionWindowMs - windowMs), end: iso(at - conversionWindowMs) },
        });
        assert.equal(f.status, 200, f.text);
        assert.equal(e.value, f.body.data.steps.at(-1).conversion ?? null, `funnel over ${windowMs} ms at ${e.at}`);
      }
    }
  });

  it("a retention value: the newest cohort whose period ended by t, values[period] / size", async () => {
    const start = { filters: { field: "type", operator: "equals", value: "join" } };
    const back = { filters: { field: "type", operator: "equals", value: "visit" } };
    const windowMs = 7 * DAY_MS;
    for (const period of [1, 2]) {
      const evs = await previewValues(
        { source: "retention", start, return: back, interval: "day", period },
        windowMs,
        43_200_000,
        5_000_000,
        { start: iso(DAY - 9 * DAY_MS), end: iso(DAY) },
      );
      assert.ok(evs.filter((e) => e.value !== null && e.value > 0 && e.value < 1).length >= 8, "values to compare");
      for (const e of evs) {
        const at = Date.parse(e.at);
        const r = await post("analytics/retention", {
          start,
          return: back,
          interval: "day",
          periods: period + 1,
          time: { start: iso(at - windowMs), end: e.at },
        });
        assert.equal(r.status, 200, r.text);
        // Independently: the newest cohort whose interval `period` (days) ended at or before t.
        const complete = (r.body.data.cohorts as { start: string; size: number; values: number[] }[]).filter(
          (c) => Date.parse(c.start) + (period + 1) * DAY_MS <= at,
        );
        const c = complete.at(-1);
        assert.equal(e.value, c ? c.values[period] / c.size : null, `period ${period} at ${e.at}`);
      }
    }
  });
});

describe("a preview reads its samples in a few statements", () => {
  // Issue #31 (Performance): not one query per evaluation. Pool checkouts during one preview of
  // 181 evaluations (3 hours at a 1-minute cadence) of each kind with an exact plan; background work
  // of the app may take a few meanwhile.
  const queries: [string, unknown][] = [
    [
      "events count by type",
      { source: "events", filters: { field: "type", operator: "equals", value: "error" }, operation: "count" },
    ],
    ["events max of a field", { source: "events", operation: "max", field: "data.ms" }],
    [
      "ratio",
      {
        source: "ratio",
        numerator: { filters: { field: "type", operator: "equals", value: "error" } },
        denominator: {},
      },
    ],
    ["metric sum", { source: "metric", name: "queue", aggregation: "sum" }],
  ];
  for (const [label, query] of queries)
    it(label, async () => {
      const pool = t.app.deps.db as unknown as {
        on(e: "acquire", f: () => void): void;
        off(e: "acquire", f: () => void): void;
      };
      let checkouts = 0;
      const count = () => checkouts++;
      pool.on("acquire", count);
      try {
        const r = await post("alerts/preview", {
          query,
          condition: { operator: "gt", value: 0 },
          windowMs: 600_000,
          everyMs: 60_000,
          time: { start: iso(DAY), end: iso(DAY + SPAN) },
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.data.evaluations.length, 181);
      } finally {
        pool.off("acquire", count);
      }
      assert.ok(checkouts < 30, `${checkouts} pool checkouts for 181 evaluations`);
    });
});
