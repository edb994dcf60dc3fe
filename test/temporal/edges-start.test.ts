import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { freePort, startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { startTemporal, type TemporalServer } from "../helpers/temporal.js";
import {
  database,
  historyOf,
  incidentAfter,
  sleep,
  temporalClient,
  waitFor,
  wakesLeft,
  workerRunning,
} from "./edges-util.js";

// A node whose Temporal is unreachable when it starts (issue #14 point 8, live): a real process
// (ROLE=all) pointed at a port where no server listens yet. It must start, serve the API and say on
// /health that its worker is not running ("degraded", still 200); once the dev server comes up on
// that port the worker reaches "running", the wakes committed meanwhile reach Temporal, deadlines
// are detected by the workflows, and the SDK's metrics (temporal_*) appear on GET /metrics.

let srv: TemporalServer | undefined;
let node: Node;
let p: ProjectFixture;
let db: ReturnType<typeof database>;
let temporalPort: number;
let metricsPort: number;

before(async () => {
  temporalPort = await freePort();
  metricsPort = await freePort();
  const databaseUrl = await createTestDatabase();
  db = database(databaseUrl);
  node = await startNode({
    DATABASE_URL: databaseUrl,
    ROLE: "all",
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
    TEMPORAL_MIN_DEADLINE_MS: "100",
    TEMPORAL_RECONCILE_MS: "2000",
    METRICS_PORT: String(metricsPort),
  });
});

after(async () => {
  await node?.kill("SIGTERM");
  await db?.end();
  await srv?.stop();
});

const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

describe("Temporal unreachable at start", () => {
  it("the node starts and serves the API; /health says degraded; once the server is up the worker runs, detects deadlines, and SDK metrics appear", async () => {
    const h = await node.rest.get("/health");
    assert.equal(h.status, 200, h.text);
    assert.equal(h.body.status, "degraded");
    assert.ok(["connecting", "unavailable"].includes(h.body.temporalWorker), `temporalWorker ${h.body.temporalWorker}`);

    // The API serves: sign-up, project, key, and a heartbeat whose wake waits in the outbox.
    p = await project(node.rest);
    const early = await node.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/before-temporal`,
      { expectedIntervalMs: 60_000, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.equal(early.status, 200, early.text);
    const earlyId: string = early.body.data.monitor.id;
    assert.equal(await wakesLeft(db), 1);
    // A failed connection attempt shows as "unavailable" (between attempts; "connecting" during one).
    const h2 = await waitFor(
      async () => {
        const x = await node.rest.get("/health");
        return x.body?.temporalWorker === "unavailable" ? x : undefined;
      },
      30_000,
      "temporalWorker unavailable",
      100,
    );
    assert.equal(h2.status, 200);
    assert.equal(h2.body.status, "degraded");
    // The workers are a background task (docs/architecture.md "Background work"): the failed
    // connection is a failed pass, its message on /health.
    const failing = h2.body.background["temporal workers"];
    assert.ok(failing.failures >= 1 && typeof failing.lastError === "string", JSON.stringify(failing));
    assert.doesNotMatch(failing.lastError, /\n|    at /, "one line, no stack");
    await sleep(2_000); // a few more failed attempts
    assert.equal(node.child.exitCode, null, "the node is still running");
    assert.doesNotMatch(await metrics(), /^temporal_workflow_task/m, "no worker ran yet");

    const began = Date.now();
    srv = await startTemporal({ port: temporalPort });
    await workerRunning(node.rest, 45_000);
    console.log(`worker running ${Date.now() - began} ms after the server start began`);
    const h3 = await node.rest.get("/health");
    assert.deepEqual([h3.body.status, h3.body.temporalWorker], ["ok", "running"]);
    // And the connection that succeeded is a pass that ended after the last failed one.
    const running = h3.body.background["temporal workers"];
    assert.ok(running.runs > running.failures, JSON.stringify(running));
    assert.ok(Date.parse(running.lastRunAt) > Date.parse(running.lastErrorAt), JSON.stringify(running));

    // The wake committed while Temporal was unreachable started the monitor's workflow.
    const tc = await temporalClient(srv.address);
    try {
      await waitFor(async () => (await wakesLeft(db)) === 0, 10_000, "outbox drained");
      await waitFor(
        async () => (await historyOf(tc.client, `monitor-${earlyId}`)).length > 0,
        10_000,
        "workflow of the monitor created before Temporal",
      );
      assert.equal((await tc.client.workflow.getHandle(`monitor-${earlyId}`).describe()).status.name, "RUNNING");
    } finally {
      await tc.close();
    }

    // Deadlines are detected by the workflows (within 1 s; the reconciler acts only after 2 s).
    const r = await node.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/after-temporal`,
      { expectedIntervalMs: 1_500, gracePeriodMs: 0 },
      { key: p.key },
    );
    const deadline = Date.parse(r.body.data.monitor.deadlineAt);
    const inc = await incidentAfter(db, r.body.data.monitor.id, deadline, 10_000, "incident");
    console.log(`detection ${inc.created_at.getTime() - deadline} ms after the deadline`);
    assert.equal(inc.started_at.getTime(), deadline);
    assert.ok(inc.created_at.getTime() - deadline <= 1_000);

    const text = await waitFor(
      async () => {
        const t = await metrics();
        return /^temporal_workflow_task\w*/m.test(t) ? t : undefined;
      },
      10_000,
      "SDK metrics on /metrics",
    );
    const names = new Set([...text.matchAll(/^(temporal_\w+)/gm)].map((m) => m[1]));
    console.log(`${names.size} temporal_* metric names, e.g. ${[...names].slice(0, 6).join(", ")}`);
    assert.ok(names.size >= 5);
    assert.match(text, /^vigil_|^# HELP vigil_/m, "Vigil's own metrics are still there");
  });
});
