import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { healthCheck, healthClient, type HealthClient, type HealthStatus } from "../helpers/grpc-health.js";
import type { ProjectFixture } from "../helpers/fixtures.js";
import type { TemporalServer } from "../helpers/temporal.js";
import { type EdgeSuite, incidentAfter, startEdgeSuite, stopEdgeSuite, waitFor } from "./edges-util.js";

// A Temporal outage on /health and grpc.health.v1 (issue #29 point 4, live): the SDK's worker does not
// fail when its server goes (Core retries the polls for ever), so before the probe /health stayed
// {"status":"ok","temporalWorker":"running"} and UptimeService SERVING through a whole outage. A dev
// server of this file's own is stopped and started again on the same port; a worker node (ROLE=all)
// and an API node (ROLE=api) on the same database must both show the outage within seconds
// (TEMPORAL_PROBE_MS=200 here) and clear it once the server answers again.

const PROBE_MS = 200;
/** How long the outage may take to show or to clear: a probe period, a refused call, and slack for 2 busy cores. */
const VISIBLE_WITHIN_MS = 10_000;

let srv: TemporalServer;
let t: TestApp;
let api: TestApp;
let p: ProjectFixture;
let db: EdgeSuite["db"];
let tc: EdgeSuite["tc"];
let grpcAll: HealthClient;
let grpcApi: HealthClient;

before(async () => {
  ({ srv, t, p, db, tc } = await startEdgeSuite(2_000, { TEMPORAL_PROBE_MS: String(PROBE_MS) }));
  api = await startTestApp(
    { ROLE: "api", TEMPORAL_ADDRESS: srv.address, TEMPORAL_PROBE_MS: String(PROBE_MS) },
    { databaseUrl: t.databaseUrl },
  );
  grpcAll = healthClient(t.port);
  grpcApi = healthClient(api.port);
});
after(async () => {
  grpcAll?.close();
  grpcApi?.close();
  await api?.close();
  await stopEdgeSuite({ srv, t, db, tc });
});

const health = async (node: TestApp) => {
  const h = await node.rest.get("/health");
  assert.equal(h.status, 200, h.text); // the API serves throughout: the database is there
  // The Temporal fields (each task of `background` is the subject of test/operations/background.test.ts).
  const { status, temporalWorker, temporalServer } = h.body as Record<string, string>;
  return { status, temporalWorker, temporalServer };
};

/** Check of "", a service that does not need Temporal, and the two whose work runs on it. */
const statuses = async (c: HealthClient) => {
  const names = ["", "vigil.v1.EventService", "vigil.v1.UptimeService", "vigil.v1.WebhookService"];
  const out: Record<string, HealthStatus> = {};
  for (const n of names) out[n] = await healthCheck(c, n);
  return out;
};
const SERVING = (temporalOk: boolean): Record<string, HealthStatus> => ({
  "": "SERVING",
  "vigil.v1.EventService": "SERVING",
  "vigil.v1.UptimeService": temporalOk ? "SERVING" : "NOT_SERVING",
  "vigil.v1.WebhookService": temporalOk ? "SERVING" : "NOT_SERVING",
});

describe("Temporal server stopped, then started again", () => {
  it("/health turns degraded (temporalServer unreachable) and Uptime/WebhookService NOT_SERVING within seconds on worker and API nodes, and both clear once the server is back", async () => {
    // Before: all answers ok (the fields are checked in full once the server is back).
    assert.equal((await health(t)).status, "ok");
    assert.equal((await health(api)).status, "ok");
    assert.deepEqual(await statuses(grpcAll), SERVING(true));

    await srv.stop();
    const stopped = Date.now();
    await waitFor(async () => (await health(t)).status === "degraded", VISIBLE_WITHIN_MS, "worker node degraded");
    console.log(`outage visible on the worker node ${Date.now() - stopped} ms after the server stopped`);
    assert.deepEqual(await health(t), {
      status: "degraded",
      temporalWorker: "unavailable",
      temporalServer: "unreachable",
    });
    await waitFor(async () => (await health(api)).status === "degraded", VISIBLE_WITHIN_MS, "API node degraded");
    assert.deepEqual(await health(api), { status: "degraded", temporalWorker: "off", temporalServer: "unreachable" });
    // "" stays SERVING (the API serves; restarting the node would not bring Temporal back).
    assert.deepEqual(await statuses(grpcAll), SERVING(false));
    assert.deepEqual(await statuses(grpcApi), SERVING(false));
    // It stays so while the server is away (not one failed probe that clears by itself).
    await new Promise((r) => setTimeout(r, 5 * PROBE_MS));
    assert.equal((await health(t)).temporalServer, "unreachable");
    const hb = await api.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/during-outage`,
      { expectedIntervalMs: 1_000, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.equal(hb.status, 200, hb.text); // the API serves without Temporal

    await srv.restart(); // the same port and database file
    const back = Date.now();
    await waitFor(
      async () => {
        const [a, b] = [await health(t), await health(api)];
        return a.status === "ok" && b.status === "ok";
      },
      VISIBLE_WITHIN_MS,
      "both nodes ok again",
    );
    console.log(`recovery visible ${Date.now() - back} ms after the server answered again`);
    assert.deepEqual(await health(t), { status: "ok", temporalWorker: "running", temporalServer: "reachable" });
    assert.deepEqual(await health(api), { status: "ok", temporalWorker: "off", temporalServer: "reachable" });
    assert.deepEqual(await statuses(grpcAll), SERVING(true));
    assert.deepEqual(await statuses(grpcApi), SERVING(true));

    // And "running" is true: a deadline after the recovery is detected.
    const r = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/after-outage`,
      { expectedIntervalMs: 1_000, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.equal(r.status, 200, r.text);
    const deadline = Date.parse(r.body.data.monitor.deadlineAt);
    const inc = await incidentAfter(db, r.body.data.monitor.id, deadline, 15_000, "incident after the recovery");
    assert.equal(inc.started_at.getTime(), deadline);
  });
});
