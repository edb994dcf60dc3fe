import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { AlertService } from "../../gen/vigil/v1/alerts_pb.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, memberOf, project, type Account, type ProjectFixture } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// The alert routes over the real port (decisions.md: Alerts): create, list, get, update, delete,
// evaluations and preview; validation 400s; the monitor each alert owns (type custom, its name and
// slug): a heartbeat to it is a 409, pausing it pauses the alert, deleting the alert deletes it.

let other: ProjectFixture;
let member: Account;

const { t, p } = useProject({ ...GENEROUS_LIMITS, MAX_ALERTS_PER_PROJECT: "4" }, {}, async () => {
  other = await project(t.rest);
  member = await memberOf(t.rest, p);
  // latency (measurement) on 2024-03-04: 10:00:10 10 | 10:00:50 20 | 10:01:30 30 | 10:02:30 500 | 10:03:10 600
  const points: [string, number][] = [
    ["10:00:10", 10],
    ["10:00:50", 20],
    ["10:01:30", 30],
    ["10:02:30", 500],
    ["10:03:10", 600],
  ];
  const r = await t.rest.post(
    `/v1/projects/${p.projectId}/metrics/batch`,
    {
      metrics: points.map(([time, value]) => ({
        type: "measurement",
        name: "latency",
        value,
        timestamp: `2024-03-04T${time}Z`,
      })),
    },
    { key: p.key },
  );
  assert.equal(r.status, 201, r.text);
});

const alerts = (projectId = p.projectId) => `/v1/projects/${projectId}/alerts`;
const metricQuery = { source: "metric", name: "latency", aggregation: "avg" };
const body = (over: Record<string, unknown> = {}) => ({
  name: "Slow API",
  query: metricQuery,
  condition: { operator: "gt", value: 100 },
  windowMs: 60_000,
  ...over,
});

async function create(over: Record<string, unknown> = {}) {
  const r = await t.rest.post(alerts(), body(over), { key: p.key });
  assert.equal(r.status, 201, r.text);
  return r.body.data;
}

async function remove(id: string) {
  assert.equal((await t.rest.del(`${alerts()}/${id}`, { key: p.key })).status, 204);
}

describe("alerts: CRUD", () => {
  it("creates an alert with its defaults and the record's fields, and a custom monitor it owns", async () => {
    const a = await create();
    assert.match(a.id, /^alr_[0-9A-Za-z]{20}$/);
    assert.deepEqual(Object.keys(a).sort(), [
      "condition",
      "createdAt",
      "evaluationOffsetMs",
      "everyMs",
      "forMs",
      "id",
      "lastEvaluatedAt",
      "minSamples",
      "monitorId",
      "name",
      "noData",
      "pendingSince",
      "query",
      "resolve",
      "slug",
      "state",
      "updatedAt",
      "value",
      "windowMs",
    ]);
    assert.equal(a.name, "Slow API");
    assert.equal(a.slug, "slow-api");
    assert.deepEqual(a.query, metricQuery);
    assert.deepEqual(a.condition, { operator: "gt", value: 100 });
    assert.equal(a.windowMs, 60_000);
    assert.equal(a.everyMs, 60_000);
    assert.equal(a.forMs, 0);
    assert.equal(a.resolve, null);
    assert.equal(a.noData, "ok");
    assert.equal(a.minSamples, 1);
    assert.ok(a.evaluationOffsetMs >= 0 && a.evaluationOffsetMs < 60_000);
    assert.equal(a.state, "ok");
    assert.equal(a.lastEvaluatedAt, null);
    assert.equal(a.value, null);
    assert.equal(a.pendingSince, null);
    const m = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${a.monitorId}`, { key: p.key });
    assert.equal(m.status, 200, m.text);
    assert.equal(m.body.data.type, "custom");
    assert.equal(m.body.data.name, "Slow API");
    assert.equal(m.body.data.slug, "slow-api");
    assert.equal(m.body.data.status, "unknown");

    const g = await t.rest.get(`${alerts()}/${a.id}`, { cookie: member.cookie });
    assert.equal(g.status, 200, g.text);
    assert.equal(g.body.data.id, a.id);
    // Another project's alert is a 404.
    assert.equal((await t.rest.get(`${alerts(other.projectId)}/${a.id}`, { key: other.key })).status, 404);
    assert.equal((await t.rest.get(`${alerts()}/${a.id}`, { key: other.key })).status, 404);
    await remove(a.id);
  });

  it("lists newest first with pagination, updates and deletes (with its monitor)", async () => {
    const a = await create({ name: "First" });
    const b = await create({
      name: "Second",
      slug: "second-alert",
      query: { source: "events", filters: { field: "type", operator: "equals", value: "signup" }, operation: "count" },
      condition: { operator: "lt", value: 1 },
      noData: "alerting",
      everyMs: 30_000,
      forMs: 60_000,
      resolve: { operator: "gte", value: 3, forMs: 30_000 },
      minSamples: 2,
    });
    assert.equal(b.slug, "second-alert");
    assert.deepEqual(b.resolve, { operator: "gte", value: 3, forMs: 30_000 });
    const page1 = await t.rest.get(`${alerts()}?limit=1`, { key: p.key });
    assert.equal(page1.status, 200, page1.text);
    assert.deepEqual(
      page1.body.data.map((x: { id: string }) => x.id),
      [b.id],
    );
    assert.equal(page1.body.pagination.hasMore, true);
    const page2 = await t.rest.get(`${alerts()}?limit=1&cursor=${page1.body.pagination.nextCursor}`, { key: p.key });
    assert.deepEqual(
      page2.body.data.map((x: { id: string }) => x.id),
      [a.id],
    );
    assert.equal(page2.body.pagination.hasMore, false);
    assert.equal(page2.body.pagination.nextCursor, null);
    assert.equal((await t.rest.get(`${alerts()}?cursor=nope`, { key: p.key })).status, 400);

    const u = await t.rest.patch(
      `${alerts()}/${b.id}`,
      { name: "Renamed", everyMs: 20_000, resolve: null, condition: { operator: "lte", value: 0 } },
      { key: p.key },
    );
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.data.name, "Renamed");
    assert.equal(u.body.data.slug, "second-alert");
    assert.equal(u.body.data.everyMs, 20_000);
    assert.ok(u.body.data.evaluationOffsetMs < 20_000);
    assert.equal(u.body.data.resolve, null);
    assert.deepEqual(u.body.data.condition, { operator: "lte", value: 0 });
    assert.equal(u.body.data.minSamples, 2, "unchanged");
    const m = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${b.monitorId}`, { key: p.key });
    assert.equal(m.body.data.name, "Renamed");
    // A slug another monitor has: 409.
    const dup = await t.rest.patch(`${alerts()}/${b.id}`, { slug: "first" }, { key: p.key });
    assert.equal(dup.status, 409, dup.text);
    assert.equal(errorBody(dup).code, "conflict");

    await remove(b.id);
    assert.equal((await t.rest.get(`${alerts()}/${b.id}`, { key: p.key })).status, 404);
    assert.equal((await t.rest.get(`/v1/projects/${p.projectId}/monitors/${b.monitorId}`, { key: p.key })).status, 404);
    assert.equal((await t.rest.del(`${alerts()}/${b.id}`, { key: p.key })).status, 404);
    assert.equal((await t.rest.patch(`${alerts()}/${b.id}`, { name: "x" }, { key: p.key })).status, 404);
    await remove(a.id);
  });

  it("lets members read and owners, admins and API keys write", async () => {
    const r = await t.rest.post(alerts(), body({ name: "By member" }), { cookie: member.cookie });
    assert.equal(r.status, 403, r.text);
    const o = await t.rest.post(alerts(), body({ name: "By owner" }), { cookie: p.owner.cookie });
    assert.equal(o.status, 201, o.text);
    assert.equal((await t.rest.get(alerts(), { cookie: member.cookie })).status, 200);
    assert.equal((await t.rest.del(`${alerts()}/${o.body.data.id}`, { cookie: member.cookie })).status, 403);
    assert.equal((await t.rest.get(alerts())).status, 401);
    await remove(o.body.data.id);
  });

  it("caps the alerts of a project (409)", async () => {
    const made = [];
    for (let i = 0; i < 4; i++) made.push(await create({ name: `cap ${i}` }));
    const r = await t.rest.post(alerts(), body({ name: "one too many" }), { key: p.key });
    assert.equal(r.status, 409, r.text);
    assert.equal(errorBody(r).code, "conflict");
    // Nothing half-made: no monitor for the refused alert.
    const ms = await t.rest.get(`/v1/projects/${p.projectId}/monitors`, { key: p.key });
    assert.ok(!ms.body.data.some((m: { slug: string }) => m.slug === "one-too-many"));
    for (const a of made) await remove(a.id);
  });
});

describe("alerts: validation", () => {
  const refused: [string, Record<string, unknown>, string][] = [
    ["no name", { name: undefined }, "name"],
    ["no windowMs", { windowMs: undefined }, "windowMs"],
    ["a window under 10 s", { windowMs: 9_999 }, "windowMs"],
    ["a window over 30 days", { windowMs: 2_592_000_001 }, "windowMs"],
    ["a cadence under 10 s", { everyMs: 5_000 }, "everyMs"],
    ["a negative forMs", { forMs: -1 }, "forMs"],
    ["an unknown operator", { condition: { operator: "eq", value: 1 } }, "condition.operator"],
    ["no condition value", { condition: { operator: "gt" } }, "condition.value"],
    ["an unknown noData", { noData: "maybe" }, "noData"],
    ["minSamples 0", { minSamples: 0 }, "minSamples"],
    ["no query", { query: undefined }, "query"],
    ["an unknown source", { query: { source: "logs" } }, "query.source"],
    ["a metric query without a name", { query: { source: "metric" } }, "query.name"],
    ["an unknown metric aggregation", { query: { ...metricQuery, aggregation: "p101" } }, "query.aggregation"],
    ["an unknown key in the query", { query: { ...metricQuery, extra: 1 } }, "query"],
    ["an events operation needing a field", { query: { source: "events", operation: "p95" } }, "query.field"],
    ["an unknown events operation", { query: { source: "events", operation: "median" } }, "query.operation"],
    [
      "bad filters",
      { query: { source: "events", operation: "count", filters: { field: "type", operator: "like", value: 1 } } },
      "query.filters",
    ],
    ["a ratio without denominator", { query: { source: "ratio", numerator: {} } }, "query.denominator"],
    [
      "a funnel of one step",
      { query: { source: "funnel", steps: [{ filters: { field: "type", operator: "equals", value: "a" } }] } },
      "query.steps",
    ],
    ["a retention without interval", { query: { source: "retention", start: {}, return: {} } }, "query.interval"],
    [
      "a retention period past the last",
      { query: { source: "retention", start: {}, return: {}, interval: "week", period: 30 } },
      "query.period",
    ],
    ["a resolve without operator", { resolve: { value: 1 } }, "resolve.operator"],
    ["a bad slug", { slug: "Not A Slug!" }, "slug"],
  ];
  for (const [what, over, field] of refused) {
    it(`refuses ${what} (400 naming ${field})`, async () => {
      const b: Record<string, unknown> = body(over);
      for (const k of Object.keys(over)) if (over[k] === undefined) delete b[k];
      const r = await t.rest.post(alerts(), b, { key: p.key });
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.ok(
        (e.details as { field: string }[]).some((d) => d.field === field || d.field.startsWith(`${field}.`)),
        `${field} in ${JSON.stringify(e.details)}`,
      );
    });
  }

  it("refuses a PATCH out of bounds and a slug already used on create (409)", async () => {
    const a = await create({ name: "Patched" });
    const r = await t.rest.patch(`${alerts()}/${a.id}`, { windowMs: 1 }, { key: p.key });
    assert.equal(r.status, 400, r.text);
    const dup = await t.rest.post(alerts(), body({ slug: "patched" }), { key: p.key });
    assert.equal(dup.status, 409, dup.text);
    await remove(a.id);
  });
});

describe("alerts: the owned monitor", () => {
  it("refuses heartbeats to its slug (409), and records none", async () => {
    const a = await create({ name: "No heartbeats" });
    const hb = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/${a.slug}`, {}, { key: p.key });
    assert.equal(hb.status, 409, hb.text);
    assert.equal(errorBody(hb).code, "conflict");
    const down = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/${a.slug}`,
      { status: "down" },
      { key: p.key },
    );
    assert.equal(down.status, 409, down.text);
    // With a client id, again and again: refused each time (the id is not claimed by a refused heartbeat).
    const id = "0b7c3f5e-4a1d-4e8b-9c2f-6d5e4f3a2b1c";
    for (let i = 0; i < 2; i++) {
      const r = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/${a.slug}`, { id }, { key: p.key });
      assert.equal(r.status, 409, r.text);
    }
    const m = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${a.monitorId}`, { key: p.key });
    assert.equal(m.body.data.status, "unknown");
    assert.equal(m.body.data.lastHeartbeatAt, null);
    const hbs = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${a.monitorId}/heartbeats`, { key: p.key });
    assert.deepEqual(hbs.body.data, []);
    // An ordinary monitor still takes heartbeats.
    assert.equal(
      (await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/plain-one`, {}, { key: p.key })).status,
      200,
    );
    await remove(a.id);
  });

  it("is paused by pausing its monitor, and back to ok on resume", async () => {
    const a = await create({ name: "Pausable" });
    const ps = await t.rest.post(`/v1/projects/${p.projectId}/monitors/${a.monitorId}/pause`, {}, { key: p.key });
    assert.equal(ps.status, 200, ps.text);
    assert.equal((await t.rest.get(`${alerts()}/${a.id}`, { key: p.key })).body.data.state, "paused");
    const rs = await t.rest.post(`/v1/projects/${p.projectId}/monitors/${a.monitorId}/resume`, {}, { key: p.key });
    assert.equal(rs.status, 200, rs.text);
    assert.equal((await t.rest.get(`${alerts()}/${a.id}`, { key: p.key })).body.data.state, "ok");
    await remove(a.id);
  });

  it("goes with its monitor when the monitor is deleted", async () => {
    const a = await create({ name: "Monitor deleted" });
    assert.equal((await t.rest.del(`/v1/projects/${p.projectId}/monitors/${a.monitorId}`, { key: p.key })).status, 204);
    assert.equal((await t.rest.get(`${alerts()}/${a.id}`, { key: p.key })).status, 404);
  });
});

describe("alerts: evaluations and preview", () => {
  it("lists no evaluations before the first, and 404 for an unknown alert", async () => {
    const a = await create({ name: "Fresh" });
    const e = await t.rest.get(`${alerts()}/${a.id}/evaluations`, { key: p.key });
    assert.equal(e.status, 200, e.text);
    assert.deepEqual(e.body.data, []);
    assert.equal(e.body.pagination.hasMore, false);
    assert.equal((await t.rest.get(`${alerts()}/alr_nope/evaluations`, { key: p.key })).status, 404);
    assert.equal((await t.rest.get(`${alerts()}/${a.id}/evaluations?limit=0`, { key: p.key })).status, 400);
    await remove(a.id);
  });

  it("previews a metric rule over stored history: evaluations and the incident it would open", async () => {
    const r = await t.rest.post(
      `${alerts()}/preview`,
      {
        query: metricQuery,
        condition: { operator: "gt", value: 100 },
        windowMs: 60_000,
        time: { start: "2024-03-04T10:00:00Z", end: "2024-03-04T10:05:00Z" },
      },
      { cookie: member.cookie },
    );
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, {
      evaluations: [
        { at: "2024-03-04T10:00:00.000Z", value: null, state: "ok" },
        { at: "2024-03-04T10:01:00.000Z", value: 15, state: "ok" },
        { at: "2024-03-04T10:02:00.000Z", value: 30, state: "ok" },
        { at: "2024-03-04T10:03:00.000Z", value: 500, state: "firing" },
        { at: "2024-03-04T10:04:00.000Z", value: 600, state: "firing" },
        { at: "2024-03-04T10:05:00.000Z", value: null, state: "ok" },
      ],
      incidents: [{ startedAt: "2024-03-04T10:03:00.000Z", endedAt: "2024-03-04T10:05:00.000Z" }],
    });
    // With an offset: evaluations at offset + k·everyMs; an incident still open at the end has endedAt null.
    const o = await t.rest.post(
      `${alerts()}/preview`,
      {
        query: metricQuery,
        condition: { operator: "gt", value: 100 },
        windowMs: 60_000,
        evaluationOffsetMs: 30_000,
        time: { start: "2024-03-04T10:02:00Z", end: "2024-03-04T10:04:00Z" },
      },
      { key: p.key },
    );
    assert.equal(o.status, 200, o.text);
    assert.deepEqual(
      o.body.data.evaluations.map((e: { at: string }) => e.at),
      ["2024-03-04T10:02:30.000Z", "2024-03-04T10:03:30.000Z"],
    );
    assert.deepEqual(o.body.data.incidents, [{ startedAt: "2024-03-04T10:02:30.000Z", endedAt: null }]);
  });

  it("refuses a preview over 10,000 evaluations, without time, or with an offset past everyMs (400)", async () => {
    const base = { query: metricQuery, condition: { operator: "gt", value: 1 }, windowMs: 60_000, everyMs: 10_000 };
    const many = await t.rest.post(
      `${alerts()}/preview`,
      { ...base, time: { start: "2024-03-01T00:00:00Z", end: "2024-03-03T00:00:00Z" } },
      { key: p.key },
    );
    assert.equal(many.status, 400, many.text);
    assert.equal((errorBody(many).details as { field: string }[])[0].field, "time");
    assert.equal((await t.rest.post(`${alerts()}/preview`, base, { key: p.key })).status, 400);
    const off = await t.rest.post(
      `${alerts()}/preview`,
      { ...base, evaluationOffsetMs: 10_000, time: { start: "2024-03-04T10:00:00Z", end: "2024-03-04T10:01:00Z" } },
      { key: p.key },
    );
    assert.equal(off.status, 400, off.text);
    const noTz = await t.rest.post(
      `${alerts()}/preview`,
      { ...base, time: { start: "2024-03-04T10:00:00", end: "2024-03-04T10:01:00Z" } },
      { key: p.key },
    );
    assert.equal(noTz.status, 400, noTz.text);
  });
});

describe("alerts over gRPC and Connect", () => {
  it("creates, reads and refuses with the RPC codes", async () => {
    for (const transport of [
      createGrpcTransport({ baseUrl: t.url }),
      createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
    ]) {
      const c = createClient(AlertService, transport);
      const headers = { authorization: `Bearer ${p.key}` };
      const r = await c.createAlert(
        {
          projectId: p.projectId,
          name: `rpc ${Math.random().toString(36).slice(2, 8)}`,
          query: fromJson(ValueSchema, metricQuery),
          condition: { operator: "gte", value: 5 },
          windowMs: 60_000n,
        },
        { headers },
      );
      assert.equal(r.data!.state, "ok");
      assert.equal(r.data!.everyMs, 60_000n);
      const g = await c.getAlert({ projectId: p.projectId, alertId: r.data!.id }, { headers });
      assert.equal(g.data!.monitorId, r.data!.monitorId);
      await assert.rejects(
        c.createAlert({ projectId: p.projectId, name: "bad", windowMs: 1n }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
      );
      await c.deleteAlert({ projectId: p.projectId, alertId: r.data!.id }, { headers });
      await assert.rejects(
        c.getAlert({ projectId: p.projectId, alertId: r.data!.id }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound,
      );
    }
  });
});

describe("alerts: the recipes of docs/alerts.md", () => {
  it("creates every recipe of docs/alerts.md as written (201), and previews it", async () => {
    const md = await readFile(new URL("../../docs/alerts.md", import.meta.url), "utf8");
    const recipes = [...md.matchAll(/<!-- recipe: ([\w-]+) -->\n```json\n([\s\S]*?)\n```\n<!-- \/recipe -->/g)];
    assert.deepEqual(
      recipes.map((m) => m[1]),
      ["latency-p95", "error-ratio", "no-signups", "cron-duration", "checkout-funnel", "week-1-retention"],
    );
    // In the other project: this file's caps its alerts at 4 (the cap test fills p's).
    // Four side by side (the cap of this file's projects), then the rest.
    for (let i = 0; i < recipes.length; i += 4)
      await Promise.all(
        recipes.slice(i, i + 4).map(async ([, name, json]) => {
          const recipe = JSON.parse(json) as Record<string, unknown>;
          const r = await t.rest.post(alerts(other.projectId), recipe, { key: other.key });
          assert.equal(r.status, 201, `${name}: ${r.text}`);
          const { name: _name, ...rule } = recipe;
          const end = Date.parse("2024-03-05T00:00:00Z");
          const time = {
            start: new Date(end - (rule.windowMs as number)).toISOString(),
            end: new Date(end).toISOString(),
          };
          const preview = await t.rest.post(
            `${alerts(other.projectId)}/preview`,
            { ...rule, time },
            { key: other.key },
          );
          assert.equal(preview.status, 200, `${name}: ${preview.text}`);
          assert.equal(
            (await t.rest.del(`${alerts(other.projectId)}/${r.body.data.id}`, { key: other.key })).status,
            204,
          );
        }),
      );
  });
});
