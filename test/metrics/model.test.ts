import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { metricPoints, registryDeltas, rollupRows } from "../../src/metrics/committing.js";
import { DAY_MS as DAY, HOUR_MS as HOUR, MINUTE_MS as MINUTE } from "../../src/shared/time.js";
import {
  INTERVALS,
  bucketStart,
  defaultAggregation,
  fromMoments,
  planSegments,
  type Interval,
} from "../../src/metrics/model.js";
import { checkMetric } from "../../src/metrics/validate.js";
import type { StoredEvent } from "../../src/events/pipeline.js";

// Pure functions of the metrics domain, with hand-computed answers.

const ms = (s: string) => Date.parse(s);
const iso = (n: number) => new Date(n).toISOString();

describe("bucket alignment (UTC, weeks from Monday)", () => {
  const at = ms("2024-03-06T13:47:29.123Z"); // a Wednesday
  const expected: Record<Interval, string> = {
    "1m": "2024-03-06T13:47:00.000Z",
    "5m": "2024-03-06T13:45:00.000Z",
    "15m": "2024-03-06T13:45:00.000Z",
    "30m": "2024-03-06T13:30:00.000Z",
    "1h": "2024-03-06T13:00:00.000Z",
    "6h": "2024-03-06T12:00:00.000Z",
    "12h": "2024-03-06T12:00:00.000Z",
    "1d": "2024-03-06T00:00:00.000Z",
    "1w": "2024-03-04T00:00:00.000Z",
  };
  for (const [interval, want] of Object.entries(expected) as [Interval, string][]) {
    it(`${interval}: ${want}`, () => assert.equal(iso(bucketStart(at, INTERVALS[interval])), want));
  }
  it("a Sunday belongs to the week of the previous Monday; Monday 00:00 starts a new one", () => {
    assert.equal(iso(bucketStart(ms("2024-03-10T23:59:59.999Z"), INTERVALS["1w"])), "2024-03-04T00:00:00.000Z");
    assert.equal(iso(bucketStart(ms("2024-03-11T00:00:00.000Z"), INTERVALS["1w"])), "2024-03-11T00:00:00.000Z");
  });
  it("a boundary is its own bucket start", () => {
    for (const w of Object.values(INTERVALS)) assert.equal(bucketStart(bucketStart(at, w), w), bucketStart(at, w));
  });
});

describe("planSegments", () => {
  it("uses days, hours, minutes and raw edges, covering the range exactly once", () => {
    const from = ms("2024-03-04T10:00:30Z"),
      to = ms("2024-03-07T11:30:00.001Z");
    const segs = planSegments(from, to).map((s) => [s.level, iso(s.from), iso(s.to)]);
    assert.deepEqual(segs, [
      [0, "2024-03-04T10:00:30.000Z", "2024-03-04T10:01:00.000Z"],
      [1, "2024-03-04T10:01:00.000Z", "2024-03-04T11:00:00.000Z"],
      [2, "2024-03-04T11:00:00.000Z", "2024-03-05T00:00:00.000Z"],
      [3, "2024-03-05T00:00:00.000Z", "2024-03-07T00:00:00.000Z"],
      [2, "2024-03-07T00:00:00.000Z", "2024-03-07T11:00:00.000Z"],
      [1, "2024-03-07T11:00:00.000Z", "2024-03-07T11:30:00.000Z"],
      [0, "2024-03-07T11:30:00.000Z", "2024-03-07T11:30:00.001Z"],
    ]);
  });
  it("never reads a level wider than the bucket", () => {
    const segs = planSegments(ms("2024-03-04T00:00:00Z"), ms("2024-03-06T00:00:00Z"), 15 * MINUTE);
    assert.deepEqual(
      segs.map((s) => s.level),
      [1],
    );
  });
  it("a range inside one minute is raw only; an empty range is nothing", () => {
    assert.deepEqual(
      planSegments(ms("2024-03-04T00:00:10Z"), ms("2024-03-04T00:00:20Z")).map((s) => s.level),
      [0],
    );
    assert.deepEqual(planSegments(5, 5), []);
  });
  it("covers random ranges contiguously", () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 500; i++) {
      const from = ms("2024-01-01T00:00:00Z") + Math.floor(rnd() * 90 * DAY);
      const to = from + Math.floor(rnd() * 40 * DAY * (rnd() < 0.5 ? 0.001 : 1));
      const segs = planSegments(from, to, [MINUTE, HOUR, DAY, Infinity][i % 4]);
      let cur = from;
      for (const s of segs) {
        assert.equal(s.from, cur);
        assert.ok(s.to > s.from);
        const width = [1, MINUTE, HOUR, DAY][s.level];
        if (s.level > 0) assert.equal(bucketStart(s.from, width), s.from);
        cur = s.to;
      }
      assert.equal(cur, Math.max(from, to));
    }
  });
});

describe("aggregation", () => {
  it("defaults: avg for measurements, sum (net change) for counters", () => {
    assert.equal(defaultAggregation("measurement"), "avg");
    assert.equal(defaultAggregation("counter"), "sum");
  });
  it("from signed moments, and as recorded for decrements", () => {
    const m = { n: 4, sum: 10, min: -2, max: 7 };
    assert.equal(fromMoments("sum", m, false), 10);
    assert.equal(fromMoments("avg", m, false), 2.5);
    assert.equal(fromMoments("min", m, false), -2);
    assert.equal(fromMoments("max", m, false), 7);
    assert.equal(fromMoments("count", m, false), 4);
    const dec = { n: 2, sum: -6, min: -4, max: -2 }; // decrements of 2 and 4
    assert.equal(fromMoments("sum", dec, true), 6);
    assert.equal(fromMoments("avg", dec, true), 3);
    assert.equal(fromMoments("min", dec, true), 2);
    assert.equal(fromMoments("max", dec, true), 4);
    const none = { n: 0, sum: 0, min: null, max: null };
    assert.equal(fromMoments("sum", none, false), 0);
    assert.equal(fromMoments("count", none, false), 0);
    assert.equal(fromMoments("avg", none, false), null);
    assert.equal(fromMoments("min", none, true), null);
  });
});

describe("checkMetric", () => {
  const now = new Date("2024-03-20T12:00:00Z");
  it("accepts the spec's shape, defaults the timestamp to now", () => {
    const c = checkMetric(
      { type: "increment", name: "orders", value: 2, unit: "orders", tags: { shop: "eu", vip: true, n: 3 } },
      now,
    );
    assert.ok(c.ok);
    assert.equal(c.metric.metricType, "counter");
    assert.equal(c.metric.op, "increment");
    assert.equal(c.metric.timestamp.getTime(), now.getTime());
    const z = checkMetric({ type: "measurement", name: "t", value: -1.5, timestamp: "2024-03-20T13:00:00+02:00" }, now);
    assert.ok(z.ok);
    assert.equal(z.metric.timestamp.toISOString(), "2024-03-20T11:00:00.000Z");
  });
  for (const [label, raw, field] of [
    ["not an object", [1], "(metric)"],
    ["missing type", { name: "a", value: 1 }, "type"],
    ["unknown type", { type: "gauge", name: "a", value: 1 }, "type"],
    ["missing name", { type: "measurement", value: 1 }, "name"],
    ["blank name", { type: "measurement", name: "  ", value: 1 }, "name"],
    ["$ name", { type: "measurement", name: "$cpu", value: 1 }, "name"],
    ["numeric name", { type: "measurement", name: 5, value: 1 }, "name"],
    ["NUL in name", { type: "measurement", name: "a\u0000b", value: 1 }, "name"],
    ["long name", { type: "measurement", name: "x".repeat(201), value: 1 }, "name"],
    ["missing value", { type: "measurement", name: "a" }, "value"],
    ["string value", { type: "measurement", name: "a", value: "12" }, "value"],
    ["boolean value", { type: "measurement", name: "a", value: true }, "value"],
    ["negative increment", { type: "increment", name: "a", value: -1 }, "value"],
    ["negative decrement", { type: "decrement", name: "a", value: -0.5 }, "value"],
    ["numeric unit", { type: "measurement", name: "a", value: 1, unit: 3 }, "unit"],
    [
      "timestamp without timezone",
      { type: "measurement", name: "a", value: 1, timestamp: "2024-03-20T10:00:00" },
      "timestamp",
    ],
    ["garbage timestamp", { type: "measurement", name: "a", value: 1, timestamp: "yesterday" }, "timestamp"],
    ["numeric timestamp", { type: "measurement", name: "a", value: 1, timestamp: 1710000000 }, "timestamp"],
    [
      "timestamp far in the future",
      { type: "measurement", name: "a", value: 1, timestamp: "2024-03-22T12:00:00Z" },
      "timestamp",
    ],
    ["tags not an object", { type: "measurement", name: "a", value: 1, tags: ["x"] }, "tags"],
    ["nested tag value", { type: "measurement", name: "a", value: 1, tags: { a: { b: 1 } } }, "tags.a"],
    ["NUL in a tag value", { type: "measurement", name: "a", value: 1, tags: { a: "\u0000" } }, "tags.a"],
    ["lone surrogate in a tag value", { type: "measurement", name: "a", value: 1, tags: { a: "x\ud800" } }, "tags.a"],
    ["lone surrogate in a tag key", { type: "measurement", name: "a", value: 1, tags: { "\udc00": "x" } }, "tags"],
    ["lone surrogate in the name", { type: "measurement", name: "a\udfff", value: 1 }, "name"],
  ] as const) {
    it(`refuses ${label} (field ${field})`, () => {
      const c = checkMetric(raw, now);
      assert.equal(c.ok, false);
      if (!c.ok) assert.equal(c.error.field, field);
    });
  }
  it("well-formed non-ASCII text is accepted", () =>
    assert.ok(checkMetric({ type: "measurement", name: "température 🌡", value: 1, tags: { clé: "värde ✓" } }, now).ok));
  it("counter changes of 0 are accepted", () =>
    assert.ok(checkMetric({ type: "decrement", name: "a", value: 0 }, now).ok));
});

describe("hook folding", () => {
  const ev = (type: string, data: Record<string, unknown>, ts: string, projectId = "p1"): StoredEvent => ({
    id: "0190a000-0000-7000-8000-000000000000",
    projectId,
    type,
    timestamp: new Date(ts),
    userId: null,
    groupId: null,
    sourceId: null,
    data,
    context: {},
    tags: {},
    createdAt: new Date(ts),
  });
  it("ignores batches without metric events", () => {
    assert.deepEqual(
      metricPoints([
        ev("signup", { name: "a", value: 1 }, "2024-03-04T00:00:00Z"),
        ev("$page", {}, "2024-03-04T00:00:00Z"),
      ]),
      [],
    );
  });
  it("sums counter deltas, keeps the latest measurement by timestamp, sorts by (project, name)", () => {
    const pts = metricPoints([
      ev("$increment", { name: "b", value: 5 }, "2024-03-04T00:00:00Z"),
      ev("$decrement", { name: "b", value: 2 }, "2024-03-04T00:01:00Z"),
      ev("$measure", { name: "a", value: 7, unit: "ms" }, "2024-03-04T00:05:00Z"),
      ev("$measure", { name: "a", value: 3 }, "2024-03-04T00:02:00Z"),
      ev("$measure", { name: "b", value: 1 }, "2024-03-04T00:09:00Z"), // other type: not folded
    ]);
    const d = registryDeltas(pts);
    assert.deepEqual(
      d.map((x) => [x.name, x.type, x.total, x.lastValue, iso(x.lastTs), x.unit]),
      [
        ["a", "measurement", 0, 7, "2024-03-04T00:05:00.000Z", "ms"],
        ["b", "counter", 3, null, "2024-03-04T00:01:00.000Z", null],
      ],
    );
  });
  it("rolls up per minute, hour and day over signed values", () => {
    const rows = rollupRows([
      { metricId: "1", op: "increment", v: 5, ts: ms("2024-03-04T10:00:10Z") },
      { metricId: "1", op: "increment", v: 3, ts: ms("2024-03-04T10:00:50Z") },
      { metricId: "1", op: "decrement", v: -2, ts: ms("2024-03-04T10:59:00Z") },
    ]);
    assert.deepEqual(
      rows.map((r) => [r.level, iso(r.bucket), r.op, r.n, r.sum, r.min, r.max]),
      [
        [1, "2024-03-04T10:00:00.000Z", 1, 2, 8, 3, 5],
        [1, "2024-03-04T10:59:00.000Z", 2, 1, -2, -2, -2],
        [2, "2024-03-04T10:00:00.000Z", 1, 2, 8, 3, 5],
        [2, "2024-03-04T10:00:00.000Z", 2, 1, -2, -2, -2],
        [3, "2024-03-04T00:00:00.000Z", 1, 2, 8, 3, 5],
        [3, "2024-03-04T00:00:00.000Z", 2, 1, -2, -2, -2],
      ],
    );
  });
});
