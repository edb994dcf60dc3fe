import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { AnalyticsService } from "../../gen/vigil/v1/analytics_pb.js";
import { valueToJson } from "../../src/shared/value.js";
import { ApiError } from "../../src/shared/errors.js";
import { backgroundTx, queryCancellable } from "../../src/storage/db.js";
import { startTestApp, type TestApp, eventsOf } from "../helpers/app.js";
import { lockRollups } from "../helpers/db.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";
import { ingest } from "../helpers/events.js";

// Bounds of analytics work: the filter tree cap (empty groups count), NaN/Infinity refused, the
// statement timeout with its clear error, cancellation when the client goes away, and the
// per-project share of the pool. Slow statements are real: a statement waiting on a lock the test
// holds (LOCK TABLE analytics_rollups, which every unfiltered count reads) or pg_sleep.

const T0 = Date.UTC(2024, 4, 6, 8);
const TIME = { start: new Date(T0).toISOString(), end: new Date(T0 + 3_600_000).toISOString() };
const QUIET = {
  RATE_LIMIT_EVENTS_PER_MINUTE: "100000",
  ANALYTICS_SLOT_INTERVAL_MS: "0",
  ANALYTICS_BLOCK_INTERVAL_MS: "0",
};
const ROUTES = [
  "events/query",
  "analytics/count",
  "analytics/timeseries",
  "analytics/aggregate",
  "analytics/unique",
  "analytics/group",
];
const EXTRA: Record<string, object> = {
  "analytics/timeseries": { interval: "hour" },
  "analytics/aggregate": { aggregations: [{ name: "n", operation: "count" }] },
  "analytics/unique": { field: "plan" },
  "analytics/group": { groupBy: ["plan"] },
};
const bodyFor = (route: string, filters: unknown) => ({ time: TIME, filters, ...EXTRA[route] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let t: TestApp; // PG_POOL_SIZE 5: one analytics request per project at a time (floor(5 / 4))
let p: ProjectFixture;
let other: ProjectFixture;
let admin: pg.Client;

before(async () => {
  t = await startTestApp(QUIET);
  [p, other] = [await project(t.rest), await project(t.rest)];
  await ingest(
    t.rest,
    p.key,
    Array.from({ length: 20 }, (_, i) => ({
      type: "view",
      timestamp: new Date(T0 + i * 60_000).toISOString(),
      data: { plan: i % 2 ? "pro" : "free" },
    })),
  );
  await ingest(t.rest, other.key, [{ type: "view", timestamp: new Date(T0).toISOString() }]);
  for (const f of [p, other]) await eventsOf(t.app).derived.settle(f.projectId);
  admin = new pg.Client({ connectionString: t.databaseUrl });
  await admin.connect();
});
after(async () => {
  await admin.end();
  await t.close();
});

const post = (route: string, body: unknown, f = p) =>
  t.rest.post(`/v1/projects/${f.projectId}/${route}`, body, { key: f.key });
const count = (f = p, signal?: AbortSignal) =>
  fetch(`${t.url}/v1/projects/${f.projectId}/analytics/count`, {
    method: "POST",
    headers: { authorization: `Bearer ${f.key}`, "content-type": "application/json" },
    body: JSON.stringify({ time: TIME }),
    signal,
  });

/** Statements of the app (not ours) running now whose text contains `like`. */
async function running(db: pg.Client, like: string): Promise<{ pid: number; wait: string | null }[]> {
  const r = await db.query(
    "SELECT pid, wait_event_type AS wait FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND query LIKE $1",
    [`%${like}%`],
  );
  return r.rows;
}
async function until(what: string, check: () => Promise<boolean>, ms = 5000): Promise<number> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
  return Date.now() - t0;
}
const waitingOnRollups = async (db: pg.Client) =>
  (await running(db, "analytics_rollups")).filter((x) => x.wait === "Lock").length;

describe("the filter tree cap", () => {
  it("counts groups and conditions, empty groups included, on every route that takes filters", async () => {
    for (const route of ROUTES) {
      const r = await post(route, bodyFor(route, { and: Array.from({ length: 1000 }, () => []) }));
      assert.equal(r.status, 400, `${route}: ${r.text}`);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.deepEqual(e.details, [
        { field: "filters", message: "at most 300 groups and conditions in all (empty groups count)" },
      ]);
    }
    // 300 nodes (the default) pass, 301 do not; bare arrays and {or: [...]} groups count the same.
    const ok = await post("analytics/count", {
      time: TIME,
      filters: [Array.from({ length: 299 }, () => ({ or: [] }))].flat(),
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.data.count, 20);
    const over = await post("analytics/count", {
      time: TIME,
      filters: { and: [...Array.from({ length: 299 }, () => []), { field: "plan", operator: "exists" }] },
    });
    assert.equal(over.status, 400, over.text);
  });

  it("refuses the 400,000 empty groups of the report at once", async () => {
    const t0 = Date.now();
    const r = await t.rest.req("POST", `/v1/projects/${p.projectId}/analytics/count`, {
      raw: `{"time":${JSON.stringify(TIME)},"filters":{"and":[${Array(400_000).fill("[]").join(",")}]}}`,
      contentType: "application/json",
      key: p.key,
    });
    assert.equal(r.status, 400, r.text.slice(0, 300));
    assert.equal(errorBody(r).code, "validation_failed");
    assert.ok(Date.now() - t0 < 10_000, `answered in ${Date.now() - t0} ms`);
    assert.deepEqual(await running(admin, "analytics"), []);
  });
});

describe("numbers that are not finite", () => {
  it("1e400 in a filter value is a 400 over REST", async () => {
    for (const filters of [
      `{"field":"plan","operator":"equals","value":1e400}`,
      `{"field":"plan","operator":"gt","value":-1e400}`,
      `{"field":"plan","operator":"in","value":[1,1e400]}`,
      `{"and":[{"field":"plan","operator":"lte","value":1e999}]}`,
    ]) {
      for (const route of ["analytics/count", "events/query", "analytics/group"]) {
        const r = await t.rest.req("POST", `/v1/projects/${p.projectId}/${route}`, {
          raw: `{"time":${JSON.stringify(TIME)},"groupBy":["plan"],"filters":${filters}}`,
          contentType: "application/json",
          key: p.key,
        });
        assert.equal(r.status, 400, `${route} ${filters}: ${r.text}`);
        assert.equal(errorBody(r).code, "validation_failed");
      }
    }
  });

  it("the handler's own conversion of a filter Value refuses them with a 400 naming the place", () => {
    // The edge check refuses them before any handler; this is the analytics handler's second guard
    // (protobuf-es's toJson throws a plain Error on them: a 500).
    const v = create(ValueSchema, {
      kind: {
        case: "listValue",
        value: {
          values: [
            create(ValueSchema, { kind: { case: "numberValue", value: 1 } }),
            create(ValueSchema, { kind: { case: "numberValue", value: NaN } }),
          ],
        },
      },
    });
    assert.throws(
      () => valueToJson(v),
      (e: unknown) =>
        e instanceof ApiError &&
        e.status === 400 &&
        JSON.stringify(e.restDetails) === '[{"field":"filters[1]","message":"must be a finite number"}]',
    );
    const s = (x: string) => create(ValueSchema, { kind: { case: "stringValue", value: x } });
    assert.deepEqual(
      valueToJson(
        create(ValueSchema, {
          kind: { case: "structValue", value: { fields: { field: s("plan"), operator: s("exists") } } },
        }),
      ),
      { field: "plan", operator: "exists" },
    );
  });

  it("Infinity and NaN doubles are INVALID_ARGUMENT over Connect and gRPC", async () => {
    const num = (n: number): Value => create(ValueSchema, { kind: { case: "numberValue", value: n } });
    const str = (s: string): Value => create(ValueSchema, { kind: { case: "stringValue", value: s } });
    const cond = (v: Value): Value =>
      create(ValueSchema, {
        kind: { case: "structValue", value: { fields: { field: str("plan"), operator: str("equals"), value: v } } },
      });
    const headers = { authorization: `Bearer ${p.key}` };
    for (const transport of [
      createConnectTransport({ baseUrl: t.url, httpVersion: "1.1", useBinaryFormat: true }),
      createGrpcTransport({ baseUrl: t.url }),
    ]) {
      const client = createClient(AnalyticsService, transport);
      for (const v of [Infinity, -Infinity, NaN]) {
        await assert.rejects(
          client.count({ projectId: "self", time: TIME, filters: cond(num(v)) }, { headers }),
          (e: unknown) => {
            assert.ok(e instanceof ConnectError);
            assert.equal(e.code, Code.InvalidArgument, `${v}: ${e.message}`);
            assert.equal(e.metadata.get("vigil-error-code"), "validation_failed");
            return true;
          },
        );
      }
      const fine = await client.count({ projectId: "self", time: TIME, filters: cond(str("pro")) }, { headers });
      assert.equal(fine.data?.count, 10n);
    }
  });
});

describe("cancellation when the client goes away", () => {
  it("queryCancellable cancels a running pg_sleep and drops its connection", async () => {
    const db = t.app.deps.db;
    const ac = new AbortController();
    const q = queryCancellable(db, ac.signal, "SELECT pg_sleep(30) AS bounds_test_sleep");
    await until("the sleep to run", async () => (await running(admin, "bounds_test_sleep")).length === 1);
    const t0 = Date.now();
    ac.abort();
    await assert.rejects(q, (e: unknown) => e instanceof ConnectError && e.code === Code.Canceled);
    const gone = await until(
      "the backend to leave pg_sleep",
      async () => (await running(admin, "bounds_test_sleep")).length === 0,
      3000,
    );
    assert.ok(Date.now() - t0 < 3000, `cancelled in ${gone} ms`);
    assert.equal((await db.query("SELECT 1 AS one")).rows[0].one, 1);
    // An already aborted signal sends nothing.
    await assert.rejects(
      queryCancellable(db, ac.signal, "SELECT 1"),
      (e: unknown) => e instanceof ConnectError && e.code === Code.Canceled,
    );
  });

  it("a REST client that disconnects cancels its analytics statement", async () => {
    const release = await lockRollups(t.databaseUrl);
    try {
      const ac = new AbortController();
      const req = count(p, ac.signal).catch(() => "aborted");
      await until("the count to wait on the lock", async () => (await waitingOnRollups(admin)) === 1);
      ac.abort();
      assert.equal(await req, "aborted");
      const ms = await until("the statement to be cancelled", async () => (await waitingOnRollups(admin)) === 0, 3000);
      assert.ok(ms < 3000);
    } finally {
      await release();
    }
  });

  it("a gRPC client that cancels cancels its analytics statement", async () => {
    const release = await lockRollups(t.databaseUrl);
    try {
      const client = createClient(AnalyticsService, createGrpcTransport({ baseUrl: t.url }));
      const ac = new AbortController();
      const call = client
        .count({ projectId: "self", time: TIME }, { headers: { authorization: `Bearer ${p.key}` }, signal: ac.signal })
        .catch((e) => e);
      await until("the count to wait on the lock", async () => (await waitingOnRollups(admin)) === 1);
      ac.abort();
      assert.equal(((await call) as ConnectError).code, Code.Canceled);
      await until("the statement to be cancelled", async () => (await waitingOnRollups(admin)) === 0, 3000);
    } finally {
      await release();
    }
  });
});

describe("one project's share of the pool", () => {
  it("while one project's slow queries wait, another tenant's event list answers promptly", async () => {
    const release = await lockRollups(t.databaseUrl);
    let slow: Promise<Response>[] = [];
    try {
      slow = Array.from({ length: 8 }, () => count(p));
      await until("a slow count to run", async () => (await waitingOnRollups(admin)) >= 1);
      await sleep(300); // let every request reach the database if it could
      assert.equal(await waitingOnRollups(admin), 1, "the project holds one connection for analytics");
      const t0 = Date.now();
      const list = fetch(`${t.url}/v1/projects/self/events?limit=1`, {
        headers: { authorization: `Bearer ${other.key}` },
      });
      const r = await Promise.race([list, sleep(2000).then(() => null)]);
      const ms = Date.now() - t0;
      assert.ok(r, "the other tenant's list did not answer within 2 s");
      assert.equal(r.status, 200);
      assert.equal((await r.json()).data.length, 1);
      assert.ok(ms < 1000, `the other tenant waited ${ms} ms`);
      // The other tenant's analytics have their own share (it reads the locked rollups too: it waits).
      slow.push(count(other));
      await until("the other tenant's count to run", async () => (await waitingOnRollups(admin)) === 2);
    } finally {
      await release();
    }
    // Queued requests ran once the lock went: all answered.
    for (const r of await Promise.all(slow)) assert.equal(r.status, 200, await r.text());
  });
});

describe("the statement timeout", () => {
  let s: TestApp;
  let q: ProjectFixture;
  before(async () => {
    s = await startTestApp({
      ...QUIET,
      STATEMENT_TIMEOUT_MS: "600",
      ANALYTICS_QUEUE_TIMEOUT_MS: "300",
      ANALYTICS_MAX_FILTER_NODES: "10",
    });
    q = await project(s.rest);
    await ingest(s.rest, q.key, [{ type: "view", timestamp: new Date(T0).toISOString() }]);
    await eventsOf(s.app).derived.settle(q.projectId);
  });
  after(() => s.close());

  it("bounds every pooled connection; background transactions lift it", async () => {
    const db = s.app.deps.db;
    assert.equal((await db.query("SHOW statement_timeout")).rows[0].statement_timeout, "600ms");
    await assert.rejects(db.query("SELECT pg_sleep(1)"), (e: unknown) => (e as { code?: string }).code === "57014");
    await backgroundTx(db, (c) => c.query("SELECT pg_sleep(1)"));
    assert.equal((await db.query("SHOW statement_timeout")).rows[0].statement_timeout, "600ms");
  });

  it("a statement past it answers 503 query_timeout, on analytics and any other route", async () => {
    const release = await lockRollups(s.databaseUrl);
    try {
      const t0 = Date.now();
      const r = await s.rest.post(`/v1/projects/${q.projectId}/analytics/count`, { time: TIME }, { key: q.key });
      assert.equal(r.status, 503, r.text);
      assert.equal(errorBody(r).code, "query_timeout");
      assert.ok(Date.now() - t0 >= 550, `after ${Date.now() - t0} ms`);
    } finally {
      await release();
    }
    const c = new pg.Client({ connectionString: s.databaseUrl });
    await c.connect();
    try {
      await c.query("BEGIN");
      await c.query("LOCK TABLE users IN ACCESS EXCLUSIVE MODE");
      const r = await s.rest.get(`/v1/projects/${q.projectId}/users`, { key: q.key });
      assert.equal(r.status, 503, r.text);
      assert.equal(errorBody(r).code, "query_timeout");
    } finally {
      await c.query("COMMIT");
      await c.end();
    }
  });

  it("a request waiting for its project's share longer than ANALYTICS_QUEUE_TIMEOUT_MS is a 429 with Retry-After", async () => {
    const release = await lockRollups(s.databaseUrl);
    try {
      const first = s.rest.post(`/v1/projects/${q.projectId}/analytics/count`, { time: TIME }, { key: q.key });
      await sleep(100);
      const second = await s.rest.post(`/v1/projects/${q.projectId}/analytics/count`, { time: TIME }, { key: q.key });
      assert.equal(second.status, 429, second.text);
      assert.equal(errorBody(second).code, "rate_limited");
      assert.equal(second.headers.get("retry-after"), "1");
      assert.equal((await first).status, 503);
    } finally {
      await release();
    }
  });

  it("ANALYTICS_MAX_FILTER_NODES sets the cap", async () => {
    const f = (n: number) => ({ and: Array.from({ length: n - 1 }, () => ({ field: "plan", operator: "exists" })) });
    assert.equal(
      (await s.rest.post(`/v1/projects/${q.projectId}/analytics/count`, { time: TIME, filters: f(10) }, { key: q.key }))
        .status,
      200,
    );
    const r = await s.rest.post(
      `/v1/projects/${q.projectId}/analytics/count`,
      { time: TIME, filters: f(11) },
      { key: q.key },
    );
    assert.equal(r.status, 400);
    assert.equal((errorBody(r).details as { field: string }[])[0].field, "filters");
  });
});
