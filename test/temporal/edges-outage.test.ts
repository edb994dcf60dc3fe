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
  eventTime,
  historyOf,
  incidentAfter,
  incidentsOf,
  sleep,
  waitFor,
  wakesLeft,
  workerRunning,
} from "./edges-util.js";

// Temporal unreachable, then back (issue #14, live suite): a dev server of this file's own, with a
// database file so that stop() + restart() keep its workflows and timers.
// - a recovery heartbeat while the server is down reaches the workflow from the monitor_wakes
//   outbox once it is back, and the deadline scan (not the reconciler) then detects the next deadline;
// - a deadline missed while the server is down is detected by the reconciler, at the deadline;
// - a server restart keeps the deadline scan's timer: the deadline is detected by that timer.

const RECONCILE_MS = 2_000;
const SLACK_MS = 2_000; // RECONCILE_SLACK_MS of src/uptime/temporal-runner.ts

let srv: TemporalServer;
let t: TestApp;
let p: ProjectFixture;
let db: EdgeSuite["db"];
let tc: EdgeSuite["tc"];

before(async () => ({ srv, t, p, db, tc } = await startEdgeSuite(RECONCILE_MS)));
after(() => stopEdgeSuite({ srv, t, db, tc }));

const hb = (slug: string, body: Record<string, unknown>) =>
  t.rest.post(`/v1/projects/${p.projectId}/heartbeats/${slug}`, body, { key: p.key });

/** Restarts the dev server and waits until this node's workers run again; returns when it began. */
async function restartServer(): Promise<{ began: number; ms: number }> {
  const began = Date.now();
  await srv.restart();
  await workerRunning(t.rest);
  return { began, ms: Date.now() - began };
}

describe("Temporal unreachable, then restored", () => {
  it("a deadline missed while Temporal is down is detected by the reconciler, at the deadline; the workflow runs once it is back", async () => {
    await srv.stop();
    const r = await hb("missed-while-down", { expectedIntervalMs: 1_000, gracePeriodMs: 0 });
    assert.equal(r.status, 200, r.text); // the API serves without Temporal
    const id = r.body.data.monitor.id;
    const deadline = Date.parse(r.body.data.monitor.deadlineAt);
    assert.equal(await wakesLeft(db), 1, "the new monitor's wake waits in the outbox");

    const inc = await incidentAfter(
      db,
      id,
      deadline,
      RECONCILE_MS + SLACK_MS + 5_000,
      "incident while Temporal is down",
    );
    const delay = inc.created_at.getTime() - deadline;
    console.log(
      `reconciler detection while Temporal is down: ${delay} ms after the deadline (bound ${RECONCILE_MS + SLACK_MS + 1_000})`,
    );
    assert.equal(inc.started_at.getTime(), deadline, "incident starts at the deadline");
    assert.ok(delay <= RECONCILE_MS + SLACK_MS + 1_000, `detected ${delay} ms after the deadline`);

    await restartServer();
    await waitFor(async () => (await wakesLeft(db)) === 0, 10_000, "outbox drained after restart");
    const d = await waitFor(
      async () => {
        const x = await tc.client.workflow.getHandle(`monitor-${id}`).describe();
        return x.status.name === "RUNNING" && x.searchAttributes.VigilMonitorStatus?.[0] === "down" ? x : undefined;
      },
      10_000,
      "the monitor's workflow runs (down, idle) after the restart",
    );
    assert.equal(d.status.name, "RUNNING");
    assert.equal((await incidentsOf(db, id)).length, 1, "exactly one incident");
  });

  it("a recovery heartbeat while Temporal is down reaches the workflow from the outbox; the next missed deadline is detected within the reconcile period + 1 s", async () => {
    const first = await hb("recovers-while-down", { expectedIntervalMs: 1_000, gracePeriodMs: 0 });
    const id = first.body.data.monitor.id;
    const down = await hb("recovers-while-down", { status: "down" });
    assert.equal(down.body.data.monitor.status, "down");
    const handle = tc.client.workflow.getHandle(`monitor-${id}`);
    // The workflow has read the down status and idles: only a wake can set it going again.
    await waitFor(
      async () => (await handle.describe()).searchAttributes.VigilMonitorStatus?.[0] === "down",
      10_000,
      "workflow idle on down",
    );
    await waitFor(async () => (await wakesLeft(db)) === 0, 10_000, "outbox empty before the outage");
    const { runId } = await handle.describe();

    await srv.stop();
    const rec = await hb("recovers-while-down", { status: "up", expectedIntervalMs: 15_000, gracePeriodMs: 0 });
    assert.equal(rec.status, 200, rec.text);
    assert.equal(rec.body.data.monitor.status, "up");
    const deadline = Date.parse(rec.body.data.monitor.deadlineAt);
    assert.equal(await wakesLeft(db), 1, "the recovery's wake is kept while Temporal is down");
    await sleep(1_500); // a few failed drain attempts

    const { began, ms } = await restartServer();
    await waitFor(async () => (await wakesLeft(db)) === 0, RECONCILE_MS + 5_000, "outbox drained after restart");
    console.log(
      `restart ${ms} ms; outbox drained ${Date.now() - began} ms after the restart began; ${deadline - Date.now()} ms left before the deadline`,
    );
    assert.ok(
      Date.now() < deadline - 1_000,
      "the deadline falls after the restart (else this test proves nothing about the wake)",
    );

    const events = await historyOf(tc.client, `monitor-${id}`, runId);
    const signals = events.filter((e) => e.eventType === EventType.SIGNALED && eventTime(e) >= began);
    assert.ok(signals.length >= 1, "the wake reached the idle workflow after the restart");

    const inc = await incidentAfter(
      db,
      id,
      deadline,
      deadline - Date.now() + RECONCILE_MS + SLACK_MS + 5_000,
      "incident after the recovery",
    );
    const delay = inc.created_at.getTime() - deadline;
    console.log(`detection after the recovery: ${delay} ms after the deadline (bound ${RECONCILE_MS + 1_000})`);
    assert.equal(inc.started_at.getTime(), deadline);
    assert.ok(delay <= RECONCILE_MS + 1_000, `detected ${delay} ms after the deadline`);
    assert.equal((await incidentsOf(db, id)).length, 2, "the first outage and this one");
  });
});

describe("down monitors have their (idle) workflow", () => {
  it("a monitor whose first heartbeat says down gets a running workflow that shows it down", async () => {
    const r = await hb("born-down", { status: "down", expectedIntervalMs: 60_000 });
    assert.equal(r.body.data.monitor.status, "down");
    const id = r.body.data.monitor.id;
    await waitFor(async () => (await wakesLeft(db)) === 0, 5_000, "outbox drained");
    const d = await waitFor(
      async () => {
        const x = await tc.client.workflow.getHandle(`monitor-${id}`).describe();
        return x.searchAttributes.VigilMonitorStatus?.[0] === "down" ? x : undefined;
      },
      10_000,
      "a running workflow that shows the monitor down",
    );
    assert.equal(d.status.name, "RUNNING");
  });
});

describe("Temporal unreachable: coalesced wakes", () => {
  it("a monitor created and then taken down while Temporal is down gets its (idle, down) workflow once it is back", async () => {
    await srv.stop();
    const first = await hb("created-then-down", { expectedIntervalMs: 60_000, gracePeriodMs: 0 });
    const id = first.body.data.monitor.id;
    const down = await hb("created-then-down", { status: "down" });
    assert.equal(down.body.data.monitor.status, "down");
    assert.equal(await wakesLeft(db), 1, "one outbox row per monitor: the down wake replaced the start");
    await restartServer();
    await waitFor(async () => (await wakesLeft(db)) === 0, RECONCILE_MS + 5_000, "outbox drained after restart");
    // The down monitor is watched like any other (the operators' "down monitors of project X" query finds it).
    const d = await waitFor(
      async () => {
        const x = await tc.client.workflow.getHandle(`monitor-${id}`).describe();
        return x.searchAttributes.VigilMonitorStatus?.[0] === "down" ? x : undefined;
      },
      10_000,
      "a running workflow that shows the monitor down",
    );
    assert.equal(d.status.name, "RUNNING");
  });
});

describe("Temporal server restart", () => {
  it("keeps the deadline scan's timer: a deadline after the restart is detected at the deadline by that timer", async () => {
    // 30 s ahead: the scan's worker may still be reconnecting after the previous test's server
    // restart (its polls back off), so its timer can take a while to appear (CI: over 10 s once).
    const r = await hb("timer-kept", { expectedIntervalMs: 30_000, gracePeriodMs: 0 });
    const id = r.body.data.monitor.id;
    const deadline = Date.parse(r.body.data.monitor.deadlineAt);
    const scanId = (await t.app.deps.temporal!.queues()).deadlines;
    const handle = tc.client.workflow.getHandle(scanId);
    // The scan sleeps until the next deadline, this one: its newest timer is due at it.
    const due = (e: Awaited<ReturnType<typeof historyOf>>[number]) => {
      const d = e.timerStartedEventAttributes?.startToFireTimeout;
      return eventTime(e) + Number(d?.seconds ?? 0) * 1000 + (d?.nanos ?? 0) / 1e6;
    };
    await waitFor(
      async () => {
        const timer = (await historyOf(tc.client, scanId)).filter((e) => e.eventType === EventType.TIMER_STARTED).pop();
        return timer !== undefined && Math.abs(due(timer) - deadline) < 500;
      },
      20_000,
      "the scan's timer set for the deadline",
    );
    const { runId } = await handle.describe();

    const { ms } = await restartServer();
    console.log(`restart ${ms} ms; ${deadline - Date.now()} ms left before the deadline`);
    assert.ok(Date.now() < deadline - 1_000, "the deadline falls after the restart");
    await waitFor(async () => (await wakesLeft(db)) === 0, 5_000, "no wake pending");

    const inc = await incidentAfter(
      db,
      id,
      deadline,
      deadline - Date.now() + 10_000,
      "incident after the server restart",
    );
    const delay = inc.created_at.getTime() - deadline;
    console.log(`detection after a server restart: ${delay} ms after the deadline`);
    assert.equal(inc.started_at.getTime(), deadline);
    // The reconciler acts only on deadlines missed by > 2 s: within 1 s, the kept timer did it.
    assert.ok(delay <= 1_000, `detected ${delay} ms after the deadline`);
    const events = await historyOf(tc.client, scanId, runId);
    assert.ok(
      events.some((e) => e.eventType === EventType.TIMER_FIRED && eventTime(e) >= deadline - 50),
      "the scan's timer fired",
    );
    assert.equal((await handle.describe()).runId, runId, "the same run");
  });
});
