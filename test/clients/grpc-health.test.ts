// grpc.health.v1.Health as Kubernetes probes, load balancers and grpc-health-probe use it, through
// @grpc/grpc-js with the vendored proto loaded by @grpc/proto-loader (test/helpers/grpc-health.ts;
// nothing of connect-es on the client side): Check, List and Watch, no credentials, reflecting the node's real readiness (the
// database reachable, the migrations applied, the Temporal worker) and its shutdown.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import pg from "pg";
import { freePort } from "../../src/shared/net.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { adminUrl } from "../helpers/db.js";
import {
  healthCheck as check,
  healthClient as connect,
  type HealthClient as Client,
  type HealthStatus as Status,
} from "../helpers/grpc-health.js";

const VIGIL_SERVICES = [
  "AnalyticsService",
  "AuthService",
  "EventService",
  "HealthService",
  "IdentityService",
  "MetricsService",
  "ProjectService",
  "UptimeService",
  "PingService",
  "WebhookService",
].map((s) => `vigil.v1.${s}`);

let t: TestApp;
let client: Client;

/** A Watch stream: the statuses received so far, and how it ended. */
function watch(c: Client, service: string) {
  const seen: Status[] = [];
  const call = c.Watch({ service }) as grpc.ClientReadableStream<{ status: Status }>;
  call.on("data", (m: { status: Status }) => seen.push(m.status));
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  call.on("error", () => undefined); // the status event carries the outcome
  return { seen, ended, cancel: () => call.cancel() };
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

before(async () => {
  t = await startTestApp({ GRPC_HEALTH_POLL_MS: "100" });
  client = connect(t.port);
});
after(async () => {
  client.close();
  await t.close();
});

describe("grpc.health.v1.Health/Check (no credentials)", () => {
  it('answers SERVING for the node ("", what Kubernetes\' gRPC probe asks) and every served service', async () => {
    assert.equal(await check(client, ""), "SERVING");
    for (const s of [
      ...VIGIL_SERVICES,
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]) {
      assert.equal(await check(client, s), "SERVING", s);
    }
  });

  it("answers NOT_FOUND for an unknown service", async () => {
    await assert.rejects(
      check(client, "vigil.v1.NoSuchService"),
      (err: grpc.ServiceError) =>
        err.code === grpc.status.NOT_FOUND && err.details === 'unknown service "vigil.v1.NoSuchService"',
    );
    await assert.rejects(check(client, "EventService"), (err: grpc.ServiceError) => err.code === grpc.status.NOT_FOUND);
  });

  it("lists every service with its status", async () => {
    const res = await new Promise<{ statuses: Record<string, { status: Status }> }>((resolve, reject) =>
      client.List({}, (err: grpc.ServiceError | null, r: { statuses: Record<string, { status: Status }> }) =>
        err ? reject(err) : resolve(r),
      ),
    );
    for (const s of ["", ...VIGIL_SERVICES, "grpc.health.v1.Health"])
      assert.equal(res.statuses[s]?.status, "SERVING", s);
  });

  it("is NOT_SERVING while a migration of this build is missing from the database, as GET /health is 503", async () => {
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ version: string }>(
        "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations) RETURNING version",
      );
      try {
        assert.equal(await check(client, ""), "NOT_SERVING");
        assert.equal(await check(client, "vigil.v1.EventService"), "NOT_SERVING");
        const h = await t.rest.get("/health");
        assert.equal(h.status, 503, h.text);
        assert.match(h.body.error.message, /not migrated/);
      } finally {
        await db.query("INSERT INTO schema_migrations (version) VALUES ($1)", [rows[0].version]);
      }
      assert.equal(await check(client, ""), "SERVING");
      assert.equal((await t.rest.get("/health")).status, 200);
    } finally {
      await db.end();
    }
  });
});

describe("grpc.health.v1.Health/Watch", () => {
  it("sends the status at once, then each change: the database going away and coming back", async () => {
    const w = watch(client, "");
    await until("the first status", () => w.seen.length === 1);
    assert.deepEqual(w.seen, ["SERVING"]);
    const dbName = new URL(t.databaseUrl).pathname.slice(1);
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    try {
      // The node's database refuses connections and its open ones are ended: unreachable.
      await admin.query(`ALTER DATABASE ${dbName} WITH ALLOW_CONNECTIONS false`);
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [dbName]);
      await until("NOT_SERVING", () => w.seen.includes("NOT_SERVING"));
      assert.equal(await check(client, ""), "NOT_SERVING");
    } finally {
      await admin.query(`ALTER DATABASE ${dbName} WITH ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    await until("SERVING again", () => w.seen.at(-1) === "SERVING");
    assert.deepEqual(w.seen, ["SERVING", "NOT_SERVING", "SERVING"], "one message per change, none repeated");
    w.cancel();
    assert.equal((await w.ended).code, grpc.status.CANCELLED);
  });

  it("answers SERVICE_UNKNOWN for an unknown service and keeps the stream open", async () => {
    const w = watch(client, "vigil.v1.NoSuchService");
    await until("SERVICE_UNKNOWN", () => w.seen.length === 1);
    assert.deepEqual(w.seen, ["SERVICE_UNKNOWN"]);
    const early = await Promise.race([
      w.ended.then(() => "ended"),
      new Promise((r) => setTimeout(() => r("open"), 500)),
    ]);
    assert.equal(early, "open");
    w.cancel();
    await w.ended;
  });

  it("sends NOT_SERVING and ends when the node shuts down, without holding the shutdown", async () => {
    const node = await startTestApp({ GRPC_HEALTH_POLL_MS: "100" });
    const c = connect(node.port);
    let closed: Promise<void> | undefined;
    try {
      const w = watch(c, "");
      const w2 = watch(c, "vigil.v1.UptimeService");
      await until("the first statuses", () => w.seen.length === 1 && w2.seen.length === 1);
      const began = Date.now();
      await (closed = node.close());
      const tookMs = Date.now() - began;
      const [end, end2] = await Promise.all([w.ended, w2.ended]);
      assert.deepEqual(w.seen, ["SERVING", "NOT_SERVING"]);
      assert.deepEqual(w2.seen, ["SERVING", "NOT_SERVING"]);
      assert.equal(end.code, grpc.status.OK, end.details);
      assert.equal(end2.code, grpc.status.OK, end2.details);
      // The listener waits up to 10 s for calls in flight: open Watch streams must not be among them.
      assert.ok(tookMs < 5_000, `close took ${tookMs} ms`);
    } finally {
      c.close();
      await (closed ?? node.close());
    }
  });
});

describe("Temporal mode, worker unreachable", () => {
  it('keeps "" SERVING (the API serves; /health is 200 degraded) and reports UptimeService, PingService and WebhookService NOT_SERVING', async () => {
    const node = await startTestApp({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` });
    const c = connect(node.port);
    try {
      const h = await node.rest.get("/health");
      assert.equal(h.status, 200, h.text);
      assert.equal(h.body.status, "degraded");
      assert.equal(await check(c, ""), "SERVING");
      assert.equal(await check(c, "vigil.v1.EventService"), "SERVING");
      assert.equal(await check(c, "vigil.v1.UptimeService"), "NOT_SERVING");
      assert.equal(await check(c, "vigil.v1.PingService"), "NOT_SERVING");
      assert.equal(await check(c, "vigil.v1.WebhookService"), "NOT_SERVING");
    } finally {
      c.close();
      await node.close();
    }
  });
});
