import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ProjectService } from "../../gen/vigil/v1/projects_pb.js";
import { runRetentionPass } from "../../src/lifecycle/retention.js";
import { cutoffOf, partitionDroppable, partitionWeek, retentionInForce } from "../../src/lifecycle/model.js";
import { partitionName, weekStart } from "../../src/events/partitions.js";
import { DAY_MS, HOUR_MS, MINUTE_MS, WEEK_MS } from "../../src/shared/time.js";
import { eventsOf, GENEROUS_LIMITS, startTestApp } from "../helpers/app.js";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { ingest, pageAllEvents } from "../helpers/events.js";
import { memberOf, project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// Retention (docs/lifecycle.md "Retention"): the PATCH and what a project shows, the pass over events and
// everything derived from them (analytics answers drop by exactly the expired events), whole-partition drops
// that never take another project's rows, and a pass killed -9 midway that a restart finishes.

const DAYS = 30;
const now = Date.now();
const CUTOFF = cutoffOf(now, DAYS);
const iso = (ms: number) => new Date(ms).toISOString();
const RANGE = { start: iso(CUTOFF - 80 * DAY_MS), end: iso(now + DAY_MS) };

describe("model", () => {
  it("the cutoff is the start of the UTC day of now - days", () => {
    assert.equal(cutoffOf(Date.UTC(2026, 10, 24, 19, 5), 30), Date.UTC(2026, 9, 25));
    assert.equal(cutoffOf(Date.UTC(2026, 10, 24, 0, 0), 1), Date.UTC(2026, 10, 23));
  });
  it("the project's days win, capped by the maximum; else the default; else none", () => {
    assert.deepEqual(retentionInForce(10, { defaultDays: 5, maxDays: 100 }), { days: 10, source: "project" });
    assert.deepEqual(retentionInForce(500, { maxDays: 100 }), { days: 100, source: "project" });
    assert.deepEqual(retentionInForce(null, { defaultDays: 5, maxDays: 100 }), { days: 5, source: "default" });
    assert.deepEqual(retentionInForce(null, { maxDays: 100 }), { source: "none" });
  });
  it("a week drops only when every live project in it has a cutoff at or past its end", () => {
    const w = Date.UTC(2026, 0, 5);
    const cut = new Map<string, number | undefined>([
      ["a", w + WEEK_MS],
      ["b", w + WEEK_MS - 1],
      ["keep", undefined],
    ]);
    const live = (id: string) => cut.has(id);
    assert.equal(partitionDroppable(w, ["a"], cut, live), true);
    assert.equal(partitionDroppable(w, ["a", "b"], cut, live), false);
    assert.equal(partitionDroppable(w, ["a", "keep"], cut, live), false, "no retention keeps its weeks");
    assert.equal(partitionDroppable(w, ["a", "gone"], cut, live), true, "a deleted project holds nothing");
    assert.equal(partitionWeek("events_p20260105"), w);
    assert.equal(partitionWeek("events_default"), undefined);
  });
});

const { t, p } = useProject({
  ...GENEROUS_LIMITS,
  WEBHOOK_ALLOW_PRIVATE: "true",
  RETENTION_INTERVAL_MS: "200",
  // The pass also prunes raw heartbeats past this window (tested below): far enough to keep these.
  UPTIME_RAW_RETENTION_DAYS: "3650",
  // Each monitor keeps its newest 3 ended runs (tested below; no other test here makes runs).
  UPTIME_MAX_RUNS_PER_MONITOR: "3",
  ANALYTICS_BLOCK_INTERVAL_MS: "100",
  ANALYTICS_BLOCK_SEAL_MS: "0",
});
const projectUrl = () => `/v1/projects/${p.projectId}`;
const getProject = async () => {
  const r = await t.rest.get(projectUrl(), { cookie: p.owner.cookie });
  assert.equal(r.status, 200, r.text);
  return r.body.data;
};
const patch = (body: unknown) => t.rest.patch(projectUrl(), body, { cookie: p.owner.cookie });

/** Resolves once two passes completed after this call (the first may have started before it). */
async function twoPassesLater(): Promise<void> {
  const seen = new Set<string>();
  const start = (await getProject()).retention.lastRunAt;
  const deadline = Date.now() + 60_000;
  while (seen.size < 2) {
    const last = (await getProject()).retention.lastRunAt;
    if (last && last !== start) seen.add(last);
    if (Date.now() > deadline) throw new Error("no retention pass completed");
    await new Promise((r) => setTimeout(r, 100));
  }
}

const db = () => new pg.Pool({ connectionString: t.databaseUrl, max: 2 });

describe("PATCH retentionDays", () => {
  it("absent by default: kept forever, no cutoff", async () => {
    const d = await getProject();
    assert.equal(d.retentionDays ?? null, null);
    assert.equal(d.retention.source, "none");
    assert.equal(d.retention.days ?? null, null);
    assert.equal(d.retention.cutoff ?? null, null);
  });

  it("refuses anything but an integer 1..RETENTION_MAX_DAYS or null, naming retentionDays", async () => {
    for (const v of [
      "30",
      "",
      "\u0000",
      0,
      -1,
      1.5,
      1e308,
      -1e308,
      3651,
      true,
      false,
      [],
      [30],
      {},
      { __proto__: 1 },
      { constructor: 1 },
    ]) {
      const r = await patch({ retentionDays: v });
      assert.equal(r.status, 400, `${JSON.stringify(v)}: ${r.text}`);
      assert.equal(r.body.error.code, "validation_failed", r.text);
      assert.match(r.body.error.message, /retentionDays/);
      assert.deepEqual(
        r.body.error.details.map((x: { field: string }) => x.field),
        ["retentionDays"],
        r.text,
      );
    }
    for (const raw of [
      '{"retentionDays": 1e999}',
      '{"retentionDays": {"__proto__": 1}}',
      '{"retentionDays": "3\\u00000"}',
    ]) {
      const r = await t.rest.req("PATCH", projectUrl(), {
        cookie: p.owner.cookie,
        raw,
        contentType: "application/json",
      });
      assert.equal(r.status, 400, `${raw}: ${r.text}`);
    }
    assert.equal((await getProject()).retentionDays ?? null, null, "nothing was changed");
  });

  it("another tenant and a plain member cannot set it", async () => {
    const other = await project(t.rest);
    const r = await t.rest.patch(`/v1/projects/${other.projectId}`, { retentionDays: 1 }, { cookie: p.owner.cookie });
    assert.ok(r.status === 404 || r.status === 403, r.text);
    const member = await memberOf(t.rest, p);
    const m = await t.rest.patch(projectUrl(), { retentionDays: 1 }, { cookie: member.cookie });
    assert.equal(m.status, 403, m.text);
    const k = await t.rest.patch(projectUrl(), { retentionDays: 1 }, { key: p.key });
    assert.ok(k.status === 401 || k.status === 403, k.text);
    assert.equal((await getProject()).retentionDays ?? null, null);
  });

  it("sets, shows and clears it", async () => {
    const r = await patch({ retentionDays: 3650 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.retentionDays, 3650);
    assert.equal(r.body.data.retention.source, "project");
    assert.equal(r.body.data.retention.days, 3650);
    assert.equal(r.body.data.retention.cutoff, iso(cutoffOf(Date.now(), 3650)));
    assert.ok(r.body.data.retention.nextRunAt);
    const list = await t.rest.get("/v1/projects", { cookie: p.owner.cookie });
    assert.equal(list.body.data.find((x: { id: string }) => x.id === p.projectId).retentionDays, 3650);
    const n = await patch({ retentionDays: null, name: "renamed" });
    assert.equal(n.status, 200, n.text);
    assert.equal(n.body.data.retentionDays ?? null, null);
    assert.equal(n.body.data.retention.source, "none");
    assert.equal(n.body.data.name, "renamed");
    // Absent leaves it as it is.
    await patch({ retentionDays: 7 });
    assert.equal((await patch({ name: "again" })).body.data.retentionDays, 7);
    await patch({ retentionDays: null });
  });
});

describe("the pass", () => {
  const pool = () => db();
  let q: pg.Pool;
  after(() => q?.end());

  it("removes exactly the expired events and their derived rows; analytics drop by exactly them", async () => {
    q = pool();
    // A: the project under test. Old weeks that only A has (droppable whole), a week shared with B (which
    // keeps everything: trimmed row by row), the minutes around the cutoff, and recent events.
    const other = await project(t.rest);
    const onlyA = now - 70 * DAY_MS;
    const shared = now - 50 * DAY_MS;
    const evs: { type: string; timestamp: string; userId?: string; data?: unknown }[] = [];
    const add = (ms: number, type = "visit", userId = "u1") => evs.push({ type, timestamp: iso(ms), userId });
    for (let i = 0; i < 40; i++) add(onlyA + i * MINUTE_MS * 7, i % 2 ? "visit" : "buy", `u${i % 3}`);
    for (let i = 0; i < 30; i++) add(shared + i * HOUR_MS, "visit", `s${i % 4}`);
    add(CUTOFF - MINUTE_MS, "edge"); // expired
    add(CUTOFF, "edge"); // kept: the cutoff itself is not older than the cutoff
    add(CUTOFF + 59_000, "edge");
    for (let i = 0; i < 25; i++) add(now - 2 * DAY_MS + i * MINUTE_MS, i % 2 ? "visit" : "buy", `r${i % 5}`);
    await ingest(t.rest, p.key, evs);
    // Metric points (each stored with its $measure event, which analytics count too).
    for (const ms of [onlyA, now - DAY_MS]) {
      const m = await t.rest.post(
        `${projectUrl()}/metrics`,
        { type: "measurement", name: "latency", value: 5, timestamp: iso(ms) },
        { key: p.key },
      );
      assert.equal(m.status, 201, m.text);
      evs.push({ type: "$measure", timestamp: iso(ms) });
    }
    await ingest(t.rest, other.key, [{ type: "keep", timestamp: iso(shared + 2 * HOUR_MS), userId: "b" }]);
    const expired = evs.filter((e) => Date.parse(e.timestamp) < CUTOFF);
    const kept = evs.length - expired.length;

    // Heartbeats: a monitor with raw heartbeats before and after the cutoff.
    const mon = await t.rest.post(
      `${projectUrl()}/monitors`,
      { name: "Job", expectedIntervalMs: 3_600_000 },
      { key: p.key },
    );
    assert.equal(mon.status, 201, mon.text);
    assert.equal((await t.rest.post(`${projectUrl()}/heartbeats/job`, {}, { key: p.key })).status, 200);
    await q.query(
      "INSERT INTO heartbeats (id, monitor_id, at, status) VALUES ('hb-old', $1, $2, 'up'), ('hb-edge', $1, $3, 'up')",
      [mon.body.data.id, new Date(CUTOFF - 10 * DAY_MS), new Date(CUTOFF)],
    );

    // Webhook deliveries: an expired event's delivery goes, a kept event's and an incident's stay.
    const hook = await t.rest.post(
      `${projectUrl()}/webhooks`,
      { name: "h", url: "http://127.0.0.1:9/hook", events: ["visit"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(hook.status, 201, hook.text);
    await q.query(
      `INSERT INTO webhook_deliveries (id, webhook_id, project_id, event_id, event_type, event_ts, payload, status, attempt_limit, created_at, updated_at)
       VALUES ('whd_old', $1, $2, 'e1', 'visit', $3, NULL, 'succeeded', 1, now(), now()),
              ('whd_new', $1, $2, 'e2', 'visit', $4, NULL, 'succeeded', 1, now(), now()),
              ('whd_incident', $1, $2, 'i1', 'incident.opened', NULL, '{}', 'succeeded', 1, now(), now())`,
      [hook.body.data.id, p.projectId, new Date(CUTOFF - DAY_MS), new Date(CUTOFF)],
    );

    const post = (route: string, body: unknown) => t.rest.post(`${projectUrl()}/${route}`, body, { key: p.key });
    const count = async (filters?: unknown) => {
      const r = await post("analytics/count", { time: RANGE, filters });
      assert.equal(r.status, 200, r.text);
      return r.body.data.count as number;
    };
    const series = async () => {
      const r = await post("analytics/timeseries", { interval: "day", time: RANGE });
      assert.equal(r.status, 200, r.text);
      return r.body.data.buckets as { time: string; count: number }[];
    };
    const visitFilter = { field: "event", operator: "equals", value: "visit" };
    // Let the block builder build the old hours, so the pass must remove blocks too.
    const blocksDeadline = Date.now() + 20_000;
    while (
      (await q.query("SELECT count(*)::int AS n FROM analytics_blocks WHERE project_id = $1", [p.projectId])).rows[0]
        .n === 0
    ) {
      assert.ok(Date.now() < blocksDeadline, "blocks were built");
      await new Promise((r) => setTimeout(r, 100));
    }
    const before = { all: await count(), visits: await count(visitFilter), series: await series() };
    assert.equal(before.all, evs.length);
    const list = await pageAllEvents(t.rest, p.key, "", 100);
    assert.equal(list.length, evs.length);

    assert.equal((await patch({ retentionDays: DAYS })).status, 200);
    await twoPassesLater();

    // Analytics: exactly the expired events are gone.
    assert.equal(await count(), before.all - expired.length);
    assert.equal(await count(visitFilter), before.visits - expired.filter((e) => e.type === "visit").length);
    const afterSeries = await series();
    assert.equal(afterSeries.length, before.series.length);
    for (let i = 0; i < afterSeries.length; i++) {
      const b = before.series[i];
      const expect = Date.parse(b.time) < CUTOFF ? 0 : b.count;
      assert.equal(afterSeries[i].count, expect, b.time);
    }
    const listAfter = await pageAllEvents(t.rest, p.key, "", 100);
    assert.equal(listAfter.length, kept);
    assert.ok(listAfter.every((e: { timestamp: string }) => Date.parse(e.timestamp) >= CUTOFF));

    // No expired row remains in any table of the project; the rest is untouched.
    const left = async (sql: string) => (await q.query(sql, [p.projectId, new Date(CUTOFF)])).rows[0].n as number;
    assert.equal(await left("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND ts < $2"), 0);
    assert.equal(await left("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND ts >= $2"), kept);
    assert.equal(
      await left("SELECT count(*)::int AS n FROM analytics_rollups WHERE project_id = $1 AND bucket < $2"),
      0,
    );
    assert.ok(
      (await left("SELECT count(*)::int AS n FROM analytics_rollups WHERE project_id = $1 AND bucket >= $2")) > 0,
    );
    assert.equal(await left("SELECT count(*)::int AS n FROM analytics_blocks WHERE project_id = $1 AND hour < $2"), 0);
    assert.equal(await left("SELECT count(*)::int AS n FROM event_user_hours WHERE project_id = $1 AND hour < $2"), 0);
    assert.ok((await left("SELECT count(*)::int AS n FROM event_user_hours WHERE project_id = $1 AND hour >= $2")) > 0);
    const points =
      "SELECT count(*)::int AS n FROM metric_points mp JOIN metrics m ON m.id = mp.metric_id WHERE m.project_id = $1";
    assert.equal(await left(`${points} AND mp.ts < $2`), 0);
    assert.equal(await left(`${points} AND mp.ts >= $2`), 1);
    const beats =
      "SELECT count(*)::int AS n FROM heartbeats h JOIN monitors m ON m.id = h.monitor_id WHERE m.project_id = $1";
    assert.equal(await left(`${beats} AND h.at < $2`), 0);
    assert.equal(await left(`${beats} AND h.at >= $2`), 2);

    const deliveries = await q.query("SELECT id FROM webhook_deliveries WHERE project_id = $1 ORDER BY id", [
      p.projectId,
    ]);
    assert.deepEqual(
      deliveries.rows.map((r) => r.id),
      ["whd_incident", "whd_new"],
    );

    // The week only A had was dropped whole; the week B shares stays, with B's event.
    const exists = async (ms: number) =>
      (await q.query("SELECT 1 FROM pg_class WHERE relname = $1", [partitionName(weekStart(ms))])).rowCount === 1;
    assert.equal(await exists(onlyA), false, "A's own old week is dropped whole");
    assert.equal(await exists(shared), true, "a week with a project without retention stays");
    const b = await t.rest.post(`/v1/projects/${other.projectId}/analytics/count`, { time: RANGE }, { key: other.key });
    assert.equal(b.body.data.count, 1);

    // An old event for the dropped week (B keeps forever) is accepted: the partition is made again.
    await ingest(t.rest, other.key, [{ type: "late", timestamp: iso(onlyA + HOUR_MS) }]);
    assert.equal(await exists(onlyA), true);
    const b2 = await t.rest.post(
      `/v1/projects/${other.projectId}/analytics/count`,
      { time: RANGE },
      { key: other.key },
    );
    assert.equal(b2.body.data.count, 2);

    const shown = await getProject();
    assert.equal(shown.retention.days, DAYS);
    assert.equal(shown.retention.cutoff, iso(cutoffOf(Date.now(), DAYS)));
    assert.ok(Date.parse(shown.retention.lastRunAt) <= Date.now());
    assert.ok(Date.parse(shown.retention.nextRunAt) >= Date.parse(shown.retention.lastRunAt));
  });
});

describe("the operator's default", () => {
  it("RETENTION_DAYS applies to projects without their own, capped by RETENTION_MAX_DAYS", async () => {
    const app = await startTestApp({ RETENTION_DAYS: "500", RETENTION_MAX_DAYS: "400", RETENTION_INTERVAL_MS: "200" });
    try {
      const f = await project(app.rest);
      const g = await app.rest.get(`/v1/projects/${f.projectId}`, { cookie: f.owner.cookie });
      assert.equal(g.body.data.retentionDays ?? null, null);
      assert.deepEqual(
        { days: g.body.data.retention.days, source: g.body.data.retention.source },
        { days: 400, source: "default" },
      );
      const over = await app.rest.patch(
        `/v1/projects/${f.projectId}`,
        { retentionDays: 401 },
        { cookie: f.owner.cookie },
      );
      assert.equal(over.status, 400, over.text);
      const own = await app.rest.patch(`/v1/projects/${f.projectId}`, { retentionDays: 2 }, { cookie: f.owner.cookie });
      assert.equal(own.body.data.retention.source, "project");
      const back = await app.rest.patch(
        `/v1/projects/${f.projectId}`,
        { retentionDays: null },
        { cookie: f.owner.cookie },
      );
      assert.equal(back.body.data.retention.source, "default");
      assert.equal(back.body.data.retention.days, 400);
    } finally {
      await app.close();
    }
  });
});

describe("kill -9 mid-pass", () => {
  it("a restarted node finishes the pass: no expired row remains, the rest is untouched", async () => {
    const databaseUrl = await createTestDatabase();
    const env = {
      ...GENEROUS_LIMITS,
      DATABASE_URL: databaseUrl,
      RETENTION_INTERVAL_MS: "200",
      RETENTION_BATCH_ROWS: "200",
    };
    let node: Node = await startNode(env);
    const q2 = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    try {
      const a = await project(node.rest);
      const b = await project(node.rest);
      // A backlog in weeks B shares (so they are trimmed row by row, not dropped whole).
      const evs = [];
      const base = CUTOFF - 20 * DAY_MS;
      for (let i = 0; i < 20_000; i++)
        evs.push({ type: "old", timestamp: iso(base + i * 80_000), userId: `u${i % 50}` });
      const recent = 300;
      for (let i = 0; i < recent; i++) evs.push({ type: "new", timestamp: iso(now - DAY_MS + i * 1000) });
      await ingest(node.rest, a.key, evs);
      const bEvents = [];
      for (let d = 0; d < 22; d++) bEvents.push({ type: "b", timestamp: iso(base + d * DAY_MS) });
      await ingest(node.rest, b.key, bEvents);
      const oldCount = () =>
        q2
          .query("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND ts < $2", [
            a.projectId,
            new Date(CUTOFF),
          ])
          .then((r) => r.rows[0].n as number);
      assert.ok((await oldCount()) > 19_000);

      const r = await node.rest.patch(
        `/v1/projects/${a.projectId}`,
        { retentionDays: DAYS },
        { cookie: a.owner.cookie },
      );
      assert.equal(r.status, 200, r.text);
      // Kill it once the pass is under way but far from done.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const n = await oldCount();
        if (n < 19_500) break;
        assert.ok(Date.now() < deadline, "the pass began");
        await new Promise((res) => setTimeout(res, 20));
      }
      await node.kill("SIGKILL");
      const midway = await oldCount();
      assert.ok(midway > 0, `killed midway (left ${midway})`);

      node = await startNode(env);
      const done = Date.now() + 120_000;
      while ((await oldCount()) > 0) {
        assert.ok(Date.now() < done, node.stderr());
        await new Promise((res) => setTimeout(res, 100));
      }
      // Wait for the derived rows too (a completed pass), then check every table.
      const runAt = async () => (await q2.query("SELECT last_run_at FROM retention_runs")).rows[0]?.last_run_at;
      const first = await runAt();
      while ((await runAt())?.getTime() === first?.getTime()) await new Promise((res) => setTimeout(res, 100));
      const left = async (sql: string) => (await q2.query(sql, [a.projectId, new Date(CUTOFF)])).rows[0].n as number;
      assert.equal(
        await left("SELECT count(*)::int AS n FROM analytics_rollups WHERE project_id = $1 AND bucket < $2"),
        0,
      );
      assert.equal(
        await left("SELECT count(*)::int AS n FROM event_user_hours WHERE project_id = $1 AND hour < $2"),
        0,
      );
      assert.equal(
        await left("SELECT count(*)::int AS n FROM analytics_blocks WHERE project_id = $1 AND hour < $2"),
        0,
      );
      assert.equal(await left("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND ts >= $2"), recent);
      const c = await node.rest.post(
        `/v1/projects/${a.projectId}/analytics/count`,
        { time: { start: iso(base - DAY_MS), end: iso(now + DAY_MS) } },
        { key: a.key },
      );
      assert.equal(c.body.data.count, recent);
      const cb = await node.rest.post(
        `/v1/projects/${b.projectId}/analytics/count`,
        { time: { start: iso(base - DAY_MS), end: iso(now + DAY_MS) } },
        { key: b.key },
      );
      assert.equal(cb.body.data.count, bEvents.length, "the other project keeps everything");
    } finally {
      await node.kill("SIGKILL");
      await q2.end();
    }
  });
});

describe("over Connect and gRPC", () => {
  it("UpdateProject takes retentionDays as a Value: a number sets it, null clears it, anything else is InvalidArgument", async () => {
    const transports: [string, Transport][] = [
      ["Connect", createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })],
      ["gRPC", createGrpcTransport({ baseUrl: t.url })],
    ];
    const headers = { cookie: p.owner.cookie };
    const num = (value: number) => ({ kind: { case: "numberValue" as const, value } });
    for (const [name, tr] of transports) {
      const c = createClient(ProjectService, tr);
      const ok = await c.updateProject({ projectId: p.projectId, retentionDays: num(45) }, { headers });
      assert.equal(ok.data?.retentionDays, 45, name);
      assert.equal(ok.data?.retention?.source, "project", name);
      assert.equal(ok.data?.retention?.days, 45, name);
      for (const bad of [
        num(1.5),
        num(0),
        num(Number.MAX_VALUE),
        { kind: { case: "stringValue" as const, value: "9" } },
      ]) {
        try {
          await c.updateProject({ projectId: p.projectId, retentionDays: bad }, { headers });
          assert.fail(`${name}: ${JSON.stringify(bad)} was accepted`);
        } catch (err) {
          const e = ConnectError.from(err);
          assert.equal(e.code, Code.InvalidArgument, `${name}: ${e.message}`);
          assert.match(e.rawMessage, /retentionDays/);
        }
      }
      const cleared = await c.updateProject(
        { projectId: p.projectId, retentionDays: { kind: { case: "nullValue", value: 0 } } },
        { headers },
      );
      assert.equal(cleared.data?.retentionDays, undefined, name);
      assert.equal(cleared.data?.retention?.source, "none", name);
    }
  });
});

describe("raw heartbeats", () => {
  it("the pass deletes raw heartbeats past UPTIME_RAW_RETENTION_DAYS for every project, retention or not", async () => {
    const app = await startTestApp({ UPTIME_RAW_RETENTION_DAYS: "1" });
    const q = new pg.Client({ connectionString: app.databaseUrl });
    await q.connect();
    try {
      const f = await project(app.rest); // no retention: its events are kept forever, raw heartbeats are not
      const hb = await app.rest.post(`/v1/projects/${f.projectId}/heartbeats/nightly`, {}, { key: f.key });
      assert.equal(hb.status, 200, hb.text);
      const { rows } = await q.query<{ id: string }>("SELECT id FROM monitors WHERE project_id = $1", [f.projectId]);
      await q.query(
        "INSERT INTO heartbeats (id, monitor_id, at, status) VALUES ('hb-3d', $1, $2, 'up'), ('hb-20h', $1, $3, 'up')",
        [rows[0].id, new Date(Date.now() - 3 * DAY_MS), new Date(Date.now() - 20 * HOUR_MS)],
      );
      const r = await runRetentionPass(app.app.deps, eventsOf(app.app).derived);
      assert.equal(r.completed, true);
      const left = await q.query<{ id: string }>(
        "SELECT h.id FROM heartbeats h JOIN monitors m ON m.id = h.monitor_id WHERE m.project_id = $1 ORDER BY h.at",
        [f.projectId],
      );
      const ids = left.rows.map((x) => x.id);
      // The 3-day-old one is gone; the 20-hour-old one and the one just sent stay.
      assert.equal(ids.length, 2, `left: ${ids}`);
      assert.equal(ids[0], "hb-20h");
    } finally {
      await q.end();
      await app.close();
    }
  });
});

describe("runs of cron jobs", () => {
  it("the pass keeps each monitor's newest UPTIME_MAX_RUNS_PER_MONITOR runs and a project's retention window; a running run is never pruned", async () => {
    const q = db();
    try {
      const f = await project(t.rest); // no retention: only the cap applies
      const signal = (fx: typeof f, path: string, body: unknown = {}) =>
        t.rest.post(`/v1/projects/${fx.projectId}/heartbeats/${path}`, body, { key: fx.key });
      // The oldest run stays running (it never ends); five ended runs follow it.
      assert.equal((await signal(f, "backup/start", { runId: "open" })).status, 200);
      for (let i = 1; i <= 5; i++) assert.equal((await signal(f, "backup/exit/0", { runId: `e${i}` })).status, 200);
      // A second project keeps 10 days: an ended run from 20 days ago goes, a running one as old stays.
      const g = await project(t.rest);
      const set = await t.rest.patch(`/v1/projects/${g.projectId}`, { retentionDays: 10 }, { cookie: g.owner.cookie });
      assert.equal(set.status, 200, set.text);
      assert.equal((await signal(g, "report/start", { runId: "hung" })).status, 200);
      assert.equal((await signal(g, "report/exit/1", { runId: "old" })).status, 200);
      assert.equal((await signal(g, "report/exit/0", { runId: "recent" })).status, 200);
      await q.query(
        `UPDATE monitor_runs r SET created_at = now() - interval '20 days',
                started_at = CASE WHEN r.started_at IS NULL THEN NULL ELSE now() - interval '20 days' END,
                ended_at = CASE WHEN r.ended_at IS NULL THEN NULL ELSE now() - interval '20 days' END
           FROM monitors m WHERE m.id = r.monitor_id AND m.project_id = $1 AND r.run_id IN ('hung', 'old')`,
        [g.projectId],
      );
      // The app's own loop may hold the lock for a moment: one pass of ours completes.
      const deadline = Date.now() + 10_000;
      while (!(await runRetentionPass(t.app.deps, eventsOf(t.app).derived)).completed)
        assert.ok(Date.now() < deadline, "a pass completed");
      const left = async (fx: typeof f) =>
        (
          await q.query<{ run_id: string; outcome: string }>(
            `SELECT r.run_id, r.outcome FROM monitor_runs r JOIN monitors m ON m.id = r.monitor_id
              WHERE m.project_id = $1 ORDER BY r.created_at, r.id`,
            [fx.projectId],
          )
        ).rows.map((r) => `${r.run_id}:${r.outcome}`);
      assert.deepEqual(await left(f), ["open:running", "e3:succeeded", "e4:succeeded", "e5:succeeded"]);
      assert.deepEqual(await left(g), ["hung:running", "recent:succeeded"]);
      // The run list answers the same.
      const monitorId = (await signal(f, "backup/start", { runId: "next" })).body.data.monitor.id;
      const list = await t.rest.get(`/v1/projects/${f.projectId}/monitors/${monitorId}/runs`, { key: f.key });
      assert.deepEqual(
        list.body.data.map((r: { runId: string }) => r.runId),
        ["next", "e5", "e4", "e3", "open"],
      );
    } finally {
      await q.end();
    }
  });
});

describe("one node at a time", () => {
  it("a pass does nothing while another session holds the retention lock", async () => {
    const c = new pg.Client({ connectionString: t.databaseUrl });
    await c.connect();
    try {
      await c.query("SELECT pg_advisory_lock(hashtextextended('vigil:retention', 0))");
      const held = await runRetentionPass(t.app.deps, eventsOf(t.app).derived);
      assert.equal(held.completed, false);
      await c.query("SELECT pg_advisory_unlock(hashtextextended('vigil:retention', 0))");
      // The app's own loop may hold it for a moment: a free lock lets a pass complete.
      const deadline = Date.now() + 10_000;
      while (!(await runRetentionPass(t.app.deps, eventsOf(t.app).derived)).completed)
        assert.ok(Date.now() < deadline, "a pass completed once the lock was free");
    } finally {
      await c.end();
    }
  });

  it("the server ending the pass's lock connection mid-pass (a restart, a failover) crashes nothing; the next pass completes", async () => {
    assert.equal((await patch({ retentionDays: DAYS })).status, 200);
    const derived = eventsOf(t.app).derived;
    const admin = new pg.Client({ connectionString: t.databaseUrl });
    await admin.connect();
    let ended: number | undefined;
    try {
      // Between two statements of the pass (the settle before its trims), PostgreSQL ends the session
      // that holds the lock: idle, checked out of the pool, it gets the FATAL with no query to fail.
      const ending = {
        async settle(projectId: string) {
          if (ended === undefined) {
            const holder = await admin.query<{ pid: number }>(
              `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
                 AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('vigil:retention', 0)`,
            );
            assert.equal(holder.rowCount, 1, "the pass holds the retention lock");
            ended = holder.rows[0].pid;
            await admin.query("SELECT pg_terminate_backend($1)", [ended]);
            await sleep(200); // the FATAL reaches the idle client
          }
          return derived.settle(projectId);
        },
      };
      const deadline = Date.now() + 10_000;
      while (!(await runRetentionPass(t.app.deps, ending)).completed || ended === undefined)
        assert.ok(Date.now() < deadline, "a pass ran to its end while the app's own loop let it have the lock");
      // The ended session took its lock with it; the pool did not hand the dead connection out again.
      const again = Date.now() + 10_000;
      while (!(await runRetentionPass(t.app.deps, derived)).completed)
        assert.ok(Date.now() < again, "a later pass got the lock and completed");
      const live = await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [ended]);
      assert.equal(live.rowCount, 0);
      assert.equal((await t.rest.get("/health")).status, 200);
    } finally {
      await admin.end();
      await patch({ retentionDays: null });
    }
  });
});
