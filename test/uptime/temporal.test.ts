import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MockActivityEnvironment } from "@temporalio/testing";
import { bundleWorkflowCode } from "@temporalio/worker";
import { monitorWorkflowId } from "../../src/temporal/client.js";
import { createActivities } from "../../src/temporal/activities.js";
import { WORKFLOWS_PATH } from "../../src/temporal/worker.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { sleep } from "./util.js";

// The Temporal side without a Temporal server (none can be downloaded here): the activities run in
// @temporalio/testing's MockActivityEnvironment against the real database, and the workflow code is
// bundled the way the worker bundles it (webpack + Temporal's determinism checks on imports).
// The service runs with ROLE=api so that no embedded scheduler competes with the activity.

let t: TestApp;
let p: ProjectFixture;
before(async () => {
  t = await startTestApp({ ROLE: "api" });
  p = await project(t.rest);
});
after(() => t.close());

const activities = () => createActivities(t.app.deps);

describe("uptime activities (MockActivityEnvironment)", () => {
  it("checkMonitorDeadline: sleeps until the deadline, then opens one incident at the deadline", async () => {
    const hb = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/temporal-1`, { expectedIntervalMs: 150, gracePeriodMs: 50 }, { key: p.key });
    const id = hb.body.data.monitor.id;
    const deadline = Date.parse(hb.body.data.monitor.lastHeartbeatAt) + 200;
    const env = new MockActivityEnvironment();
    const first = await env.run(activities().checkMonitorDeadline, id);
    assert.deepEqual(first, { exists: true, nextCheckAt: deadline, opened: false });

    await sleep(Math.max(0, deadline - Date.now()) + 20);
    const second = await env.run(activities().checkMonitorDeadline, id);
    assert.deepEqual(second, { exists: true, nextCheckAt: null, opened: true });
    const inc = (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc.length, 1);
    assert.equal(inc[0].startedAt, new Date(deadline).toISOString());
    const again = await env.run(activities().checkMonitorDeadline, id);
    assert.deepEqual(again, { exists: true, nextCheckAt: null, opened: false });
  });

  it("a heartbeat needs no Temporal call: the next check finds the later deadline", async () => {
    const hb = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/temporal-2`, { expectedIntervalMs: 150, gracePeriodMs: 0 }, { key: p.key });
    const id = hb.body.data.monitor.id;
    await sleep(100);
    const hb2 = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/temporal-2`, {}, { key: p.key });
    await sleep(Math.max(0, Date.parse(hb.body.data.monitor.lastHeartbeatAt) + 150 - Date.now()) + 10);
    const r = await new MockActivityEnvironment().run(activities().checkMonitorDeadline, id);
    assert.deepEqual(r, { exists: true, nextCheckAt: Date.parse(hb2.body.data.monitor.lastHeartbeatAt) + 150, opened: false });
  });

  it("concurrent checks (two workers) open one incident and one notification", async () => {
    const hb = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/temporal-3`, { expectedIntervalMs: 100, gracePeriodMs: 0 }, { key: p.key });
    const id = hb.body.data.monitor.id;
    await sleep(150);
    const rs = (await Promise.all(Array.from({ length: 4 }, () => new MockActivityEnvironment().run(activities().checkMonitorDeadline, id)))) as { opened: boolean }[];
    assert.equal(rs.filter((r) => r.opened).length, 1);
    const n = await t.app.deps.db.query("SELECT count(*) AS n FROM incident_notifications n JOIN incidents i ON i.id = n.incident_id WHERE i.monitor_id = $1", [id]);
    assert.equal(n.rows[0].n, 1);
  });

  it("a deleted monitor ends its workflow", async () => {
    const hb = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/temporal-4`, {}, { key: p.key });
    await t.rest.del(`/v1/projects/${p.projectId}/monitors/${hb.body.data.monitor.id}`, { key: p.key });
    assert.deepEqual(await new MockActivityEnvironment().run(activities().checkMonitorDeadline, hb.body.data.monitor.id), { exists: false, nextCheckAt: null, opened: false });
    assert.equal(monitorWorkflowId("mon_abc"), "monitor-mon_abc");
  });
});

describe("workflow bundle", () => {
  it("bundles workflows/index.ts as the worker does (no non-deterministic imports)", async () => {
    const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never });
    assert.ok(bundle.code.includes("monitorDeadlineWorkflow"));
    assert.ok(!bundle.code.includes("from \"pg\""));
  });
});
