import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import pg from "pg";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { startTemporal, type TemporalServer } from "../helpers/temporal.js";
import { Receiver } from "../webhooks/receiver.js";
import { monitorWorkflowId, ms, pct, PRECISE_TIMERS, temporalClient, waitFor, workerRunning } from "./uptime-util.js";

// Live end-to-end: two worker nodes and one API node (real processes on one database) with Temporal
// as the deadline runner; 200 monitors, three outages each. Every outage must give exactly one
// incident (startedAt = its deadline), one incident_notifications row per kind, and one delivery per
// kind to a webhook watching incident.started and incident.recovered.

/** 200 by default (the figure); UPTIME_CLUSTER_MONITORS lowers it on a machine that cannot carry it. */
const N = Number(process.env.UPTIME_CLUSTER_MONITORS ?? 200);
const OUTAGES = 3;
let srv: TemporalServer;
let db: pg.Pool;
let receiver: Receiver;
const nodes: Node[] = [];

before(async () => {
  srv = await startTemporal({ dynamicConfig: PRECISE_TIMERS });
  receiver = await Receiver.start();
  const databaseUrl = await createTestDatabase();
  db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const env = {
    ...GENEROUS_LIMITS,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: srv.address,
    TEMPORAL_MIN_DEADLINE_MS: "100",
    WEBHOOK_ALLOW_PRIVATE: "true",
  };
  const started = await Promise.all([
    startNode({ ...env, ROLE: "worker" }),
    startNode({ ...env, ROLE: "worker" }),
    startNode({ ...env, ROLE: "api" }),
  ]);
  nodes.push(...started);
  await Promise.all(started.slice(0, 2).map((n) => workerRunning(n.rest)));
});
after(async () => {
  await Promise.all(nodes.map((n) => n.kill("SIGTERM")));
  await db?.end();
  await receiver?.close();
  await srv?.stop();
});

/** Runs fn over items with at most `limit` at once. */
async function pool<T, R>(items: T[], limit: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let i = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (i < items.length) {
        const k = i++;
        out[k] = await fn(items[k]);
      }
    }),
  );
  return out;
}

it(`two worker nodes and one API node: ${N} monitors, ${OUTAGES} outages each → one incident, one notification per kind and one delivery per kind per outage`, async () => {
  const api = nodes[2];
  const started = Date.now();
  const p: ProjectFixture = await project(api.rest);
  const hook = await api.rest.post(
    `/v1/projects/${p.projectId}/webhooks`,
    { url: receiver.on("/incidents", () => ({ status: 200 })), events: ["incident.started", "incident.recovered"] },
    { cookie: p.owner.cookie },
  );
  assert.equal(hook.status, 201, hook.text);
  const slugs = Array.from({ length: N }, (_, i) => `svc-${i}`);
  const beat = async (slug: string, expectedIntervalMs: number) => {
    const r = await api.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/${slug}`,
      { expectedIntervalMs, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.equal(r.status, 200, r.text);
    return r.body.data.monitor as { id: string; status: string; lastHeartbeatAt: string };
  };
  const deadlines = new Map<string, number[]>(); // monitor id → the deadline of each outage
  for (let k = 1; k <= OUTAGES; k++) {
    // Heartbeats (recovering the previous outage), then silence: outage k at lastHeartbeatAt + 1 s.
    const ms1 = await pool(slugs, 20, (s) => beat(s, 1000));
    for (const m of ms1) deadlines.set(m.id, [...(deadlines.get(m.id) ?? []), ms(m.lastHeartbeatAt) + 1000]);
    await waitFor(
      async () =>
        (await db.query("SELECT count(*)::int AS n FROM incidents WHERE project_id = $1", [p.projectId])).rows[0].n >=
        N * k,
      20_000,
      `outage ${k}: ${N} incidents`,
      100,
    ).catch(async (err) => {
      const st = await db.query(
        "SELECT status, count(*)::int AS n, min(deadline_at) AS first, max(deadline_at) AS last FROM monitors WHERE project_id = $1 GROUP BY status",
        [p.projectId],
      );
      const inc = await db.query("SELECT count(*)::int AS n FROM incidents WHERE project_id = $1", [p.projectId]);
      const wakes = await db.query("SELECT count(*)::int AS n, max(attempts) AS attempts FROM monitor_wakes");
      const stuck = (
        await db.query(
          "SELECT id, deadline_at, last_heartbeat_at FROM monitors WHERE project_id = $1 AND status = 'up' LIMIT 1",
          [p.projectId],
        )
      ).rows[0];
      let story = "";
      if (stuck) {
        const tc = await temporalClient(srv.address);
        const h = await tc.client.workflow.getHandle(monitorWorkflowId(stuck.id)).fetchHistory();
        const d = await tc.client.workflow.getHandle(monitorWorkflowId(stuck.id)).describe();
        story =
          `stuck ${JSON.stringify(stuck)} run ${d.runId} ${d.status.name}\n` +
          (h.events ?? [])
            .map((e) => {
              const k = Object.keys(e).find((x) => x.endsWith("EventAttributes") && (e as any)[x]) ?? "?";
              const at = new Date(
                Number(e.eventTime!.seconds) * 1000 + Math.round((e.eventTime!.nanos ?? 0) / 1e6),
              ).toISOString();
              const a = (e as any)[k];
              const extra = k.startsWith("timerStarted")
                ? JSON.stringify(a.startToFireTimeout)
                : k.startsWith("markerRecorded") && a.details?.result
                  ? Buffer.from(a.details.result.payloads[0].data).toString()
                  : "";
              return `${at} ${k.replace("EventAttributes", "")} ${extra}`;
            })
            .join("\n");
        await tc.close();
      }
      throw new Error(
        `${err.message}: ${story}\n${inc.rows[0].n} incidents; monitors ${JSON.stringify(st.rows)}; wakes ${JSON.stringify(wakes.rows)}; now ${new Date().toISOString()}\n${nodes.map((n) => n.stderr().slice(-1500)).join("\n---\n")}`,
      );
    });
  }
  // Recovered for good (a long interval: no fourth outage).
  await pool(slugs, 20, (s) => beat(s, 600_000));
  await waitFor(
    async () =>
      (
        await db.query("SELECT count(*)::int AS n FROM incidents WHERE project_id = $1 AND ended_at IS NULL", [
          p.projectId,
        ])
      ).rows[0].n === 0,
    10_000,
    "every incident resolved",
  );

  // Exactly one incident per outage, each starting at its outage's deadline.
  const inc = await db.query<{ id: string; monitor_id: string; started_at: Date; created_at: Date }>(
    "SELECT id, monitor_id, started_at, created_at FROM incidents WHERE project_id = $1 ORDER BY started_at",
    [p.projectId],
  );
  assert.equal(inc.rows.length, N * OUTAGES, "one incident per outage");
  const delays: number[] = [];
  const byMonitor = new Map<string, typeof inc.rows>();
  for (const r of inc.rows) byMonitor.set(r.monitor_id, [...(byMonitor.get(r.monitor_id) ?? []), r]);
  for (const [id, want] of deadlines) {
    const got = byMonitor.get(id) ?? [];
    assert.deepEqual(
      got.map((r) => r.started_at.getTime()),
      want,
      `incidents of ${id} start at their deadlines`,
    );
    for (const r of got) delays.push(r.created_at.getTime() - r.started_at.getTime());
  }
  // One notification record per incident and kind.
  const notes = await db.query<{ kind: string; n: number; incidents: number }>(
    "SELECT n.kind, count(*)::int AS n, count(DISTINCT incident_id)::int AS incidents FROM incident_notifications n JOIN incidents i ON i.id = n.incident_id WHERE i.project_id = $1 GROUP BY n.kind ORDER BY n.kind",
    [p.projectId],
  );
  assert.deepEqual(notes.rows, [
    { kind: "recovered", n: N * OUTAGES, incidents: N * OUTAGES },
    { kind: "started", n: N * OUTAGES, incidents: N * OUTAGES },
  ]);
  // One delivery per incident and kind, received once.
  const key = (r: { raw: string }) => {
    const b = JSON.parse(r.raw);
    return `${b.type}:${b.data.incident.id}`;
  };
  // 1,200 deliveries, the started ones in bursts of 200 (the deadline scan takes an outage's monitors
  // down together): Temporal mode drains ~30 deliveries/s on this machine (docs/benchmarks.md), so
  // this waits for throughput, not for correctness — the exactly-once checks follow.
  await waitFor(
    async () => new Set(receiver.at("/incidents").map(key)).size === 2 * N * OUTAGES,
    120_000,
    "every delivery received",
    200,
  ).catch(async (err) => {
    const del = await db.query(
      "SELECT status, attempt_count, (next_attempt_at IS NULL) AS handed, count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1 GROUP BY 1, 2, 3",
      [p.projectId],
    );
    throw new Error(
      `${err.message}: received ${new Set(receiver.at("/incidents").map(key)).size} distinct of ${2 * N * OUTAGES}; deliveries ${JSON.stringify(del.rows)}; outbox ${JSON.stringify((await db.query("SELECT count(*)::int AS n FROM webhook_outbox")).rows)}`,
    );
  });
  const doneAt = Date.now();
  await new Promise((r) => setTimeout(r, 1500)); // a duplicate would arrive now
  const received = receiver.at("/incidents").map(key);
  const counts = new Map<string, number>();
  for (const k of received) counts.set(k, (counts.get(k) ?? 0) + 1);
  const dup = [...counts].filter(([, n]) => n > 1);
  assert.deepEqual(dup, [], "no delivery received twice");
  assert.equal(received.length, 2 * N * OUTAGES);
  for (const r of inc.rows)
    assert.ok(
      counts.has(`incident.started:${r.id}`) && counts.has(`incident.recovered:${r.id}`),
      `deliveries of ${r.id}`,
    );
  // Each received delivery is recorded succeeded (its local activity records after the send: poll).
  const statuses = async () =>
    (
      await db.query<{ status: string; n: number }>(
        "SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1 GROUP BY status",
        [p.projectId],
      )
    ).rows;
  await waitFor(
    async () => JSON.stringify(await statuses()) === JSON.stringify([{ status: "succeeded", n: 2 * N * OUTAGES }]),
    15_000,
    "every delivery recorded succeeded",
    250,
  ).catch(async (err) => {
    throw new Error(`${err.message}: ${JSON.stringify(await statuses())}`);
  });
  console.log(
    `# cluster: ${N} monitors × ${OUTAGES} outages on 2 worker nodes + 1 API node: detection delay p50 ${pct(delays, 50)} ms, p99 ${pct(delays, 99)} ms, max ${Math.max(...delays)} ms; ` +
      `${received.length} deliveries; all received ${Math.round((doneAt - started) / 1000)} s after the start`,
  );
  for (const n of nodes) assert.doesNotMatch(n.stderr(), /"level":(50|60)/, "no error logged by a node");
});
