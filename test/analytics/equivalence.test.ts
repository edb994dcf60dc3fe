import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { assignSlots, backfillSlots } from "../../src/analytics/assign.js";
import { buildPending } from "../../src/analytics/blocks/build.js";
import { OPERATOR_NAMES, OPERATORS, type ValueShape } from "../../src/analytics/filters.js";
import { createPool } from "../../src/storage/db.js";
import { startTestApp, type TestApp, eventsOf, metricOf } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { ingest } from "../helpers/events.js";
import { PLANS, randomModel, SPAN, T0, TYPES } from "./random.js";

// Property-style: on the same randomized data, the fast paths (rollups, typed slots, column blocks)
// and the plain JSON path (ANALYTICS_FAST_PATHS=false, a second Vigil on the same database) answer
// identically. Float sums and averages may differ in the last bits with the order of summation (as
// between two PostgreSQL plans), so numbers are compared to 1e-9 relative.

let fast: TestApp;
let slow: TestApp;
let p: ProjectFixture;
let pool: pg.Pool;
const { rnd, pick, randomEvent, randomFilter } = randomModel(42);
const operatorsOf = (...shapes: ValueShape[]) => OPERATOR_NAMES.filter((op) => shapes.includes(OPERATORS[op]));
const typeFilter = (): unknown =>
  pick([
    undefined,
    { field: "event", operator: "equals", value: pick(TYPES) },
    {
      or: [
        { field: "type", operator: "in", value: ["view", "click"] },
        { field: "event", operator: "starts_with", value: "s" },
      ],
    },
  ]);
function randomWindow() {
  const a = T0 - 3_600_000 + Math.floor(rnd() * SPAN);
  const b = a + Math.floor(rnd() * (rnd() < 0.5 ? 7_200_000 : SPAN));
  return { start: new Date(a).toISOString(), end: new Date(b).toISOString() };
}

before(async () => {
  fast = await startTestApp({
    RATE_LIMIT_EVENTS_PER_MINUTE: "100000",
    ANALYTICS_SLOT_INTERVAL_MS: "0",
    ANALYTICS_BLOCK_INTERVAL_MS: "0",
  });
  slow = await startTestApp(
    { ANALYTICS_FAST_PATHS: "false", ANALYTICS_SLOT_INTERVAL_MS: "0" },
    { databaseUrl: fast.databaseUrl },
  );
  p = await project(fast.rest);
  pool = createPool(fast.databaseUrl, 2);
  await ingest(fast.rest, p.key, Array.from({ length: 600 }, randomEvent));
  // Slots assigned on existing data (backfill), then more events filled by the ingest hook.
  await assignSlots(pool, p.projectId, new Date(), { sample: 10_000, minShare: 0.01 });
  await backfillSlots(pool, p.projectId, new Date());
  await ingest(fast.rest, p.key, Array.from({ length: 600 }, randomEvent));
});
after(async () => {
  await pool.end();
  await slow.close();
  await fast.close();
});

async function same(route: string, body: unknown) {
  const [a, b] = await Promise.all([
    fast.rest.post(`/v1/projects/${p.projectId}/${route}`, body, { key: p.key }),
    slow.rest.post(`/v1/projects/${p.projectId}/${route}`, body, { key: p.key }),
  ]);
  assert.equal(a.status, 200, `${route} ${JSON.stringify(body)}: ${a.text}`);
  assert.deepEqual(close(a.body, b.body), b.body, `${route} ${JSON.stringify(body)}`);
}

/** `a` with every number within 1e-9 (relative) of the corresponding number of `b` replaced by it. */
function close(a: unknown, b: unknown): unknown {
  if (typeof a === "number" && typeof b === "number") return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)) ? b : a;
  if (Array.isArray(a) && Array.isArray(b)) return a.map((x, i) => close(x, b[i]));
  if (a && b && typeof a === "object" && typeof b === "object")
    return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, close(v, (b as Record<string, unknown>)[k])]));
  return a;
}

const blockQueries = async (outcome: "blocks" | "declined") =>
  (await metricOf(fast.app, "vigil_analytics_block_queries_total").get()).values.find(
    (v) => v.labels.outcome === outcome,
  )?.value ?? 0;
const buildBlocks = (projectId: string) => buildPending(pool, projectId, () => new Date(), { sealMs: 0, rebuildMs: 0 });

describe("fast paths answer exactly like the JSON path", () => {
  it("slots are active and hold exactly the JSON values of their type", async () => {
    const r = await pool.query(
      "SELECT key, kind, slot, state FROM analytics_properties WHERE project_id = $1 ORDER BY key",
      [p.projectId],
    );
    assert.deepEqual(
      r.rows.map((x) => `${x.key}:${x.kind}:${x.state}`),
      ["amount:n:active", "country:s:active", "plan:s:active"],
    );
    for (const x of r.rows) {
      const col = `${x.kind}${x.slot}`;
      const expr =
        x.kind === "n"
          ? "CASE WHEN jsonb_typeof(data->$2) = 'number' THEN (data->>$2)::float8 END"
          : "CASE WHEN jsonb_typeof(data->$2) = 'string' THEN data->>$2 END";
      const bad = await pool.query(
        `SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND ${col} IS DISTINCT FROM ${expr}`,
        [p.projectId, x.key],
      );
      assert.equal(bad.rows[0].n, 0, x.key);
    }
  });
  it("rollups equal raw counts", async () => {
    await eventsOf(fast.app).derived.settle(p.projectId); // rollups are derived records: apply what was accepted
    const r = await pool.query(
      "SELECT grain, sum(count)::int AS n FROM analytics_rollups WHERE project_id = $1 GROUP BY grain ORDER BY grain",
      [p.projectId],
    );
    assert.deepEqual(
      r.rows.map((x) => x.n),
      [1200, 1200, 1200],
    );
  });
  it("count and timeseries (rollups) over random windows", async () => {
    for (let i = 0; i < 25; i++) await same("analytics/count", { time: randomWindow(), filters: typeFilter() });
    for (const interval of ["minute", "hour", "day", "week", "month"]) {
      for (let i = 0; i < 4; i++) {
        const time =
          interval === "minute"
            ? { start: new Date(T0).toISOString(), end: new Date(T0 + 3_000_000 + i * 1234).toISOString() }
            : randomWindow();
        await same("analytics/timeseries", { interval, time, filters: typeFilter() });
      }
    }
  });
  it("random filters, aggregations, unique and group (slots)", async () => {
    for (let i = 0; i < 30; i++) {
      const time = randomWindow();
      const filters = randomFilter();
      await same("analytics/count", { time, filters });
      await same("analytics/aggregate", {
        time,
        filters,
        aggregations: [
          { name: "n", operation: "count" },
          { name: "u", operation: "count_unique", field: pick(["plan", "country", "amount"]) },
          { name: "s", operation: "sum", field: "amount" },
          { name: "a", operation: "avg", field: "amount" },
          { name: "mn", operation: "min", field: "amount" },
          { name: "mx", operation: "max", field: "data.amount" },
          { name: "p95", operation: "p95", field: "amount" },
          { name: "sd", operation: "stddev", field: "amount" },
        ],
      });
      await same("analytics/unique", { time, filters, field: pick(["plan", "country", "amount", "userId"]) });
      await same("analytics/group", {
        time,
        filters,
        groupBy: [pick(["plan", "event"]), pick(["country", "data.amount"])],
        limit: 50,
      });
      await same("events/query", { time, filters, pagination: { limit: 20 } });
    }
  });
  it("funnels, retention, measured series and groups: typed slots answer like the JSON", async () => {
    // Their answers are checked against a JS computation in journeys.test.ts; here the fast
    // environment (slots assigned) against the JSON path.
    for (let i = 0; i < 12; i++) {
      const time = randomWindow();
      const steps = Array.from({ length: 2 + (i % 3) }, () => ({ filters: randomFilter() }));
      await same("analytics/funnel", {
        time,
        steps,
        windowMs: pick([3_600_000, 86_400_000]),
        breakdown: pick(["plan", "country", "amount", "tags.env"]),
      });
      await same("analytics/retention", {
        time,
        start: { filters: randomFilter() },
        return: { filters: randomFilter() },
        interval: pick(["day", "week"]),
        periods: 4,
      });
      await same("analytics/timeseries", {
        time,
        filters: randomFilter(),
        interval: pick(["hour", "day"]),
        aggregation: { operation: pick(["sum", "avg", "p50", "count_unique"]), field: "amount" },
      });
      await same("analytics/group", {
        time,
        filters: randomFilter(),
        groupBy: [pick(["plan", "event"])],
        aggregations: [
          { name: "total", operation: "sum", field: "amount" },
          { name: "users", operation: "count_unique" },
        ],
      });
    }
  });
  it("slot-pass group/unique (slot keys, NULL-slot rows keyed from the JSON) and distinct users", async () => {
    // plan is sometimes a number and amount sometimes a string/null/boolean: those rows have a NULL
    // slot and must be keyed from the JSON; the rest come from the slot columns.
    for (let i = 0; i < 20; i++) {
      const time = randomWindow();
      const filters = pick([undefined, randomFilter(), { field: "plan", operator: "equals", value: "pro" }]);
      const groupBy = pick([
        ["plan", "country"],
        ["event", "plan"],
        ["userId", "amount"],
        ["timestamp", "country"],
        ["data.plan", "plan"],
        ["amount"],
        ["country", "tags.env"],
      ]);
      await same("analytics/group", { time, filters, groupBy, limit: pick([5, 1000]) });
      await same("analytics/unique", {
        time,
        filters,
        field: pick(["plan", "amount", "country", "event", "userId"]),
        limit: pick([3, 1000]),
      });
      await same("analytics/aggregate", {
        time,
        filters,
        aggregations: pick([
          [{ name: "users", operation: "count_unique", field: "userId" }],
          [
            { name: "users", operation: "count_unique" },
            { name: "n", operation: "count" },
            { name: "p50", operation: "p50", field: "amount" },
          ],
        ]),
      });
    }
  });
  it("column blocks: stale blocks are read with SQL, rebuilt ones answer; same answers either way", async () => {
    // Blocks of the hours that received the second 600 events no longer match their rollups.
    for (const phase of ["stale", "rebuilt"]) {
      if (phase === "rebuilt") await buildBlocks(p.projectId);
      for (let i = 0; i < 12; i++) {
        const time = randomWindow();
        const filters = pick([undefined, randomFilter(), { field: "plan", operator: "equals", value: "pro" }]);
        await same("analytics/count", { time, filters });
        await same("analytics/group", {
          time,
          filters,
          groupBy: pick([["plan", "country"], ["event"], ["userId", "amount"]]),
          limit: pick([5, 1000]),
        });
        await same("analytics/aggregate", {
          time,
          filters,
          aggregations: [
            { name: "u", operation: "count_unique" },
            { name: "p", operation: "p90", field: "amount" },
            { name: "s", operation: "sum", field: "amount" },
          ],
        });
      }
    }
  });
});

// A project whose keys always hold one JSON type (or are absent): every whole hour is a block.
describe("column blocks answer exactly like the JSON path", () => {
  let q: ProjectFixture;
  const cleanEvent = () => {
    const data: Record<string, unknown> = {};
    // Hostile strings too: they travel through block dictionaries and back to PostgreSQL as jsonb[].
    if (rnd() < 0.9) data.plan = pick([...PLANS, `it's; "x" \\ é 😀`, '{"a": [1]}', "", " pro"]);
    if (rnd() < 0.85) data.amount = Math.round(rnd() * 10_000) / 100;
    if (rnd() < 0.7) data.country = pick(["de", "fr", "us"]);
    return {
      type: pick(TYPES),
      timestamp: new Date(T0 + Math.floor(rnd() * SPAN)).toISOString(),
      userId: rnd() < 0.8 ? `u${Math.floor(rnd() * 30)}` : undefined,
      data,
    };
  };
  before(async () => {
    q = await project(fast.rest);
    await ingest(fast.rest, q.key, Array.from({ length: 1500 }, cleanEvent));
    await assignSlots(pool, q.projectId, new Date(), { sample: 10_000, minShare: 0.01 });
    await backfillSlots(pool, q.projectId, new Date());
    await eventsOf(fast.app).derived.settle(q.projectId);
    const built = await buildBlocks(q.projectId);
    assert.ok(built.built >= 70, `blocks built: ${built.built}`);
  });
  const sameQ = async (route: string, body: unknown) => {
    const [a, b] = await Promise.all([
      fast.rest.post(`/v1/projects/${q.projectId}/${route}`, body, { key: q.key }),
      slow.rest.post(`/v1/projects/${q.projectId}/${route}`, body, { key: q.key }),
    ]);
    assert.equal(a.status, 200, `${route} ${JSON.stringify(body)}: ${a.text}`);
    assert.deepEqual(close(a.body, b.body), b.body, `${route} ${JSON.stringify(body)}`);
  };
  it("random filters, aggregations, unique, group and timeseries", async () => {
    const before = await blockQueries("blocks");
    for (let i = 0; i < 40; i++) {
      const time = randomWindow();
      const filters = pick([
        undefined,
        randomFilter(),
        { field: "plan", operator: "equals", value: "pro" },
        {
          or: [
            { field: "plan", operator: "equals", value: "team" },
            { field: "data.country", operator: "in", value: ["de", "fr"] },
          ],
        },
      ]);
      await sameQ("analytics/count", { time, filters });
      await sameQ("analytics/timeseries", { time, filters, interval: pick(["hour", "day", "week", "month"]) });
      await sameQ("analytics/aggregate", {
        time,
        filters,
        aggregations: [
          { name: "n", operation: "count" },
          { name: "u", operation: "count_unique" },
          { name: "uf", operation: "count_unique", field: pick(["plan", "amount", "event"]) },
          { name: "c", operation: "count", field: pick(["plan", "amount", "userId"]) },
          { name: "s", operation: "sum", field: "amount" },
          { name: "a", operation: "avg", field: "amount" },
          { name: "mn", operation: "min", field: "amount" },
          { name: "mx", operation: "max", field: "amount" },
          { name: "p50", operation: "p50", field: "amount" },
          { name: "p95", operation: "p95", field: "amount" },
          { name: "sd", operation: "stddev", field: "amount" },
        ],
      });
      await sameQ("analytics/unique", {
        time,
        filters,
        field: pick(["plan", "country", "amount", "userId", "event"]),
        limit: pick([3, 1000]),
      });
      await sameQ("analytics/group", {
        time,
        filters,
        groupBy: pick([["plan", "country"], ["event", "plan"], ["userId", "amount"], ["country"], ["amount"]]),
        limit: pick([5, 1000]),
      });
    }
    const used = (await blockQueries("blocks")) - before;
    // Windows shorter than an hour and filters on fields blocks do not carry (meta.depth, tags.env) decline.
    assert.ok(used >= 60, `the block path answered many queries (${used})`);
  });
  it("every operator on every kind of block column, over whole hours", async () => {
    const time = { start: new Date(T0 - 3_600_000).toISOString(), end: new Date(T0 + SPAN + 3_600_000).toISOString() };
    const before = await blockQueries("blocks");
    const values: Record<string, unknown[]> = {
      plan: ["pro", "Pro", 12, true],
      amount: [12.5, 50, "50", false],
      userId: ["u3", 3],
      event: ["view", 1],
      country: ["de", "x"],
    };
    let asked = 0;
    for (const [field, vs] of Object.entries(values)) {
      for (const operator of operatorsOf("none"))
        await sameQ("analytics/count", { time, filters: { field, operator } });
      for (const v of vs) {
        for (const operator of operatorsOf("scalar", "order")) {
          if (typeof v !== "number" && OPERATORS[operator] === "order") continue; // comparisons take numbers (or times: SQL only)
          await sameQ("analytics/count", { time, filters: { field, operator, value: v } });
          asked++;
        }
        if (typeof v === "string")
          for (const operator of operatorsOf("text"))
            await sameQ("analytics/count", { time, filters: { field, operator, value: v.slice(0, 2) } });
      }
      for (const operator of operatorsOf("list"))
        await sameQ("analytics/count", { time, filters: { field, operator, value: vs } });
    }
    assert.ok(asked > 20);
    assert.ok((await blockQueries("blocks")) - before >= asked, "all of them from blocks");
  });
  it("a window of whole hours with data filters is answered from blocks", async () => {
    const time = { start: new Date(T0 - 3_600_000).toISOString(), end: new Date(T0 + SPAN).toISOString() };
    const before = await blockQueries("blocks");
    await sameQ("analytics/group", { time, groupBy: ["plan", "country"] });
    await sameQ("analytics/aggregate", {
      time,
      filters: { field: "plan", operator: "equals", value: "pro" },
      aggregations: [{ name: "p95", operation: "p95", field: "amount" }],
    });
    await sameQ("analytics/count", {
      time,
      filters: {
        or: [
          { field: "plan", operator: "equals", value: "team" },
          { field: "data.country", operator: "in", value: ["de", "fr"] },
        ],
      },
    });
    await sameQ("analytics/aggregate", {
      time,
      aggregations: [{ name: "users", operation: "count_unique", field: "userId" }],
    });
    assert.equal((await blockQueries("blocks")) - before, 4);
  });
});
