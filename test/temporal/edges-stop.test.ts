import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { TestApp } from "../helpers/app.js";
import type { ProjectFixture } from "../helpers/fixtures.js";
import type { TemporalServer } from "../helpers/temporal.js";
import {
  startEdgeSuite,
  stopEdgeSuite,
  type EdgeSuite,
  EventType,
  historyOf,
  incidentAfter,
  incidentsOf,
  runClosed,
  waitFor,
  wakesLeft,
  workerRunning,
} from "./edges-util.js";

// What ends a monitor's workflow, and what does not end its watch (issue #14, live suite), on a dev
// server of this file's own (stopped and restarted with its database file):
// - a pause or a delete ends the workflow (it completes), also when done while Temporal is down:
//   the monitor_wakes outbox delivers the wake after the restart;
// - an operator terminating `monitor-<id>` does not end the watch: the reconciler detects the next
//   missed deadline and starts a new run.
// The monitors here have a 60 s interval: their workflows sleep 60 s, so a run that completes within
// seconds of the change was woken, not ended by its own timer.

const RECONCILE_MS = 2_000;
const SLACK_MS = 2_000; // RECONCILE_SLACK_MS of src/uptime/temporal-runner.ts

let srv: TemporalServer;
let t: TestApp;
let p: ProjectFixture;
let db: EdgeSuite["db"];
let tc: EdgeSuite["tc"];

before(async () => ({ srv, t, p, db, tc } = await startEdgeSuite(RECONCILE_MS)));
after(() => stopEdgeSuite({ srv, t, db, tc }));

const base = () => `/v1/projects/${p.projectId}`;

/** A monitor whose workflow sleeps on its deadline timer (interval as given). */
async function sleepingMonitor(
  slug: string,
  intervalMs = 60_000,
): Promise<{ id: string; deadline: number; runId: string }> {
  const r = await t.rest.post(
    `${base()}/heartbeats/${slug}`,
    { expectedIntervalMs: intervalMs, gracePeriodMs: 0 },
    { key: p.key },
  );
  assert.equal(r.status, 200, r.text);
  const id: string = r.body.data.monitor.id;
  await waitFor(
    async () => (await historyOf(tc.client, `monitor-${id}`)).some((e) => e.eventType === EventType.TIMER_STARTED),
    10_000,
    `${slug}: timer started`,
  );
  const { runId } = await tc.client.workflow.getHandle(`monitor-${id}`).describe();
  return { id, deadline: Date.parse(r.body.data.monitor.deadlineAt), runId };
}

describe("pause and delete end the workflow", () => {
  it("a pause and a delete each complete the monitor's workflow within seconds", async () => {
    const a = await sleepingMonitor("paused-up");
    const b = await sleepingMonitor("deleted-up");
    const pause = await t.rest.post(`${base()}/monitors/${a.id}/pause`, {}, { key: p.key });
    assert.equal(pause.status, 200, pause.text);
    const del = await t.rest.del(`${base()}/monitors/${b.id}`, { key: p.key });
    assert.equal(del.status, 204, del.text);
    const at = Date.now();
    const ra = await runClosed(tc.client, `monitor-${a.id}`, "COMPLETED", 5_000, "paused monitor's workflow completed");
    const rb = await runClosed(
      tc.client,
      `monitor-${b.id}`,
      "COMPLETED",
      5_000,
      "deleted monitor's workflow completed",
    );
    console.log(
      `pause → completed ${ra.closeTime!.getTime() - at} ms, delete → completed ${rb.closeTime!.getTime() - at} ms`,
    );
    assert.equal(ra.runId, a.runId);
    assert.equal(rb.runId, b.runId);
    assert.equal(await wakesLeft(db), 0);
  });

  it("a pause and a delete made while Temporal is down complete the workflows after the restart (outbox)", async () => {
    const a = await sleepingMonitor("paused-while-down");
    const b = await sleepingMonitor("deleted-while-down");
    await srv.stop();
    const pause = await t.rest.post(`${base()}/monitors/${a.id}/pause`, {}, { key: p.key });
    assert.equal(pause.status, 200, pause.text);
    const del = await t.rest.del(`${base()}/monitors/${b.id}`, { key: p.key });
    assert.equal(del.status, 204, del.text);
    assert.equal(await wakesLeft(db), 2, "both wakes wait in the outbox while Temporal is down");

    const began = Date.now();
    await srv.restart();
    await workerRunning(t.rest);
    const ra = await runClosed(
      tc.client,
      `monitor-${a.id}`,
      "COMPLETED",
      RECONCILE_MS + 10_000,
      "paused monitor's workflow completed after the restart",
    );
    const rb = await runClosed(
      tc.client,
      `monitor-${b.id}`,
      "COMPLETED",
      RECONCILE_MS + 10_000,
      "deleted monitor's workflow completed after the restart",
    );
    console.log(
      `after the restart began: paused run completed ${ra.closeTime!.getTime() - began} ms, deleted run ${rb.closeTime!.getTime() - began} ms`,
    );
    assert.equal(ra.runId, a.runId, "the run that was sleeping when the pause committed");
    assert.equal(rb.runId, b.runId);
    assert.ok(
      ra.closeTime!.getTime() < a.deadline && rb.closeTime!.getTime() < b.deadline,
      "ended by the wake, not by their own 60 s timers",
    );
    await waitFor(async () => (await wakesLeft(db)) === 0, 5_000, "outbox empty");
  });
});

describe("an operator terminates a monitor's workflow", () => {
  it("the monitor is still watched: the reconciler detects the next missed deadline and a new run exists afterwards", async () => {
    const m = await sleepingMonitor("terminated", 4_000);
    await tc.client.workflow.getHandle(`monitor-${m.id}`).terminate("operator test");
    assert.equal((await tc.client.workflow.getHandle(`monitor-${m.id}`).describe()).status.name, "TERMINATED");
    assert.ok(Date.now() < m.deadline - 500, "terminated before the deadline");

    const inc = await incidentAfter(
      db,
      m.id,
      m.deadline,
      m.deadline - Date.now() + RECONCILE_MS + SLACK_MS + 5_000,
      "incident after the terminate",
    );
    const delay = inc.created_at.getTime() - m.deadline;
    console.log(
      `deadline of a terminated workflow's monitor detected ${delay} ms after the deadline (bound ${RECONCILE_MS + SLACK_MS + 1_000})`,
    );
    assert.equal(inc.started_at.getTime(), m.deadline);
    assert.ok(delay <= RECONCILE_MS + SLACK_MS + 1_000, `detected ${delay} ms after the deadline`);
    assert.equal((await incidentsOf(db, m.id)).length, 1);

    const run = await waitFor(
      async () => {
        const d = await tc.client.workflow.getHandle(`monitor-${m.id}`).describe();
        return d.status.name === "RUNNING" && d.runId !== m.runId ? d : undefined;
      },
      10_000,
      "a new run",
    );
    assert.notEqual(run.runId, m.runId);
    // The new run watches: a recovery and a missed deadline are detected by it, at the deadline.
    const rec = await t.rest.post(
      `${base()}/heartbeats/terminated`,
      { status: "up", expectedIntervalMs: 1_500 },
      { key: p.key },
    );
    const next = Date.parse(rec.body.data.monitor.deadlineAt);
    const again = await incidentAfter(db, m.id, next, 10_000, "second incident");
    console.log(`new run: next deadline detected ${again.created_at.getTime() - next} ms after it`);
    assert.equal(again.started_at.getTime(), next);
    assert.ok(again.created_at.getTime() - next <= 1_000, "by the new run's timer, not the reconciler");
  });
});
