import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { recordNotices, sleep, waitFor } from "./util.js";

// Durability and concurrency: a deadline that passed while the service was stopped is acted on at
// start-up, and so is a maintenance window's start and end; two service instances on one database
// open one incident and fire one notification.

const apps: TestApp[] = [];
after(async () => {
  for (const a of apps) await a.close().catch(() => undefined);
});

describe("restart and several nodes", () => {
  it("a deadline that passed while stopped is acted on at start-up, with startedAt = the deadline", async () => {
    const a = await startTestApp();
    const p = await project(a.rest);
    // 12 s: closing a node with Temporal workers (pass 2: three workers shut down, the shared dev
    // server busy with other files) took 2-4 s here and more than 5 s once in CI.
    const hb = await a.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/cron-1`,
      { expectedIntervalMs: 10_000, gracePeriodMs: 2000 },
      { key: p.key },
    );
    const id = hb.body.data.monitor.id;
    const deadline = Date.parse(hb.body.data.monitor.lastHeartbeatAt) + 12_000;
    const closing = Date.now();
    await a.close(); // before the deadline
    if (process.env.VIGIL_TEST_LOG_CLOSE) console.log(`close took ${Date.now() - closing} ms`);
    assert.ok(Date.now() < deadline, "closed before the deadline");
    await sleep(Math.max(0, deadline - Date.now()) + 300);

    const b = await startTestApp({}, { databaseUrl: a.databaseUrl });
    apps.push(b);
    // 15 s: with Temporal (pass 2) the new node's worker must connect and take the timer's task over.
    await waitFor(
      async () =>
        (await b.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/status`, { key: p.key })).body.data.status ===
        "down",
      15_000,
      "down after restart",
    );
    const inc = (await b.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc.length, 1);
    assert.equal(inc[0].startedAt, new Date(deadline).toISOString());
  });

  it("a maintenance window that started and ended while stopped is applied at start-up, in order, once each", async () => {
    const a = await startTestApp();
    const p = await project(a.rest);
    const hb = await a.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/window-restart`,
      { expectedIntervalMs: 3_600_000, gracePeriodMs: 1000 },
      { key: p.key },
    );
    const id = hb.body.data.monitor.id;
    // 12 s ahead, as above: the node must be closed before the window starts.
    const start = Date.now() + 12_000;
    const end = start + 500;
    const w = await a.rest.post(
      `/v1/projects/${p.projectId}/maintenances`,
      {
        title: "Overnight",
        monitorIds: [id],
        startsAt: new Date(start).toISOString(),
        endsAt: new Date(end).toISOString(),
      },
      { key: p.key },
    );
    assert.equal(w.status, 201, w.text);
    await a.close();
    assert.ok(Date.now() < start, "closed before the window started");
    await sleep(Math.max(0, end - Date.now()) + 300);

    const b = await startTestApp({}, { databaseUrl: a.databaseUrl });
    apps.push(b);
    // 15 s: with Temporal (pass 2) the new node's worker takes the deadline scan's task over.
    const occ = await waitFor(
      async () => {
        const r = await b.app.deps.db.query<{ kind: string; starts_at: Date }>(
          "SELECT kind, starts_at FROM maintenance_occurrences WHERE maintenance_id = $1 ORDER BY created_at, kind DESC",
          [w.body.data.id],
        );
        return r.rows.length >= 2 ? r.rows : undefined;
      },
      15_000,
      "the window's start and end applied",
    );
    assert.deepEqual(
      occ.map((o) => [o.kind, o.starts_at.toISOString()]),
      [
        ["started", new Date(start).toISOString()],
        ["completed", new Date(start).toISOString()],
      ],
    );
    const m = (await b.rest.get(`/v1/projects/${p.projectId}/monitors/${id}`, { key: p.key })).body.data;
    assert.equal(m.inMaintenance, false);
    assert.equal(m.status, "up");
    // The deadline counts from the window's end, as after a resume.
    assert.equal(m.deadlineAt, new Date(end + 3_600_000 + 1000).toISOString());
    assert.equal(
      (await b.rest.get(`/v1/projects/${p.projectId}/maintenances/${w.body.data.id}`, { key: p.key })).body.data.status,
      "completed",
    );
    // Once each: the claim rows that fire the notices (a second application would add rows).
    await sleep(500);
    const again = await b.app.deps.db.query(
      "SELECT count(*)::int AS n FROM maintenance_occurrences WHERE maintenance_id = $1",
      [w.body.data.id],
    );
    assert.equal(again.rows[0].n, 2);
  });

  it("two instances on one database: one incident and one notification record per monitor", async () => {
    const a = await startTestApp();
    apps.push(a);
    const b = await startTestApp({}, { databaseUrl: a.databaseUrl });
    apps.push(b);
    const seenA = recordNotices(a);
    const seenB = recordNotices(b);
    const p = await project(a.rest);
    const N = 20;
    // Heartbeats go to both nodes; every node learns every deadline (its own commits or NOTIFY).
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      const node = i % 2 ? a : b;
      const r = await node.rest.post(
        `/v1/projects/${p.projectId}/heartbeats/svc-${i}`,
        { expectedIntervalMs: 300, gracePeriodMs: 0 },
        { key: p.key },
      );
      assert.equal(r.status, 200, r.text);
      ids.push(r.body.data.monitor.id);
    }
    await waitFor(
      async () => {
        const r = await a.app.deps.db.query(
          "SELECT count(*) AS n FROM monitors WHERE id = ANY($1) AND status = 'down'",
          [ids],
        );
        return r.rows[0].n === N;
      },
      5000,
      "all down",
    );
    await sleep(200); // let a losing node finish its attempt
    const inc = await a.app.deps.db.query(
      "SELECT monitor_id, count(*) AS n FROM incidents WHERE monitor_id = ANY($1) GROUP BY monitor_id",
      [ids],
    );
    assert.equal(inc.rows.length, N);
    assert.ok(
      inc.rows.every((r) => r.n === 1),
      "one incident per monitor",
    );
    const notes = await a.app.deps.db.query(
      "SELECT count(*) AS n FROM incident_notifications n JOIN incidents i ON i.id = n.incident_id WHERE i.monitor_id = ANY($1)",
      [ids],
    );
    assert.equal(notes.rows[0].n, N);
    const started = [...seenA, ...seenB].filter((n) => n.type === "incident.started");
    assert.equal(started.length, N, "one incident.started per monitor across both nodes");
    assert.equal(new Set(started.map((n) => n.dedupeKey)).size, N);
    // Both nodes took part: each had timers for the other's monitors through NOTIFY.
    assert.ok(seenA.length > 0 || seenB.length > 0);
  });

  it("an API node (ROLE=api) takes the heartbeat; a worker node learns the deadline by NOTIFY and acts on it", async () => {
    const worker = await startTestApp();
    apps.push(worker);
    const api = await startTestApp({ ROLE: "api" }, { databaseUrl: worker.databaseUrl });
    apps.push(api);
    const p = await project(api.rest);
    const hb = await api.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/remote`,
      { expectedIntervalMs: 200, gracePeriodMs: 100 },
      { key: p.key },
    );
    const deadline = Date.parse(hb.body.data.monitor.lastHeartbeatAt) + 300;
    const id = hb.body.data.monitor.id;
    // Bounded well under the 30 s re-scan: only the notification can have armed the worker's timer.
    await waitFor(
      async () =>
        (await api.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/status`, { key: p.key })).body.data.status ===
        "down",
      5000,
      "down via worker",
    );
    const inc = (await api.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc[0].startedAt, new Date(deadline).toISOString());
  });

  it("steady heartbeats alternating between two nodes: every compare-and-set that lost is redone locked; nothing lost or doubled", async () => {
    const a = await startTestApp();
    apps.push(a);
    const b = await startTestApp({}, { databaseUrl: a.databaseUrl });
    apps.push(b);
    const p = await project(a.rest);
    const path = `/v1/projects/${p.projectId}/heartbeats/shared`;
    const first = await a.rest.post(path, { expectedIntervalMs: 60_000, latencyMs: 1 }, { key: p.key });
    const id = first.body.data.monitor.id;
    // Each node remembers the row it last wrote; the other node's write makes that memory stale.
    const N = 40;
    for (let i = 0; i < N; i++) {
      const r = await (i % 2 ? a : b).rest.post(path, { latencyMs: i + 2 }, { key: p.key });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.monitor.status, "up");
    }
    // Concurrent bursts on both nodes at once.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).rest.post(path, { latencyMs: 100 }, { key: p.key })),
    );
    // Paused on node a: node b, which remembers an `up` row, must not write over the pause.
    await a.rest.post(`/v1/projects/${p.projectId}/monitors/${id}/pause`, {}, { key: p.key });
    const late = await b.rest.post(path, { latencyMs: 5 }, { key: p.key });
    assert.equal(late.body.data.monitor.status, "paused");
    const db = a.app.deps.db;
    const hb = await db.query("SELECT count(*)::int AS n FROM heartbeats WHERE monitor_id = $1", [id]);
    assert.equal(hb.rows[0].n, 1 + N + 40 + 1);
    const roll = await db.query(
      "SELECT sum(total)::int AS total, sum(latency_count)::int AS n, max(latency_max) AS max FROM heartbeat_rollups WHERE monitor_id = $1",
      [id],
    );
    assert.deepEqual(roll.rows[0], { total: 1 + N + 40 + 1, n: 1 + N + 40 + 1, max: 100 });
    const m = await db.query("SELECT status, version FROM monitors WHERE id = $1", [id]);
    assert.equal(m.rows[0].status, "paused");
    assert.ok(m.rows[0].version >= N + 2, "every write bumped the version");
  });
});
