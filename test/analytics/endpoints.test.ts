import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorBody } from "../helpers/fixtures.js";
import { ingest } from "../helpers/events.js";
import { ALL, EVENTS } from "./dataset.js";
import { useProject } from "../helpers/use.js";

// Timeseries buckets (UTC edges, zeros), exact percentiles, unique/group ordering and the event
// query's keyset pages, over the fixed data set (answers known by hand).

const { t, p } = useProject(
  { RATE_LIMIT_EVENTS_PER_MINUTE: "100000", ANALYTICS_SLOT_INTERVAL_MS: "0" },
  {},
  async () => {
    await ingest(t.rest, p.key, EVENTS);
  },
);

const post = (route: string, body: unknown) =>
  t.rest.post(`/v1/projects/${p.projectId}/${route}`, body, { key: p.key });
async function series(interval: string, start: string, end: string, filters?: unknown) {
  const r = await post("analytics/timeseries", { interval, time: { start, end }, filters });
  assert.equal(r.status, 200, r.text);
  return r.body.data.buckets.map(
    (b: { time: string; count: number }) => `${b.time.replace(":00.000Z", "")}=${b.count}`,
  );
}

describe("timeseries", () => {
  it("hour buckets with UTC edges and zero buckets", async () => {
    assert.deepEqual(await series("hour", "2024-01-01T00:00:00Z", "2024-01-01T02:30:00Z"), [
      "2024-01-01T00:00=2",
      "2024-01-01T01:00=1",
      "2024-01-01T02:00=0",
    ]);
  });
  it("minute buckets", async () => {
    assert.deepEqual(await series("minute", "2024-01-01T00:58:30Z", "2024-01-01T01:00:00Z"), [
      "2024-01-01T00:58=0",
      "2024-01-01T00:59=1",
      "2024-01-01T01:00=1",
    ]);
  });
  it("day buckets split at midnight UTC", async () => {
    assert.deepEqual(await series("day", "2024-01-07T00:00:00Z", "2024-01-08T23:59:59.999Z"), [
      "2024-01-07T00:00=1",
      "2024-01-08T00:00=1",
    ]);
  });
  it("weeks start on Monday 00:00 UTC, also for a window starting mid-week", async () => {
    assert.deepEqual(await series("week", "2024-01-01T00:00:00Z", "2024-01-14T23:59:59.999Z"), [
      "2024-01-01T00:00=4",
      "2024-01-08T00:00=1",
    ]);
    assert.deepEqual(await series("week", "2024-01-03T00:00:00Z", "2024-01-10T00:00:00Z"), [
      "2024-01-01T00:00=1",
      "2024-01-08T00:00=1",
    ]);
  });
  it("months start on the 1st, zero months included", async () => {
    assert.deepEqual(await series("month", ALL.start, ALL.end), [
      "2024-01-01T00:00=6",
      "2024-02-01T00:00=2",
      "2024-03-01T00:00=0",
    ]);
    assert.deepEqual(await series("month", ALL.start, ALL.end, { field: "amount", operator: "gt", value: 55 }), [
      "2024-01-01T00:00=1",
      "2024-02-01T00:00=1",
      "2024-03-01T00:00=0",
    ]);
  });
  it("refuses a bad interval and too many buckets", async () => {
    for (const interval of ["fortnight", "", "HOUR"])
      assert.equal((await post("analytics/timeseries", { interval, time: ALL })).status, 400);
    const r = await post("analytics/timeseries", {
      interval: "minute",
      time: { start: "2020-01-01T00:00:00Z", end: "2024-01-01T00:00:00Z" },
    });
    assert.equal(r.status, 400);
    errorBody(r);
  });
});

describe("aggregate", () => {
  it("computes exact percentiles (percentile_cont) and ignores non-numbers", async () => {
    const ops = ["count", "count_unique", "sum", "avg", "min", "max", "p50", "p90", "p95", "p99", "stddev"];
    const aggregations = ops.map((operation) => ({
      name: operation,
      operation,
      field: operation.startsWith("count") ? undefined : "amount",
    }));
    aggregations.push(
      { name: "plans", operation: "count_unique", field: "plan" },
      { name: "none", operation: "avg", field: "data.missing" },
      { name: "sdNone", operation: "stddev", field: "data.missing" },
    );
    const r = await post("analytics/aggregate", { time: ALL, aggregations });
    assert.equal(r.status, 200, r.text);
    const got = Object.fromEntries(r.body.data.results.map((x: { name: string; value: number }) => [x.name, x.value]));
    // numbers of data.amount: 10, 20, 30, 50, 60.5, 70 (the string "40" is ignored)
    assert.deepEqual(got, {
      count: 8,
      count_unique: 4,
      sum: 240.5,
      avg: 240.5 / 6,
      min: 10,
      max: 70,
      p50: 40,
      p90: 65.25,
      p95: 67.625,
      p99: 69.525,
      stddev: 23.74956139945887, // sample standard deviation (n − 1), Vigil's own operation
      plans: 3,
      none: null,
      sdNone: null,
    });
    assert.deepEqual(
      r.body.data.results.map((x: { name: string }) => x.name),
      [...ops, "plans", "none", "sdNone"],
    );
  });
  it("refuses numeric operations without a numeric field, unknown operations and duplicate names", async () => {
    for (const aggregations of [
      [{ name: "s", operation: "sum" }],
      [{ name: "s", operation: "median", field: "amount" }],
      [
        { name: "a", operation: "count" },
        { name: "a", operation: "count" },
      ],
      [],
      [{ name: "s", operation: "sum", field: "userId" }],
      [{ name: "s", operation: "p100", field: "amount" }],
    ]) {
      const r = await post("analytics/aggregate", { time: ALL, aggregations });
      assert.equal(r.status, 400, JSON.stringify(aggregations));
      errorBody(r);
    }
  });
});

describe("unique and group", () => {
  it("orders unique values by count, then by value", async () => {
    const r = await post("analytics/unique", { field: "plan", time: ALL });
    assert.deepEqual(r.body.data.values, [
      { value: "pro", count: 3 },
      { value: "free", count: 1 },
      { value: "team", count: 1 },
    ]);
    const u = await post("analytics/unique", { field: "userId", time: ALL, limit: 2 });
    assert.deepEqual(u.body.data.values, [
      { value: "u1", count: 2 },
      { value: "u2", count: 2 },
    ]);
    const a = await post("analytics/unique", {
      field: "amount",
      time: ALL,
      filters: { field: "event", operator: "equals", value: "purchase" },
    });
    assert.deepEqual(a.body.data.values.map((v: { value: unknown }) => v.value).sort(), [30, 50, "40"].sort());
  });
  it("groups keyed by the field names as given, by count descending", async () => {
    const r = await post("analytics/group", { groupBy: ["event", "data.plan"], time: ALL });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data.groups, [
      { event: "view", "data.plan": null, count: 3 },
      { event: "purchase", "data.plan": "pro", count: 2 },
      { event: "purchase", "data.plan": "team", count: 1 },
      { event: "signup", "data.plan": "free", count: 1 },
      { event: "signup", "data.plan": "pro", count: 1 },
    ]);
    const l = await post("analytics/group", { groupBy: ["userId"], time: ALL, limit: 1 });
    assert.deepEqual(l.body.data.groups, [{ userId: "u1", count: 2 }]);
  });
  it("refuses bad group and unique requests", async () => {
    for (const [route, body] of [
      ["analytics/group", { groupBy: [], time: ALL }],
      ["analytics/group", { groupBy: ["a", "a"], time: ALL }],
      ["analytics/group", { groupBy: ["count"], time: ALL }],
      ["analytics/group", { groupBy: ["a"], time: ALL, limit: 0 }],
      ["analytics/group", { groupBy: "event", time: ALL }],
      ["analytics/unique", { time: ALL }],
      ["analytics/unique", { field: "plan" }],
      ["analytics/unique", { field: "plan", time: ALL, limit: 5000 }],
    ] as const) {
      const r = await post(route, body);
      assert.equal(r.status, 400, `${route} ${JSON.stringify(body)} ${r.text}`);
      errorBody(r);
    }
  });
});

describe("events/query", () => {
  it("refuses a time window given without its bounds (400), as the document's time.required says; absent is no window", async () => {
    for (const route of ["events/query", "events/export"]) {
      const r = await post(route, { time: {} });
      assert.equal(r.status, 400, `${route}: ${r.text}`);
      const e = errorBody(r);
      assert.deepEqual(
        (e.details as { field: string }[]).map((d) => d.field),
        ["time.start", "time.end"],
        route,
      );
      assert.equal((await post(route, {})).status, 200, route);
    }
  });
  it("pages newest first with pagination.limit and pagination.cursor, never skipping or repeating", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await post("events/query", { pagination: { limit: 3, cursor } });
      assert.equal(r.status, 200, r.text);
      seen.push(...r.body.data.map((e: { timestamp: string }) => e.timestamp));
      assert.equal(r.body.pagination.hasMore, r.body.pagination.nextCursor !== null);
      cursor = r.body.pagination.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, EVENTS.map((e) => e.timestamp).reverse());
  });
  it("answers the event list's JSON shape, filtered and windowed", async () => {
    const r = await post("events/query", {
      filters: { field: "event", operator: "equals", value: "signup" },
      time: { start: "2024-01-01T00:00:00Z", end: "2024-01-01T00:30:00Z" },
    });
    assert.equal(r.body.data.length, 1);
    const e = r.body.data[0];
    assert.deepEqual(Object.keys(e).sort(), [
      "context",
      "createdAt",
      "data",
      "groupId",
      "id",
      "projectId",
      "sourceId",
      "tags",
      "timestamp",
      "type",
      "userId",
    ]);
    assert.equal(e.projectId, p.projectId);
    assert.deepEqual(e.data.nested, { a: { b: "deep" } });
    assert.equal(e.tags.env, "prod");
    assert.equal(typeof e.sourceId, "string");
  });
  it("refuses bad limits and cursors with 400", async () => {
    for (const pagination of [
      { limit: 0 },
      { limit: 101 },
      { cursor: "garbage!" },
      { cursor: Buffer.from("1.x").toString("base64url") },
      { limit: "ten" },
    ]) {
      const r = await post("events/query", { pagination });
      assert.equal(r.status, 400, JSON.stringify(pagination));
      errorBody(r);
    }
  });
});
