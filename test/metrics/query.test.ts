import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorBody } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// query, timeseries, points, current and the list over the real port, with hand-computed answers.
//
// latency (measurement, ms), 2024-03-04 is a Monday:
//   03-04 10:00:10 10 | 10:00:50 20 | 10:01:30 30 | 11:30:00 40 | 03-05 09:15:00 50 | 03-11 00:00:00 100
//   and, recorded last but oldest, 03-01 12:00:00 7 (outside the week's range, never the "current")
//   sorted (in range): 10 20 30 40 50 100, n 6, sum 250
// orders (counter):
//   03-04 10:00:00 +5 | 10:00:30 +3 | 10:02:00 -2 | 12:00:00 +10 | 03-05 08:00:00 -4   net 12

const NOW = new Date("2024-03-20T12:00:00.000Z");
const WEEK = { start: "2024-03-04T00:00:00Z", end: "2024-03-11T00:00:00Z" }; // inclusive end: 03-11 00:00 counts

const { t, p } = useProject({}, { clock: () => NOW }, async () => {
  const m = (type: string, name: string, value: number, timestamp: string, tags?: object) => ({
    type,
    name,
    value,
    timestamp,
    tags,
    unit: name === "latency" ? "ms" : undefined,
  });
  const r = await t.rest.post(
    `/v1/projects/${p.projectId}/metrics/batch`,
    {
      metrics: [
        m("measurement", "latency", 10, "2024-03-04T10:00:10Z", { host: "a", region: "eu" }),
        m("measurement", "latency", 20, "2024-03-04T10:00:50Z", { host: "b" }),
        m("measurement", "latency", 30, "2024-03-04T11:01:30+01:00"),
        m("measurement", "latency", 40, "2024-03-04T11:30:00Z"),
        m("measurement", "latency", 50, "2024-03-05T09:15:00Z"),
        m("measurement", "latency", 100, "2024-03-11T00:00:00Z"),
        m("increment", "orders", 5, "2024-03-04T10:00:00Z", { shop: "eu" }),
        m("increment", "orders", 3, "2024-03-04T10:00:30Z"),
        m("decrement", "orders", 2, "2024-03-04T10:02:00Z", { reason: "refund" }),
        m("increment", "orders", 10, "2024-03-04T12:00:00Z"),
        m("decrement", "orders", 4, "2024-03-05T08:00:00Z"),
        m("measurement", "week", 1, "2024-03-10T23:59:59.999Z"),
        m("measurement", "week", 2, "2024-03-11T00:00:00Z"),
      ],
    },
    { key: p.key },
  );
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.data.accepted, 13);
  // Out of order and older than everything: must not become the latest value.
  const late = await t.rest.post(
    `/v1/projects/${p.projectId}/metrics`,
    { type: "measurement", name: "latency", value: 7, timestamp: "2024-03-01T12:00:00Z" },
    { key: p.key },
  );
  assert.equal(late.status, 201);
});

const post = (route: string, body: unknown) =>
  t.rest.post(`/v1/projects/${p.projectId}/metrics/${route}`, body, { key: p.key });
const query = async (body: object) => {
  const r = await post("query", body);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
};
const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-9, `${a} != ${b}`);

describe("metrics/query", () => {
  it("measurement: avg by default, with name, type, unit, aggregation, value, count", async () => {
    const d = await query({ name: "latency", time: WEEK });
    assert.deepEqual(Object.keys(d).sort(), ["aggregation", "count", "name", "type", "unit", "value"]);
    assert.equal(d.type, "measurement");
    assert.equal(d.unit, "ms");
    assert.equal(d.aggregation, "avg");
    assert.equal(d.count, 6);
    close(d.value, 250 / 6);
  });
  const expected: Record<string, number> = {
    avg: 250 / 6,
    min: 10,
    max: 100,
    sum: 250,
    count: 6,
    p25: 22.5,
    p50: 35,
    p75: 47.5,
    p90: 75,
    p95: 87.5,
    p99: 97.5,
  };
  for (const [aggregation, value] of Object.entries(expected)) {
    it(`measurement ${aggregation} = ${value}`, async () => {
      const d = await query({ name: "latency", aggregation, time: WEEK });
      assert.equal(d.aggregation, aggregation);
      assert.equal(d.count, 6);
      close(d.value, value);
    });
  }
  it("partial edges (raw seconds, minute and hour rollups): 10:00:30..11:30:00 holds 20, 30, 40", async () => {
    const time = { start: "2024-03-04T10:00:30Z", end: "2024-03-04T11:30:00Z" };
    for (const [aggregation, value] of [
      ["avg", 30],
      ["sum", 90],
      ["min", 20],
      ["max", 40],
      ["count", 3],
      ["p50", 30],
    ] as const) {
      const d = await query({ name: "latency", aggregation, time });
      assert.equal(d.count, 3, aggregation);
      close(d.value, value);
    }
  });
  it("the widest range (years 1..9999) reads everything, the late 03-01 point included", async () => {
    const d = await query({
      name: "latency",
      aggregation: "sum",
      time: { start: "0001-01-01T00:00:00Z", end: "9999-12-31T23:59:59.999Z" },
    });
    assert.deepEqual([d.value, d.count], [257, 7]);
    const w = await post("timeseries", {
      name: "latency",
      interval: "1w",
      time: { start: "0001-01-01T00:00:00Z", end: "9999-12-31T23:59:59Z" },
    });
    assert.equal(w.status, 400, w.text);
  });
  it("an empty range: count 0, sum 0, the rest null", async () => {
    const time = { start: "2024-03-06T00:00:00Z", end: "2024-03-06T23:59:59.999Z" };
    assert.deepEqual(
      [(await query({ name: "latency", time })).value, (await query({ name: "latency", time })).count],
      [null, 0],
    );
    assert.equal((await query({ name: "latency", aggregation: "sum", time })).value, 0);
    assert.equal((await query({ name: "latency", aggregation: "p95", time })).value, null);
    assert.equal((await query({ name: "orders", time })).value, 0);
  });

  it("counter: sum (the net change) by default", async () => {
    const d = await query({ name: "orders", time: WEEK });
    assert.deepEqual(d, { name: "orders", type: "counter", unit: null, aggregation: "sum", value: 12, count: 5 });
  });
  it("counter: type counter + operation narrows to one side, values as recorded", async () => {
    const inc = { sum: 18, count: 3, avg: 6, min: 3, max: 10, p50: 5 };
    for (const [aggregation, value] of Object.entries(inc)) {
      const d = await query({ name: "orders", type: "counter", operation: "increment", aggregation, time: WEEK });
      assert.equal(d.count, 3);
      close(d.value, value);
    }
    const dec = { sum: 6, count: 2, avg: 3, min: 2, max: 4, p50: 3, p90: 3.8 };
    for (const [aggregation, value] of Object.entries(dec)) {
      const d = await query({ name: "orders", type: "counter", operation: "decrement", aggregation, time: WEEK });
      assert.equal(d.count, 2);
      close(d.value, value);
    }
    assert.equal((await query({ name: "orders", operation: "decrement", time: WEEK })).value, 6);
  });
  it("counter without operation: statistics over the signed changes", async () => {
    for (const [aggregation, value] of [
      ["avg", 2.4],
      ["min", -4],
      ["max", 10],
      ["count", 5],
      ["p50", 3],
    ] as const) {
      close((await query({ name: "orders", aggregation, time: WEEK })).value, value);
    }
  });
  it("the net change over a sub-range: 10:00:15..10:05 is +3 -2 = 1", async () => {
    close(
      (await query({ name: "orders", time: { start: "2024-03-04T10:00:15Z", end: "2024-03-04T10:05:00Z" } })).value,
      1,
    );
  });
});

describe("metrics/timeseries", () => {
  const series = async (body: object) => {
    const r = await post("timeseries", body);
    assert.equal(r.status, 200, r.text);
    return r.body.data;
  };
  const pairs = (d: any) => d.buckets.map((b: any) => [b.timestamp.slice(0, 19), b.value, b.count]);
  const cases: Record<string, [string, number, number][]> = {
    "1m": [
      ["2024-03-04T10:00:00", 15, 2],
      ["2024-03-04T10:01:00", 30, 1],
      ["2024-03-04T11:30:00", 40, 1],
      ["2024-03-05T09:15:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ],
    "5m": [
      ["2024-03-04T10:00:00", 20, 3],
      ["2024-03-04T11:30:00", 40, 1],
      ["2024-03-05T09:15:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ],
    "15m": [
      ["2024-03-04T10:00:00", 20, 3],
      ["2024-03-04T11:30:00", 40, 1],
      ["2024-03-05T09:15:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ],
    "30m": [
      ["2024-03-04T10:00:00", 20, 3],
      ["2024-03-04T11:30:00", 40, 1],
      ["2024-03-05T09:00:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ],
    "1h": [
      ["2024-03-04T10:00:00", 20, 3],
      ["2024-03-04T11:00:00", 40, 1],
      ["2024-03-05T09:00:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ],
    "6h": [
      ["2024-03-04T06:00:00", 25, 4],
      ["2024-03-05T06:00:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ],
    "12h": [
      ["2024-03-04T00:00:00", 25, 4],
      ["2024-03-05T00:00:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ],
    "1d": [
      ["2024-03-04T00:00:00", 25, 4],
      ["2024-03-05T00:00:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ],
    "1w": [
      ["2024-03-04T00:00:00", 30, 5],
      ["2024-03-11T00:00:00", 100, 1],
    ],
  };
  for (const [interval, want] of Object.entries(cases)) {
    it(`${interval}: UTC-aligned buckets, empty ones omitted`, async () => {
      const d = await series({ name: "latency", interval, time: WEEK });
      assert.deepEqual(
        { ...d, buckets: undefined },
        { name: "latency", type: "measurement", unit: "ms", interval, aggregation: "avg", buckets: undefined },
      );
      assert.deepEqual(pairs(d), want);
      for (const b of d.buckets) assert.match(b.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/);
    });
  }
  it("weeks start on Monday 00:00 UTC", async () => {
    const d = await series({
      name: "week",
      interval: "1w",
      time: { start: "2024-03-01T00:00:00Z", end: "2024-03-15T00:00:00Z" },
    });
    assert.deepEqual(pairs(d), [
      ["2024-03-04T00:00:00", 1, 1],
      ["2024-03-11T00:00:00", 2, 1],
    ]);
  });
  it("counter buckets hold the net change; one side narrows", async () => {
    const d = await series({ name: "orders", interval: "1h", time: WEEK });
    assert.equal(d.aggregation, "sum");
    assert.deepEqual(pairs(d), [
      ["2024-03-04T10:00:00", 6, 3],
      ["2024-03-04T12:00:00", 10, 1],
      ["2024-03-05T08:00:00", -4, 1],
    ]);
    const days = await series({ name: "orders", interval: "1d", time: WEEK });
    assert.deepEqual(pairs(days), [
      ["2024-03-04T00:00:00", 16, 4],
      ["2024-03-05T00:00:00", -4, 1],
    ]);
    const dec = await series({ name: "orders", type: "counter", operation: "decrement", interval: "1d", time: WEEK });
    assert.deepEqual(pairs(dec), [
      ["2024-03-04T00:00:00", 2, 1],
      ["2024-03-05T00:00:00", 4, 1],
    ]);
  });
  it("percentiles and other aggregations per bucket", async () => {
    assert.deepEqual(pairs(await series({ name: "latency", interval: "1d", aggregation: "p50", time: WEEK })), [
      ["2024-03-04T00:00:00", 25, 4],
      ["2024-03-05T00:00:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ]);
    assert.deepEqual(pairs(await series({ name: "latency", interval: "1d", aggregation: "p25", time: WEEK })), [
      ["2024-03-04T00:00:00", 17.5, 4],
      ["2024-03-05T00:00:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ]);
    assert.deepEqual(pairs(await series({ name: "latency", interval: "1d", aggregation: "max", time: WEEK })), [
      ["2024-03-04T00:00:00", 40, 4],
      ["2024-03-05T00:00:00", 50, 1],
      ["2024-03-11T00:00:00", 100, 1],
    ]);
  });
  it("a range that starts inside a bucket counts only what is in the range", async () => {
    const d = await series({
      name: "latency",
      interval: "1h",
      time: { start: "2024-03-04T10:00:30Z", end: "2024-03-04T23:00:00Z" },
    });
    assert.deepEqual(pairs(d), [
      ["2024-03-04T10:00:00", 25, 2],
      ["2024-03-04T11:00:00", 40, 1],
    ]);
  });
});

describe("metrics/points", () => {
  it("raw points in the range, oldest first, with value as recorded, operation and tags", async () => {
    const r = await post("points", {
      name: "orders",
      time: { start: "2024-03-04T10:00:00Z", end: "2024-03-04T10:02:00Z" },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, {
      name: "orders",
      type: "counter",
      unit: null,
      points: [
        { timestamp: "2024-03-04T10:00:00.000Z", value: 5, operation: "increment", tags: { shop: "eu" } },
        { timestamp: "2024-03-04T10:00:30.000Z", value: 3, operation: "increment", tags: {} },
        { timestamp: "2024-03-04T10:02:00.000Z", value: 2, operation: "decrement", tags: { reason: "refund" } },
      ],
    });
    assert.deepEqual(r.body.pagination, { nextCursor: null, hasMore: false });
  });
  it("pages with limit and cursor without skipping or repeating", async () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await post("points", { name: "latency", time: WEEK, limit: 4, cursor });
      assert.equal(r.status, 200, r.text);
      seen.push(...r.body.data.points.map((x: any) => x.value));
      if (!r.body.pagination.hasMore) break;
      cursor = r.body.pagination.nextCursor;
    }
    assert.deepEqual(seen, [10, 20, 30, 40, 50, 100]);
    const first = await post("points", { name: "latency", time: WEEK, limit: 1 });
    assert.deepEqual(first.body.data.points[0], {
      timestamp: "2024-03-04T10:00:10.000Z",
      value: 10,
      operation: "measure",
      tags: { host: "a", region: "eu" },
    });
  });
});

describe("metrics/current and the list", () => {
  it("measurement: the latest observation by timestamp (an older late arrival does not replace it)", async () => {
    const r = await post("current", { name: "latency" });
    assert.deepEqual(r.body.data, {
      name: "latency",
      type: "measurement",
      value: 100,
      lastTimestamp: "2024-03-11T00:00:00.000Z",
    });
  });
  it("counter: the all-time cumulative value", async () => {
    const r = await post("current", { name: "orders" });
    assert.deepEqual(r.body.data, {
      name: "orders",
      type: "counter",
      value: 12,
      lastTimestamp: "2024-03-05T08:00:00.000Z",
    });
  });
  it("a name never recorded is a 404 on current, query, timeseries and points", async () => {
    for (const [route, body] of [
      ["current", { name: "nope" }],
      ["query", { name: "nope", time: WEEK }],
      ["timeseries", { name: "nope", interval: "1h", time: WEEK }],
      ["points", { name: "nope", time: WEEK }],
    ] as const) {
      const r = await post(route, body);
      assert.equal(r.status, 404, `${route}: ${r.text}`);
      assert.equal(errorBody(r).code, "not_found");
    }
  });
  it("GET .../metrics lists {name, type}", async () => {
    const r = await t.rest.get(`/v1/projects/${p.projectId}/metrics`, { key: p.key });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data, [
      { name: "latency", type: "measurement" },
      { name: "orders", type: "counter" },
      { name: "week", type: "measurement" },
    ]);
  });
});

describe("read validation", () => {
  const bad: [string, string, object, string][] = [
    ["query", "missing time", { name: "latency" }, "time"],
    [
      "query",
      "time without timezone",
      { name: "latency", time: { start: "2024-03-04T00:00:00", end: "2024-03-05T00:00:00Z" } },
      "time.start",
    ],
    [
      "query",
      "start after end",
      { name: "latency", time: { start: "2024-03-05T00:00:00Z", end: "2024-03-04T00:00:00Z" } },
      "time.start",
    ],
    ["query", "unknown aggregation", { name: "latency", aggregation: "median", time: WEEK }, "aggregation"],
    ["query", "missing name", { time: WEEK }, "name"],
    ["query", "$ name", { name: "$measure", time: WEEK }, "name"],
    ["query", "type that is not the metric's", { name: "latency", type: "counter", time: WEEK }, "type"],
    ["query", "operation on a measurement", { name: "latency", operation: "increment", time: WEEK }, "operation"],
    ["query", "unknown operation", { name: "orders", operation: "reset", time: WEEK }, "operation"],
    ["query", "time of the wrong type", { name: "latency", time: "last week" }, "time"],
    ["timeseries", "missing interval", { name: "latency", time: WEEK }, "interval"],
    ["timeseries", "unknown interval", { name: "latency", interval: "2h", time: WEEK }, "interval"],
    [
      "timeseries",
      "too many buckets",
      { name: "latency", interval: "1m", time: { start: "2020-01-01T00:00:00Z", end: "2024-01-01T00:00:00Z" } },
      "interval",
    ],
    ["points", "limit 0", { name: "latency", time: WEEK, limit: 0 }, "limit"],
    ["points", "limit over 10000", { name: "latency", time: WEEK, limit: 10001 }, "limit"],
    ["points", "a forged cursor", { name: "latency", time: WEEK, cursor: "bm90LWEtY3Vyc29y" }, "cursor"],
    ["current", "missing name", {}, "name"],
    ["current", "a name with a NUL", { name: "a\u0000" }, "name"],
    ["query", "a name with a lone surrogate", { name: "a\ud800", time: WEEK }, "name"],
  ];
  for (const [route, label, body, field] of bad) {
    it(`${route}: ${label} is a 400 naming ${field}`, async () => {
      const r = await post(route, body);
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.ok(
        (e.details as any[]).some((d) => d.field === field),
        r.text,
      );
    });
  }
});
