import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { startTemporal, type TemporalServer } from "../helpers/temporal.js";
import {
  database,
  EventType,
  historyOf,
  incidentAfter,
  incidentsOf,
  sleep,
  temporalClient,
  waitFor,
  workerRunning,
} from "./edges-util.js";

// Worker nodes that die mid-timer (issue #14, live suite: "SIGTERM and kill -9 of a worker
// mid-timer lose nothing"). Real processes (ROLE=worker) run the Temporal workers; an API node
// (ROLE=api, no worker) takes the heartbeats. A monitor is armed with its deadline ~3 s ahead, the
// worker node whose workflow task started its timer (the history's identity `<pid>@<host>`) is
// stopped with SIGTERM or killed with SIGKILL, and the deadline must still open exactly one
// incident, starting at the deadline.

const RECONCILE_MS = 2_000;
const SLACK_MS = 2_000; // RECONCILE_SLACK_MS of src/uptime/temporal-runner.ts

let srv: TemporalServer;
let api: TestApp;
let p: ProjectFixture;
let db: ReturnType<typeof database>;
let tc: Awaited<ReturnType<typeof temporalClient>>;
let databaseUrl: string;
const nodes = new Set<Node>();

const workerEnv = () => ({
  DATABASE_URL: databaseUrl,
  ROLE: "worker",
  TEMPORAL_ADDRESS: srv.address,
  TEMPORAL_MIN_DEADLINE_MS: "100",
  TEMPORAL_RECONCILE_MS: String(RECONCILE_MS),
  TEMPORAL_SHUTDOWN_GRACE_MS: "2000",
});

async function worker(): Promise<Node> {
  const n = await startNode(workerEnv());
  nodes.add(n);
  await workerRunning(n.rest);
  return n;
}

before(async () => {
  srv = await startTemporal();
  databaseUrl = await createTestDatabase();
  api = await startTestApp(
    {
      ROLE: "api",
      TEMPORAL_ADDRESS: srv.address,
      TEMPORAL_MIN_DEADLINE_MS: "100",
      TEMPORAL_RECONCILE_MS: String(RECONCILE_MS),
    },
    { databaseUrl },
  );
  db = database(databaseUrl);
  tc = await temporalClient(srv.address);
  p = await project(api.rest);
});

after(async () => {
  for (const n of nodes) await n.kill("SIGKILL").catch(() => undefined);
  await api?.close();
  await tc?.close().catch(() => undefined);
  await db?.end();
  await srv?.stop();
});

/** Arms a monitor (deadline `intervalMs` ahead) and returns it with the node whose worker started its timer. */
async function armed(
  slug: string,
  intervalMs: number,
  among: Node[],
): Promise<{ id: string; deadline: number; holder: Node }> {
  const r = await api.rest.post(
    `/v1/projects/${p.projectId}/heartbeats/${slug}`,
    { expectedIntervalMs: intervalMs, gracePeriodMs: 0 },
    { key: p.key },
  );
  assert.equal(r.status, 200, r.text);
  const id: string = r.body.data.monitor.id;
  const events = await waitFor(
    async () => {
      const h = await historyOf(tc.client, `monitor-${id}`);
      return h.some((e) => e.eventType === EventType.TIMER_STARTED) ? h : undefined;
    },
    10_000,
    `${slug}: timer started`,
  );
  const identity =
    events.filter((e) => e.eventType === EventType.WFT_STARTED).at(-1)?.workflowTaskStartedEventAttributes?.identity ??
    "";
  const holder = among.find((n) => identity.startsWith(`${n.child.pid}@`));
  assert.ok(holder, `the timer was started by one of the worker nodes (identity ${identity})`);
  return { id, deadline: Date.parse(r.body.data.monitor.deadlineAt), holder };
}

/** The deadline opens one incident at the deadline; returns the detection delay (ms). */
async function detectedOnce(id: string, deadline: number, boundMs: number): Promise<number> {
  const inc = await incidentAfter(db, id, deadline, deadline - Date.now() + boundMs + 10_000, "incident");
  const delay = inc.created_at.getTime() - deadline;
  assert.equal(inc.started_at.getTime(), deadline, "the incident starts at the deadline");
  await sleep(RECONCILE_MS + SLACK_MS + 500); // every other path (workflow, reconcilers) had its chance
  assert.equal((await incidentsOf(db, id)).length, 1, "exactly one incident");
  return delay;
}

describe("a worker node dies mid-timer", () => {
  it("SIGTERM: the other worker node detects the deadline, one incident", async () => {
    const a = await worker();
    const b = await worker();
    const m = await armed("sigterm", 3_000, [a, b]);
    await sleep(500);
    const code = await m.holder.kill("SIGTERM");
    nodes.delete(m.holder);
    assert.ok(Date.now() < m.deadline - 500, "stopped before the deadline");
    console.log(`SIGTERM: holder exited with ${code}, ${m.deadline - Date.now()} ms before the deadline`);
    const delay = await detectedOnce(m.id, m.deadline, 1_000);
    console.log(`SIGTERM of the timer's worker: detected ${delay} ms after the deadline`);
    assert.ok(delay <= 1_000, `detected ${delay} ms after the deadline (graceful shutdown releases the sticky queue)`);
  });

  it("kill -9: the other worker node detects the deadline within the reconcile period + slack + 1 s, one incident", async () => {
    const others = [...nodes];
    while (others.length < 2) others.push(await worker());
    const m = await armed("sigkill", 3_000, others);
    await sleep(500);
    await m.holder.kill("SIGKILL");
    nodes.delete(m.holder);
    assert.ok(Date.now() < m.deadline - 500, "killed before the deadline");
    const delay = await detectedOnce(m.id, m.deadline, RECONCILE_MS + SLACK_MS + 1_000);
    console.log(
      `kill -9 of the timer's worker: detected ${delay} ms after the deadline (bound ${RECONCILE_MS + SLACK_MS + 1_000})`,
    );
    assert.ok(delay <= RECONCILE_MS + SLACK_MS + 1_000, `detected ${delay} ms after the deadline`);
  });

  it("kill -9 of the only worker node, restarted after the deadline: detected within seconds of the restart, one incident", async () => {
    for (const n of [...nodes]) {
      await n.kill("SIGTERM");
      nodes.delete(n);
    }
    const only = await worker();
    const m = await armed("sigkill-alone", 3_000, [only]);
    await sleep(500);
    await only.kill("SIGKILL");
    nodes.delete(only);
    await sleep(Math.max(0, m.deadline - Date.now()) + 1_000); // the deadline passes with no worker at all
    assert.equal((await incidentsOf(db, m.id)).length, 0, "nobody detected it while no worker ran");
    const restarted = Date.now();
    const again = await startNode(workerEnv());
    nodes.add(again);
    const up = Date.now() - restarted;
    const inc = await incidentAfter(
      db,
      m.id,
      m.deadline,
      RECONCILE_MS + SLACK_MS + 15_000,
      "incident after the restart",
    );
    const sinceStart = inc.created_at.getTime() - restarted;
    console.log(
      `kill -9 of the only worker: node restarted in ${up} ms (process start to /health), incident ${sinceStart} ms after the restart began`,
    );
    assert.equal(inc.started_at.getTime(), m.deadline, "the incident starts at the deadline");
    assert.ok(
      inc.created_at.getTime() - (restarted + up) <= RECONCILE_MS + 1_000,
      "detected within the reconcile period + 1 s of the node serving",
    );
    await sleep(RECONCILE_MS + SLACK_MS + 500);
    assert.equal((await incidentsOf(db, m.id)).length, 1, "exactly one incident");
    // The workflow is watching again (down, idle) on the restarted node.
    await workerRunning(again.rest);
    await waitFor(
      async () =>
        (await tc.client.workflow.getHandle(`monitor-${m.id}`).describe()).searchAttributes.VigilMonitorStatus?.[0] ===
        "down",
      20_000,
      "workflow sees the monitor down",
    );
  });
});
