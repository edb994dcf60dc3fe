import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { recordNotices, sleep, waitFor } from "./util.js";

// Durability and concurrency: a deadline that passed while the service was stopped is acted on at
// start-up; two service instances on one database open one incident and fire one notification.

const apps: TestApp[] = [];
after(async () => {
  for (const a of apps) await a.close().catch(() => undefined);
});

describe("restart and several nodes", () => {
  it("a deadline that passed while stopped is acted on at start-up, with startedAt = the deadline", async () => {
    const a = await startTestApp();
    const p = await project(a.rest);
    const hb = await a.rest.post(`/v1/projects/${p.projectId}/heartbeats/cron-1`, { expectedIntervalMs: 200, gracePeriodMs: 100 }, { key: p.key });
    const id = hb.body.data.monitor.id;
    const deadline = Date.parse(hb.body.data.monitor.lastHeartbeatAt) + 300;
    await a.close(); // before the deadline
    assert.ok(Date.now() < deadline, "closed before the deadline");
    await sleep(Math.max(0, deadline - Date.now()) + 300);

    const b = await startTestApp({}, { databaseUrl: a.databaseUrl });
    apps.push(b);
    await waitFor(async () => (await b.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/status`, { key: p.key })).body.data.status === "down", 5000, "down after restart");
    const inc = (await b.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc.length, 1);
    assert.equal(inc[0].startedAt, new Date(deadline).toISOString());
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
      const r = await node.rest.post(`/v1/projects/${p.projectId}/heartbeats/svc-${i}`, { expectedIntervalMs: 300, gracePeriodMs: 0 }, { key: p.key });
      assert.equal(r.status, 200, r.text);
      ids.push(r.body.data.monitor.id);
    }
    await waitFor(async () => {
      const r = await a.app.deps.db.query("SELECT count(*) AS n FROM monitors WHERE id = ANY($1) AND status = 'down'", [ids]);
      return r.rows[0].n === N;
    }, 5000, "all down");
    await sleep(200); // let a losing node finish its attempt
    const inc = await a.app.deps.db.query("SELECT monitor_id, count(*) AS n FROM incidents WHERE monitor_id = ANY($1) GROUP BY monitor_id", [ids]);
    assert.equal(inc.rows.length, N);
    assert.ok(inc.rows.every((r) => r.n === 1), "one incident per monitor");
    const notes = await a.app.deps.db.query("SELECT count(*) AS n FROM incident_notifications n JOIN incidents i ON i.id = n.incident_id WHERE i.monitor_id = ANY($1)", [ids]);
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
    const hb = await api.rest.post(`/v1/projects/${p.projectId}/heartbeats/remote`, { expectedIntervalMs: 200, gracePeriodMs: 100 }, { key: p.key });
    const deadline = Date.parse(hb.body.data.monitor.lastHeartbeatAt) + 300;
    const id = hb.body.data.monitor.id;
    // Bounded well under the 30 s re-scan: only the notification can have armed the worker's timer.
    await waitFor(async () => (await api.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/status`, { key: p.key })).body.data.status === "down", 5000, "down via worker");
    const inc = (await api.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc[0].startedAt, new Date(deadline).toISOString());
  });
});
