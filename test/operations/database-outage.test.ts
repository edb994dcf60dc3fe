import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Writable } from "node:stream";
import pg from "pg";
import pino from "pino";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { GENEROUS_LIMITS, startTestApp, type TestApp } from "../helpers/app.js";
import { createTestDatabase } from "../helpers/db.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";
import { countingProxy, grpcError, loadVigil, unary, type Proxy } from "../clients/grpc-js-util.js";

// The database out of reach (docs/operations.md "PostgreSQL restarts and failovers"): Vigil talks to
// PostgreSQL through a TCP proxy the test can cut (every open connection dropped, new ones refused)
// and restore. While it is cut, every protocol answers a clear 503 `unavailable` with Retry-After
// (gRPC UNAVAILABLE), never a 500 and never a 202; once it is back, the same node serves again and
// holds exactly the events it acknowledged. The same over a unix socket (how Vigil reaches its
// embedded PostgreSQL): the socket's file gone (the server stopped) is an outage too, not a 500.

/** PostgreSQL's address for `net.connect`: its unix socket (the embedded server) or host:port. */
function upstreamOf(databaseUrl: string): net.NetConnectOpts {
  const u = new URL(databaseUrl);
  const host = decodeURIComponent(u.hostname);
  const port = Number(u.port || 5432);
  return host.startsWith("/") ? { path: path.join(host, `.s.PGSQL.${port}`) } : { host, port };
}

let t: TestApp;
let p: ProjectFixture;
let proxy: Proxy;
let direct: pg.Client;
const grpcClients: grpc.Client[] = [];

before(async () => {
  const databaseUrl = await createTestDatabase();
  proxy = await countingProxy(upstreamOf(databaseUrl));
  const proxied = new URL(databaseUrl);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(proxy.port);
  t = await startTestApp({ ...GENEROUS_LIMITS, PG_POOL_SIZE: "4" }, { databaseUrl: proxied.toString() });
  p = await project(t.rest);
  direct = new pg.Client({ connectionString: databaseUrl });
  await direct.connect();
});
after(async () => {
  for (const c of grpcClients) c.close();
  await t?.close();
  await direct?.end();
  await proxy?.close();
});

const storedTypes = async () =>
  (
    await direct.query<{ type: string }>("SELECT type FROM events WHERE project_id = $1 ORDER BY type", [p.projectId])
  ).rows.map((r) => r.type);

describe("the database out of reach", () => {
  it("answers 503 unavailable over REST, Connect and gRPC, accepts nothing, and serves again once it is back", async () => {
    assert.equal((await t.rest.post("/v1/events", { type: "before" }, { key: p.key })).status, 202);

    await proxy.close();
    // REST: ingestion with a key, a read with a key, a session route.
    for (const call of [
      () => t.rest.post("/v1/events", { type: "during" }, { key: p.key }),
      () => t.rest.post("/v1/events/batch", { events: [{ type: "during" }] }, { key: p.key }),
      () => t.rest.get(`/v1/projects/${p.projectId}/events`, { key: p.key }),
      () => t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie }),
    ]) {
      const r = await call();
      assert.equal(r.status, 503, r.text);
      assert.deepEqual(errorBody(r), {
        code: "unavailable",
        message: "the service cannot reach its database; try again shortly",
      });
      assert.equal(r.headers.get("retry-after"), "1");
      assert.doesNotMatch(r.text, /ECONN|terminated|postgres|SELECT|at /i);
    }
    // Connect.
    const events = createClient(EventService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }));
    try {
      await events.ingestEvent({ type: "during" }, { headers: { authorization: `Bearer ${p.key}` } });
      assert.fail("accepted while the database was out of reach");
    } catch (err) {
      const e = ConnectError.from(err);
      assert.equal(e.code, Code.Unavailable, e.message);
    }
    // gRPC through @grpc/grpc-js.
    const c = new (loadVigil().EventService)(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure());
    grpcClients.push(c);
    const e = await grpcError(unary(c, "ingestEvent")({ type: "during" }, { authorization: `Bearer ${p.key}` }));
    assert.equal(e.code, grpc.status.UNAVAILABLE, e.details);
    // The node itself says so.
    assert.equal((await t.rest.get("/health")).status, 503);

    await proxy.reopen();
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = await t.rest.post("/v1/events", { type: "after" }, { key: p.key });
      if (r.status === 202) break;
      assert.equal(r.status, 503, r.text);
      assert.ok(Date.now() < deadline, "the node did not serve again once the database was back");
      await sleep(100);
    }
    assert.equal((await t.rest.get("/health")).status, 200);
    // Exactly what was acknowledged: nothing of the refused requests.
    assert.deepEqual(await storedTypes(), ["after", "before"]);
  });
});

describe("the database's unix socket gone (the embedded server stopped)", () => {
  let u: TestApp;
  let up: ProjectFixture;
  let socket: Proxy;
  let dir: string;
  const lines: { level: number; msg: string }[] = [];

  before(async () => {
    const databaseUrl = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), "vigil-pgsock-"));
    // A socket of PostgreSQL's own naming in a directory of ours, forwarding to the test's server.
    socket = await countingProxy(upstreamOf(databaseUrl), path.join(dir, ".s.PGSQL.5432"));
    const viaSocket = new URL(databaseUrl);
    viaSocket.hostname = encodeURIComponent(dir);
    viaSocket.port = "5432";
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split("\n")) if (l.trim()) lines.push(JSON.parse(l));
        cb();
      },
    });
    u = await startTestApp(
      { ...GENEROUS_LIMITS, PG_POOL_SIZE: "2" },
      { databaseUrl: viaSocket.toString(), log: pino({ level: "warn" }, sink) },
    );
    up = await project(u.rest);
  });
  after(async () => {
    await u?.close();
    await socket?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("answers 503 unavailable with Retry-After (connect ENOENT), logs no error, and serves again once it is back", async () => {
    assert.equal((await u.rest.post("/v1/events", { type: "before" }, { key: up.key })).status, 202);
    await socket.close(); // open connections dropped, the socket's file removed: connect() fails with ENOENT
    for (const call of [
      () => u.rest.post("/v1/events", { type: "during" }, { key: up.key }),
      () => u.rest.get(`/v1/projects/${up.projectId}/events`, { key: up.key }),
      () => u.rest.get(`/v1/projects/${up.projectId}`, { cookie: up.owner.cookie }),
    ]) {
      const r = await call();
      assert.equal(r.status, 503, r.text);
      assert.equal(errorBody(r).code, "unavailable");
      assert.equal(r.headers.get("retry-after"), "1");
      assert.doesNotMatch(r.text, /ENOENT|PGSQL|postgres|at /i);
    }
    assert.deepEqual(
      lines.filter((l) => l.level >= 50).map((l) => l.msg),
      [],
      "an unreachable database is a warning, not an error",
    );
    await socket.reopen();
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = await u.rest.post("/v1/events", { type: "after" }, { key: up.key });
      if (r.status === 202) break;
      assert.equal(r.status, 503, r.text);
      assert.ok(Date.now() < deadline, "the node did not serve again once the socket was back");
      await sleep(100);
    }
  });
});
