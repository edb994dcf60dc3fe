import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { DeadlineScan, UptimeActivities } from "../../src/uptime/activities.js";
import { ScriptedCalls, startTimeSkipping, withWorker } from "../helpers/time-skipping.js";

// workflows/deadlines.ts (the deployment's deadline scan) on Temporal's time-skipping test server, its
// local activity replaced by a plain function recording each call with the server's time: how long
// it sleeps after a scan (deadline, gap, idle, a full batch) and how a wake cuts a sleep short. What
// needs Vigil and a real server (detection against real heartbeats, outages, restarts) stays in
// test/temporal/uptime-*.test.ts and edges-*.test.ts.
//
// The scan never ends, so each test terminates it, possibly mid-task: each gets a server of its own
// (the test server keeps time from skipping after a run terminated in the middle of a workflow task).

const MIN = 60_000;
const HOUR = 60 * MIN;
// A 10-minute gap, so that it passes as skipped time too: the gap is measured from the scan's
// workflow task, a little before the activity records its call.
const input = { gapMs: 10 * MIN, idleMs: HOUR };

/**
 * Runs the scan workflow with scripted answers (the last one repeated) until `n` scans were made,
 * letting the server skip time meanwhile (after `first`, when given, ran once the first scan was
 * made: time does not skip until then), then terminates it. The scans' times.
 */
async function scansOf(
  scans: DeadlineScan[],
  n: number,
  first?: (wake: () => Promise<void>) => Promise<void>,
): Promise<number[]> {
  const env = await startTimeSkipping();
  try {
    const scanned = new ScriptedCalls(env, scans);
    const activities: Pick<UptimeActivities, "scanDeadlines"> = { scanDeadlines: () => scanned.next() };
    await withWorker(env, activities, async (taskQueue) => {
      const h = await env.client.workflow.start("deadlineScanWorkflow", {
        taskQueue,
        workflowId: "vigil.deadlines",
        args: [input],
      });
      if (first) {
        await scanned.reached(1);
        await first(() => h.signal("wake"));
      }
      const done = scanned.reached(n);
      // result() never settles (the scan runs for ever) but lets the server skip time while awaited.
      const skipping = h.result().catch(() => undefined);
      await done;
      await h.terminate("test done");
      await skipping;
    });
    return scanned.times;
  } finally {
    await env.teardown();
  }
}

describe("deadlineScanWorkflow (time-skipping, fake activities)", () => {
  it("sleeps until the next deadline the scan read (30 min pass at once); no deadline pending: idleMs", async () => {
    const t = await scansOf(
      [
        { opened: 0, more: false, sleepMs: 30 * MIN },
        { opened: 1, more: false, sleepMs: null },
        { opened: 0, more: false, sleepMs: null },
      ],
      3,
    );
    const gap1 = t[1]! - t[0]!;
    const gap2 = t[2]! - t[1]!;
    assert.ok(gap1 >= 29 * MIN && gap1 < 31 * MIN, `slept ${gap1} ms for a deadline 30 min away`);
    assert.ok(gap2 >= 59 * MIN && gap2 < 61 * MIN, `slept ${gap2} ms with nothing pending, idleMs 1 h`);
  });

  it("a deadline already due (sleepMs 0) waits gapMs after the previous scan, not less", async () => {
    const t = await scansOf([{ opened: 3, more: false, sleepMs: 0 }], 3);
    for (let i = 1; i < t.length; i++) {
      const gap = t[i]! - t[i - 1]!;
      assert.ok(gap >= 9 * MIN && gap < 11 * MIN, `scan ${i}: ${gap} ms after the previous one, gapMs 10 min`);
    }
  });

  it("a full batch (more) scans again at once, below the gap", async () => {
    const t = await scansOf(
      [
        { opened: 500, more: true, sleepMs: 0 },
        { opened: 2, more: false, sleepMs: null },
      ],
      2,
    );
    assert.ok(t[1]! - t[0]! < MIN, `the rest of the batch waited ${t[1]! - t[0]!} ms`);
  });

  it("a wake cuts the idle hour short, but not below gapMs since the last scan", async () => {
    const t = await scansOf([{ opened: 0, more: false, sleepMs: null }], 2, (wake) => wake());
    const gap = t[1]! - t[0]!;
    assert.ok(gap >= 9 * MIN && gap < 11 * MIN, `woken scan ${gap} ms after the first: gapMs 10 min, idleMs 1 h`);
  });
});
