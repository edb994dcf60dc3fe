import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { MonitorCheck, UptimeActivities } from "../../src/uptime/activities.js";
import { ScriptedCalls, useTimeSkipping, withWorker } from "../helpers/time-skipping.js";

// workflows/uptime.ts (a monitor's workflow) on Temporal's time-skipping test server, its local
// activity replaced by a plain function recording each call with the server's time: the idle wait
// (an hour passes at once), wakes, and how a run ends (the deadline scan: deadlines.test.ts). What needs Vigil and a real server (detection against real heartbeats,
// outages, restarts, clusters) stays in test/temporal/uptime-*.test.ts and edges-*.test.ts.

const HOUR = 3_600_000;

const env = useTimeSkipping();

/** checkMonitor answering from a script (its last answer repeated); each call's time recorded. */
function fakeChecks(checks: MonitorCheck[]) {
  const checked = new ScriptedCalls(env, checks);
  const activities: Pick<UptimeActivities, "checkMonitor"> = { checkMonitor: () => checked.next() };
  return { activities, checked };
}

/** Runs a monitor's workflow to its end on those activities. */
const runToEnd = (f: ReturnType<typeof fakeChecks>, workflowId: string) =>
  withWorker(env, f.activities, (taskQueue) =>
    env.client.workflow.execute("monitorDeadlineWorkflow", {
      taskQueue,
      workflowId,
      args: [{ monitorId: "m1", idleCheckMs: HOUR }],
    }),
  );

const up: MonitorCheck = { status: "up", slug: "api", stop: false, sleepMs: null };
const paused: MonitorCheck = { status: "paused", slug: "api", stop: true, sleepMs: null };

describe("monitorDeadlineWorkflow (time-skipping, fake activities)", () => {
  it("a check that says stop (paused or deleted) ends the run after that one check", async () => {
    const f = fakeChecks([paused]);
    await runToEnd(f, "monitor-stop");
    assert.equal(f.checked.times.length, 1);
  });

  it("an unchanged monitor is re-checked once per idleCheckMs (hours pass at once), not before", async () => {
    const f = fakeChecks([up, up, up, paused]);
    await runToEnd(f, "monitor-idle");
    assert.equal(f.checked.times.length, 4);
    for (let i = 1; i < f.checked.times.length; i++) {
      const gap = f.checked.times[i]! - f.checked.times[i - 1]!;
      assert.ok(gap >= HOUR && gap < 2 * HOUR, `check ${i}: ${gap} ms after the previous one, idleCheckMs 1 h`);
    }
  });

  it("a wake re-checks at once, without waiting out the idle hour", async () => {
    const f = fakeChecks([up, paused]);
    await withWorker(env, f.activities, async (taskQueue) => {
      const h = await env.client.workflow.start("monitorDeadlineWorkflow", {
        taskQueue,
        workflowId: "monitor-wake",
        args: [{ monitorId: "m1", idleCheckMs: HOUR }],
      });
      await f.checked.reached(1); // time does not skip until result() is awaited
      await h.signal("wake");
      await h.result();
    });
    assert.equal(f.checked.times.length, 2);
    assert.ok(f.checked.times[1]! - f.checked.times[0]! < HOUR, "the wake's check did not wait the idle hour");
  });
});
