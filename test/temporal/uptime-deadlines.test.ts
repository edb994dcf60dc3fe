import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Client } from "@temporalio/client";
import { GENEROUS_LIMITS, startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { startTemporal, type TemporalServer } from "../helpers/temporal.js";
import {
  describeOrNone,
  historyKinds,
  monitorWorkflowId,
  ms,
  pct,
  PRECISE_TIMERS,
  sleep,
  temporalClient,
  waitFor,
  workerRunning,
} from "./uptime-util.js";

// Live end-to-end: the uptime deadline workflows on a real `temporal server start-dev`, driven by the
// REST API over the real port, with real timers. The reconciler keeps its 30 s period, so every
// detection within 1 s below was made by a monitor's workflow, not by the safety net. The server runs
// with PRECISE_TIMERS (uptime-util.ts): with Temporal's default timer time shift, p99 is over 1 s.

let srv: TemporalServer;
let t: TestApp;
let tc: Awaited<ReturnType<typeof temporalClient>>;
let client: Client;

before(async () => {
  srv = await startTemporal({ dynamicConfig: PRECISE_TIMERS });
  t = await startTestApp({
    ...GENEROUS_LIMITS,
    TEMPORAL_ADDRESS: srv.address,
    TEMPORAL_MIN_DEADLINE_MS: "100",
    TEMPORAL_RECONCILE_MS: "30000",
    PG_POOL_SIZE: "10",
  });
  assert.ok(t.app.deps.temporal, "Temporal mode");
  await workerRunning(t.rest);
  tc = await temporalClient(srv.address);
  client = tc.client;
});
after(async () => {
  await t?.close();
  await tc?.close();
  await srv?.stop();
});

const hbPath = (p: ProjectFixture, slug: string) => `/v1/projects/${p.projectId}/heartbeats/${slug}`;
async function beat(
  p: ProjectFixture,
  slug: string,
  body: Record<string, unknown> = { expectedIntervalMs: 1000, gracePeriodMs: 0 },
) {
  const r = await t.rest.post(hbPath(p, slug), body, { key: p.key });
  assert.equal(r.status, 200, r.text);
  return r.body.data as { monitor: { id: string; status: string; lastHeartbeatAt: string }; statusChanged: boolean };
}
const incidents = async (p: ProjectFixture, id: string) =>
  (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/incidents`, { key: p.key })).body.data as any[];

describe("uptime deadlines on a live Temporal server", () => {
  it("deadline precision: 50 monitors (1 s, no grace): startedAt = lastHeartbeatAt + interval exactly, detected within 1 s", async () => {
    const p = await project(t.rest);
    const N = 50;
    const slugs = Array.from({ length: N }, (_, i) => `precise-${i}`);
    // Steady heartbeats first (8 rounds, 400 ms apart: past the burst of 50 workflow starts), then
    // silence: the last heartbeat fixes each deadline.
    const ROUNDS = 8;
    // The monitors are created with a 60 s interval (50 creations at once are slow on a small machine),
    // then switched to 1 s by the first round.
    await Promise.all(slugs.map((s) => beat(p, s, { expectedIntervalMs: 60_000, gracePeriodMs: 0 })));
    let last: Awaited<ReturnType<typeof beat>>[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = Date.now();
      last = await Promise.all(slugs.map((s) => beat(p, s)));
      for (const b of last)
        assert.ok(b.monitor.status === "up" && !b.statusChanged, "no monitor went down while heartbeating");
      if (round < ROUNDS - 1) await sleep(Math.max(0, 400 - (Date.now() - started)));
    }
    const ids = last.map((b) => b.monitor.id);
    const deadline = new Map(last.map((b) => [b.monitor.id, ms(b.monitor.lastHeartbeatAt) + 1000]));
    await waitFor(
      async () => {
        const r = await t.app.deps.db.query("SELECT count(*)::int AS n FROM incidents WHERE monitor_id = ANY($1)", [
          ids,
        ]);
        return r.rows[0].n === N;
      },
      10_000,
      "an incident for every monitor",
    ).catch(async (err) => {
      const r = await t.app.deps.db.query(
        "SELECT id, status, deadline_at FROM monitors WHERE id = ANY($1) AND NOT EXISTS (SELECT 1 FROM incidents i WHERE i.monitor_id = monitors.id)",
        [ids],
      );
      const m = r.rows[0];
      const kinds = m ? await historyKinds(client, monitorWorkflowId(m.id)).catch((e) => [String(e)]) : [];
      throw new Error(
        `${err.message}: ${r.rows.length} without one, e.g. ${JSON.stringify(m)} (deadline ${m && deadline.get(m.id)}), history ${kinds.join(" ")}`,
      );
    });

    const delays: number[] = [];
    for (const id of ids) {
      const inc = await incidents(p, id);
      assert.equal(inc.length, 1, `one incident for ${id}`);
      assert.equal(inc[0].startedAt, new Date(deadline.get(id)!).toISOString(), "startedAt is the deadline");
      delays.push(ms(inc[0].createdAt) - deadline.get(id)!);
    }
    const p50 = pct(delays, 50);
    const p99 = pct(delays, 99);
    console.log(
      `# deadline precision, ${N} monitors: detection delay p50 ${p50} ms, p99 ${p99} ms, max ${Math.max(...delays)} ms`,
    );
    assert.ok(Math.min(...delays) >= 0, "never before the deadline");
    assert.ok(Math.max(...delays) < 1000, `every detection within 1 s (max ${Math.max(...delays)} ms)`);

    // It was Temporal: every monitor has its workflow on the uptime queue, checked by local activities,
    // and its VigilMonitorStatus search attribute says down.
    const { uptime } = await t.app.deps.temporal!.queues();
    for (const id of ids) {
      const d = await describeOrNone(client, monitorWorkflowId(id));
      assert.ok(d, `workflow of ${id}`);
      assert.equal(d.status.name, "RUNNING");
      assert.equal(d.taskQueue, uptime);
      assert.ok(
        (await historyKinds(client, monitorWorkflowId(id))).includes("markerRecorded"),
        "checks ran as local activities",
      );
    }
    await waitFor(
      async () => {
        const d = await describeOrNone(client, monitorWorkflowId(ids[0]));
        return d?.typedSearchAttributes.getAll().some((a) => a.key.name === "VigilMonitorStatus" && a.value === "down");
      },
      5_000,
      "VigilMonitorStatus = down",
    );
  });

  it("steady heartbeats (every 300 ms on a 1 s monitor) send no signal to the workflow and open no incident", async () => {
    const p = await project(t.rest);
    const first = await beat(p, "steady");
    const id = first.monitor.id;
    const end = Date.now() + 4_000;
    let n = 1;
    while (Date.now() < end) {
      await sleep(300);
      assert.equal((await beat(p, "steady")).monitor.status, "up");
      n++;
    }
    const kinds = await historyKinds(client, monitorWorkflowId(id));
    const signals = kinds.filter((k) => k === "workflowExecutionSignaled").length;
    const timers = kinds.filter((k) => k === "timerFired").length;
    console.log(
      `# steady: ${n} heartbeats in 4 s → ${kinds.length} history events, ${signals} signal(s), ${timers} timers fired`,
    );
    assert.equal(kinds[0], "workflowExecutionStarted");
    assert.ok(signals <= 1, `only the signal-with-start of the first heartbeat (${signals} signals)`);
    assert.equal(timers, 0, "the monitor's workflow never woke: the deadline scan times its deadline");
    // The deadline scan's load does not grow with heartbeats: at most one scan per TEMPORAL_SCAN_GAP_MS.
    const { deadlines } = await t.app.deps.temporal!.queues();
    const scan = await describeOrNone(client, deadlines);
    assert.equal(scan?.status.name, "RUNNING", "the deadline scan runs");
    assert.deepEqual(await incidents(p, id), []);
    await t.rest.post(`/v1/projects/${p.projectId}/monitors/${id}/pause`, {}, { key: p.key });
  });

  it("recovery and a second outage: resolved at the recovery heartbeat, the second incident opens at the second deadline", async () => {
    const p = await project(t.rest);
    await beat(p, "flappy");
    await sleep(300);
    const b1 = await beat(p, "flappy");
    const id = b1.monitor.id;
    const d1 = ms(b1.monitor.lastHeartbeatAt) + 1000;
    const [i1] = await waitFor(
      async () => {
        const l = await incidents(p, id);
        return l.length === 1 && l;
      },
      5_000,
      "first incident",
    );
    assert.equal(i1.startedAt, new Date(d1).toISOString());
    assert.ok(ms(i1.createdAt) - d1 < 1000, `first detection ${ms(i1.createdAt) - d1} ms`);

    await sleep(500); // down a while, the workflow idle
    const rec = await beat(p, "flappy");
    assert.equal(rec.monitor.status, "up");
    assert.equal(rec.statusChanged, true);
    const r = ms(rec.monitor.lastHeartbeatAt);
    const resolved = (await incidents(p, id)).find((x) => x.id === i1.id);
    assert.equal(resolved.status, "resolved");
    assert.equal(resolved.endedAt, rec.monitor.lastHeartbeatAt, "resolved at the recovery heartbeat");
    assert.equal(resolved.durationMs, r - d1);

    // No further heartbeat: the recovered monitor's workflow (woken by the recovery) must catch deadline 2.
    const d2 = r + 1000;
    const list = await waitFor(
      async () => {
        const l = await incidents(p, id);
        return l.length === 2 && l;
      },
      5_000,
      "second incident",
    );
    const i2 = list.find((x) => x.id !== i1.id);
    assert.equal(i2.status, "open");
    assert.equal(i2.startedAt, new Date(d2).toISOString(), "second incident starts at the second deadline");
    const delay2 = ms(i2.createdAt) - d2;
    console.log(
      `# recovery: first detection ${ms(i1.createdAt) - d1} ms, second detection ${delay2} ms after their deadlines`,
    );
    assert.ok(delay2 >= 0 && delay2 < 1000, `second detection ${delay2} ms`);
  });

  it("operators' queries: VigilProjectId + VigilMonitorStatus + ExecutionStatus find exactly what the database says", async () => {
    const p = await project(t.rest);
    const other = await project(t.rest);
    const slow = { expectedIntervalMs: 60_000, gracePeriodMs: 0 };
    const fast = { expectedIntervalMs: 1000, gracePeriodMs: 0 };
    const id = async (fx: ProjectFixture, slug: string, body: Record<string, unknown>) =>
      (await beat(fx, slug, body)).monitor.id;
    const up = [await id(p, "up-a", slow), await id(p, "up-b", slow), await id(p, "up-c", slow)];
    const down = [await id(p, "down-a", fast), await id(p, "down-b", fast)];
    const pausedUp = await id(p, "paused-up", slow);
    const pausedDown = await id(p, "paused-down", fast);
    const otherDown = await id(other, "elsewhere-down", fast);
    const db = t.app.deps.db;
    await waitFor(
      async () => {
        const r = await db.query("SELECT count(*)::int AS n FROM monitors WHERE id = ANY($1) AND status = 'down'", [
          [...down, pausedDown, otherDown],
        ]);
        return r.rows[0].n === 4;
      },
      5_000,
      "the fast monitors down",
    );
    for (const m of [pausedUp, pausedDown])
      assert.equal(
        (await t.rest.post(`/v1/projects/${p.projectId}/monitors/${m}/pause`, {}, { key: p.key })).status,
        200,
      );

    const running = async (status: string) => {
      const found: string[] = [];
      const q = `VigilProjectId = "${p.projectId}" AND VigilMonitorStatus = "${status}" AND ExecutionStatus = "Running"`;
      for await (const w of client.workflow.list({ query: q })) found.push(w.workflowId);
      return found.sort();
    };
    const fromDb = async (status: string) =>
      (
        await db.query<{ id: string }>("SELECT id FROM monitors WHERE project_id = $1 AND status = $2", [
          p.projectId,
          status,
        ])
      ).rows
        .map((r) => monitorWorkflowId(r.id))
        .sort();
    const wantDown = await fromDb("down");
    const wantUp = await fromDb("up");
    assert.deepEqual(
      wantDown,
      down.map(monitorWorkflowId).sort(),
      "the database: the two unpaused fast monitors are down",
    );
    assert.deepEqual(wantUp, up.map(monitorWorkflowId).sort());
    // Visibility is eventually consistent: poll briefly until the lists agree.
    let got: { down: string[]; up: string[] } = { down: [], up: [] };
    await waitFor(
      async () => {
        got = { down: await running("down"), up: await running("up") };
        return (
          JSON.stringify(got.down) === JSON.stringify(wantDown) && JSON.stringify(got.up) === JSON.stringify(wantUp)
        );
      },
      10_000,
      "visibility to agree with the database",
      250,
    ).catch((err) => {
      throw new Error(
        `${err.message}: Temporal says down ${JSON.stringify(got.down)}, up ${JSON.stringify(got.up)}; database down ${JSON.stringify(wantDown)}, up ${JSON.stringify(wantUp)}`,
      );
    });
    // Paused monitors' workflows ended; the other project's down monitor is not in this project's list.
    for (const m of [pausedUp, pausedDown]) {
      const d = await waitFor(
        async () => {
          const x = await describeOrNone(client, monitorWorkflowId(m));
          return x && x.status.name !== "RUNNING" && x;
        },
        5_000,
        "paused monitor's workflow ended",
      );
      assert.equal(d.status.name, "COMPLETED");
    }
    assert.ok(!got.down.includes(monitorWorkflowId(otherDown)));
  });
});
