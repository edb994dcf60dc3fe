import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import { GENEROUS_LIMITS, startTestApp, type TestApp } from "../helpers/app.js";
import { errorBody, project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// Idempotent heartbeats (decisions.md "Idempotent ingestion"): a heartbeat whose client `id` is stored
// already in the project records nothing (no heartbeat row, no rollup, no deadline moved, no status
// change, no incident) and is answered with the same status, the monitor as it is now and
// statusChanged false. The steady fast path and the locked path, concurrency, REST and gRPC.

const { t, p } = useProject(GENEROUS_LIMITS);

const beat = (slug: string, body: object, key = p.key) =>
  t.rest.post(`/v1/projects/self/heartbeats/${slug}`, body, { key });
async function ok(slug: string, body: object, key = p.key) {
  const r = await beat(slug, body, key);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}
/** Raw heartbeats and the rollups' total of a monitor. */
async function recorded(monitorId: string) {
  const q = (sql: string) => t.app.deps.db.query(sql, [monitorId]).then((r) => r.rows[0].n as number);
  return {
    heartbeats: await q("SELECT count(*)::int AS n FROM heartbeats WHERE monitor_id = $1"),
    rolled: await q("SELECT coalesce(sum(total), 0)::int AS n FROM heartbeat_rollups WHERE monitor_id = $1"),
  };
}
const incidents = async (monitorId: string) =>
  (await t.rest.get(`/v1/projects/self/monitors/${monitorId}/incidents`, { key: p.key })).body.data.length;

describe("idempotent heartbeats", () => {
  it("records a repeated id once; the repeat answers the monitor as it is, statusChanged false", async () => {
    const id = randomUUID();
    const first = await ok("idem-new", { id, latencyMs: 5, expectedIntervalMs: 60_000 });
    assert.equal(first.statusChanged, true, "a new monitor");
    await new Promise((r) => setTimeout(r, 20));
    const again = await ok("idem-new", { id, latencyMs: 5, expectedIntervalMs: 60_000 });
    assert.equal(again.accepted, true);
    assert.equal(again.statusChanged, false);
    assert.equal(again.monitor.id, first.monitor.id);
    assert.equal(again.monitor.lastHeartbeatAt, first.monitor.lastHeartbeatAt, "nothing recorded");
    assert.equal(again.monitor.deadlineAt, first.monitor.deadlineAt, "no deadline moved");
    assert.deepEqual(await recorded(first.monitor.id), { heartbeats: 1, rolled: 1 });
    // Upper case is the same id.
    await ok("idem-new", { id: id.toUpperCase() });
    assert.deepEqual(await recorded(first.monitor.id), { heartbeats: 1, rolled: 1 });
  });

  it("a steady monitor (the one-statement path) records a new id and skips its repeat", async () => {
    const warm = await ok("idem-steady", { expectedIntervalMs: 60_000 });
    await ok("idem-steady", {});
    const id = randomUUID();
    await new Promise((r) => setTimeout(r, 20));
    // The statements the pool runs outside transactions: the fast path's compare-and-set is one.
    const pool = t.app.deps.db;
    const names: string[] = [];
    const query = pool.query;
    pool.query = ((...args: Parameters<typeof query>) => {
      const q = args[0] as { name?: string };
      if (typeof q === "object" && q?.name) names.push(q.name);
      return (query as (...a: unknown[]) => unknown).apply(pool, args);
    }) as typeof query;
    let first;
    try {
      first = await ok("idem-steady", { id, latencyMs: 7 });
    } finally {
      pool.query = query;
    }
    assert.ok(names.includes("uptime_heartbeats_cas_claims"), `the fast path claimed the id: ${names}`);
    assert.deepEqual(await recorded(warm.monitor.id), { heartbeats: 3, rolled: 3 });
    await new Promise((r) => setTimeout(r, 20));
    const again = await ok("idem-steady", { id, latencyMs: 7 });
    assert.equal(again.monitor.lastHeartbeatAt, first.monitor.lastHeartbeatAt);
    assert.equal(again.monitor.deadlineAt, first.monitor.deadlineAt);
    assert.deepEqual(await recorded(warm.monitor.id), { heartbeats: 3, rolled: 3 });
    // Steady heartbeats without an id still count each.
    await ok("idem-steady", {});
    assert.deepEqual(await recorded(warm.monitor.id), { heartbeats: 4, rolled: 4 });
  });

  it("a retried down heartbeat opens no second incident and never flips a recovered monitor back", async () => {
    const up = await ok("idem-down", { expectedIntervalMs: 60_000 });
    const id = randomUUID();
    const down = await ok("idem-down", { id, status: "down" });
    assert.equal(down.statusChanged, true);
    assert.equal(await incidents(up.monitor.id), 1);
    const retry = await ok("idem-down", { id, status: "down" });
    assert.equal(retry.statusChanged, false);
    assert.equal(retry.monitor.status, "down");
    await ok("idem-down", { status: "up" });
    const late = await ok("idem-down", { id, status: "down" }); // a retry arriving after the recovery
    assert.equal(late.statusChanged, false);
    assert.equal(late.monitor.status, "up");
    assert.equal(await incidents(up.monitor.id), 1);
    assert.deepEqual(await recorded(up.monitor.id), { heartbeats: 3, rolled: 3 });
  });

  it("20 concurrent heartbeats with one id record one; one answer says the status changed", async () => {
    const id = randomUUID();
    const answers = await Promise.all(Array.from({ length: 20 }, () => ok("idem-race", { id })));
    assert.equal(new Set(answers.map((a) => a.monitor.id)).size, 1);
    assert.equal(answers.filter((a) => a.statusChanged).length, 1);
    assert.deepEqual(await recorded(answers[0].monitor.id), { heartbeats: 1, rolled: 1 });
    // And 20 concurrent different ids on one monitor record 20.
    await Promise.all(Array.from({ length: 20 }, () => ok("idem-race", { id: randomUUID() })));
    assert.deepEqual(await recorded(answers[0].monitor.id), { heartbeats: 21, rolled: 21 });
  });

  it("keeps ids apart per project and per kind", async () => {
    const other = await project(t.rest);
    const id = randomUUID();
    const mine = await ok("idem-tenant", { id });
    const theirs = await ok("idem-tenant", { id }, other.key);
    assert.notEqual(theirs.monitor.id, mine.monitor.id);
    assert.equal(theirs.statusChanged, true);
    assert.deepEqual(await recorded(theirs.monitor.id), { heartbeats: 1, rolled: 1 });
    const ev = await t.rest.post("/v1/events", { id, type: "idem.hb" }, { key: p.key });
    assert.equal(ev.status, 202, ev.text);
    const kinds = await t.app.deps.db.query("SELECT kind FROM ingest_ids WHERE project_id = $1 AND client_id = $2", [
      p.projectId,
      id,
    ]);
    assert.deepEqual(kinds.rows.map((r) => r.kind).sort(), ["event", "heartbeat"]);
  });

  it("answers 404 for a repeat whose monitor was deleted since, and creates nothing", async () => {
    const id = randomUUID();
    const first = await ok("idem-gone", { id });
    const d = await t.rest.del(`/v1/projects/self/monitors/${first.monitor.id}`, { key: p.key });
    assert.ok(d.status === 204 || d.status === 200, d.text);
    const r = await beat("idem-gone", { id });
    assert.equal(r.status, 404, r.text);
    assert.equal(errorBody(r).code, "not_found");
    const n = await t.app.deps.db.query("SELECT count(*)::int AS n FROM monitors WHERE project_id = $1 AND slug = $2", [
      p.projectId,
      "idem-gone",
    ]);
    assert.equal(n.rows[0].n, 0);
  });

  it("refuses an id that is not a UUID: 400 naming id (REST), InvalidArgument (gRPC)", async () => {
    for (const id of ["", "x", `${randomUUID()} `, "__proto__", "\u0000", "9".repeat(50_000)]) {
      const r = await beat("idem-bad", { id });
      assert.equal(r.status, 400, r.text.slice(0, 200));
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.equal((e.details as { field: string }[])[0].field, "id", r.text.slice(0, 200));
    }
    for (const id of [1, null, { a: 1 }]) {
      const r = await beat("idem-bad", { id });
      assert.ok(r.status === 400 || (id === null && r.status === 200), `${JSON.stringify(id)}: ${r.text}`);
    }
    const c = createClient(UptimeService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${p.key}` };
    const id = randomUUID();
    const one = await c.sendHeartbeat({ projectId: "self", monitorSlug: "idem-grpc", id }, { headers });
    const two = await c.sendHeartbeat({ projectId: "self", monitorSlug: "idem-grpc", id }, { headers });
    assert.equal(two.data?.monitor?.id, one.data?.monitor?.id);
    assert.equal(two.data?.statusChanged, false);
    assert.deepEqual(await recorded(one.data!.monitor!.id), { heartbeats: 1, rolled: 1 });
    await assert.rejects(
      c.sendHeartbeat({ projectId: "self", monitorSlug: "idem-grpc", id: "nope" }, { headers }),
      (e: unknown) =>
        e instanceof ConnectError && e.code === Code.InvalidArgument && /id must be a UUID/.test(e.message),
    );
  });
});

describe("idempotent heartbeats on two nodes", () => {
  let other: TestApp | undefined;
  after(() => other?.close());

  it("concurrent repeats alternating between two nodes of one database record one heartbeat", async () => {
    other = await startTestApp(GENEROUS_LIMITS, { databaseUrl: t.databaseUrl });
    const nodes = [t, other];
    await ok("idem-nodes", { expectedIntervalMs: 60_000 }); // steady: both nodes may take their fast path
    for (let round = 0; round < 5; round++) {
      const id = randomUUID();
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          nodes[i % 2].rest.post("/v1/projects/self/heartbeats/idem-nodes", { id, latencyMs: i }, { key: p.key }),
        ),
      );
      for (const r of answers) assert.equal(r.status, 200, r.text);
    }
    const monitor = (await ok("idem-nodes", {})).monitor.id;
    assert.deepEqual(await recorded(monitor), { heartbeats: 7, rolled: 7 });
  });
});
