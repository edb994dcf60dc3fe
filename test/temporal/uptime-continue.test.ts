import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { GENEROUS_LIMITS, startTestApp, type TestApp } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { startTemporal, type TemporalServer } from "../helpers/temporal.js";
import { describeOrNone, ms, PRECISE_TIMERS, sleep, temporalClient, waitFor, workerRunning } from "./uptime-util.js";

// Live end-to-end: the deadline scan's continue-as-new chain misses no deadline. The server suggests
// continue-as-new after 60 history events, so with a steadily heartbeating 300 ms monitor (1.5 s
// grace: a heartbeat loop stalled for up to 1.7 s on a loaded machine still keeps it up; 700 ms was
// not enough twice, with another process using the CPU) the scan (woken for each next deadline)
// continues as new every several seconds; when the heartbeats stop, the current run (a continued
// one) detects the deadline exactly.

const GRACE_MS = 1_500;
let srv: TemporalServer;
let t: TestApp;
before(async () => {
  srv = await startTemporal({ dynamicConfig: { ...PRECISE_TIMERS, "limit.historyCount.suggestContinueAsNew": 60 } });
  t = await startTestApp({
    ...GENEROUS_LIMITS,
    TEMPORAL_ADDRESS: srv.address,
    TEMPORAL_MIN_DEADLINE_MS: "100",
    PG_POOL_SIZE: "10",
  });
  await workerRunning(t.rest);
});
after(async () => {
  await t?.close();
  await srv?.stop();
});

it("continue-as-new chains (suggested after 60 events) miss no deadline: startedAt = the deadline, detected within 1 s", async () => {
  const tc = await temporalClient(srv.address);
  try {
    const p = await project(t.rest);
    const beat = async () => {
      const r = await t.rest.post(
        `/v1/projects/${p.projectId}/heartbeats/chained`,
        { expectedIntervalMs: 300, gracePeriodMs: GRACE_MS },
        { key: p.key },
      );
      assert.equal(r.status, 200, r.text);
      assert.ok(!r.body.data.statusChanged || r.body.data.monitor.status === "up", "never down while heartbeating");
      return r.body.data.monitor as { id: string; lastHeartbeatAt: string; status: string };
    };
    let m = await beat();
    const wid = (await t.app.deps.temporal!.queues()).deadlines; // the scan's workflow id
    const first = await waitFor(() => describeOrNone(tc.client, wid), 5_000, "the first run");
    const runs = new Set([first.runId]);
    // Heartbeats every 100 ms (their own loop), until the chain has at least two runs (a continue-
    // as-new), 30 s at most.
    let beating = true;
    const beater = (async () => {
      while (beating) {
        await sleep(100);
        m = await beat();
      }
    })();
    const end = Date.now() + 30_000;
    while (runs.size < 2 && Date.now() < end) {
      await sleep(200);
      const d = await describeOrNone(tc.client, wid);
      if (d) runs.add(d.runId);
    }
    await sleep(500); // a few more heartbeats into the newest run
    beating = false;
    await beater;
    assert.ok(runs.size >= 2, `continued as new (${runs.size} runs seen)`);
    const deadline = ms(m.lastHeartbeatAt) + 300 + GRACE_MS; // interval + grace
    const inc = await waitFor(
      async () => {
        const l = (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${m.id}/incidents`, { key: p.key })).body
          .data;
        return l.length > 0 && l;
      },
      5_000,
      "the incident",
    );
    assert.equal(inc.length, 1, `no incident while heartbeating: ${JSON.stringify(inc)}`);
    assert.equal(inc[0].startedAt, new Date(deadline).toISOString(), "startedAt is the deadline");
    const delay = ms(inc[0].createdAt) - deadline;

    // The chain as visibility shows it: every run but the current one continued as new.
    const listed = await waitFor(
      async () => {
        const l: { runId: string; status: string }[] = [];
        for await (const w of tc.client.workflow.list({ query: `WorkflowId = "${wid}"` }))
          l.push({ runId: w.runId, status: w.status.name });
        return l.filter((x) => x.status === "CONTINUED_AS_NEW").length >= 1 && l;
      },
      10_000,
      "the continued runs in visibility",
      250,
    );
    console.log(
      `# continue-as-new: ${listed.length} runs (${listed.filter((x) => x.status === "CONTINUED_AS_NEW").length} continued as new), detection ${delay} ms after the deadline`,
    );
    assert.equal(listed.filter((x) => x.status === "RUNNING").length, 1, "one open run");
    assert.ok(delay >= 0 && delay < 1000, `detected within 1 s (${delay} ms)`);
  } finally {
    await tc.close();
  }
});
