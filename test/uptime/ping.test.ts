import type { DescMessage } from "@bufbuild/protobuf";
// Ping keys and ping URLs (decisions.md "Cron jobs and ping keys", issue #32 point 3): an API key kind
// (vk_ping_...) that may send heartbeats to any monitor of its project and nothing else (403 on every
// other operation of the OpenAPI document and every other RPC), and GET/POST /ping/:pingKey/:monitorSlug,
// which needs no header and answers as the heartbeat route. The key never reaches a log line or a metric.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { describe, it } from "node:test";
import pino from "pino";
import pg from "pg";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import {
  PingExitRequestSchema,
  PingRequestSchema,
  PingService,
  PingSignalRequestSchema,
} from "../../gen/vigil/v1/ping_pb.js";
import { ProjectService } from "../../gen/vigil/v1/projects_pb.js";
import {
  ExitRunRequestSchema,
  FailRunRequestSchema,
  SendHeartbeatRequestSchema,
  StartRunRequestSchema,
  UptimeService,
} from "../../gen/vigil/v1/uptime_pb.js";
import { isPublic } from "../../src/server/gate.js";
import { PING_URLS } from "../../src/server/ingest-routes.js";
import { doc, fillPath, operations, type Operation } from "../clients/openapi-check.js";
import { GENEROUS_LIMITS, startTestApp } from "../helpers/app.js";
import { errorBody, pingKey, project, publishableKey, type ProjectFixture } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

const run = promisify(execFile);

/** Every log line the server writes (request lines included), as parsed JSON. */
const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _enc, cb) {
    for (const l of String(chunk).split("\n")) if (l.trim()) lines.push(JSON.parse(l));
    cb();
  },
});

let ping: { id: string; secret: string };
let other: ProjectFixture;

const { t, p } = useProject(GENEROUS_LIMITS, { log: pino({ level: "debug" }, sink) }, async () => {
  ping = await pingKey(t.rest, p);
  other = await project(t.rest);
});

const url = (path: string) => `${t.url}${path}`;
/** The monitor of `slug` as the project's secret key reads it (undefined when there is none). */
async function monitorOf(fixture: ProjectFixture, slug: string) {
  const r = await t.rest.get(`/v1/projects/self/monitors?limit=100`, { key: fixture.key });
  assert.equal(r.status, 200, r.text);
  return r.body.data.find((m: { slug: string }) => m.slug === slug);
}

/** curl as a crontab line runs it (`-fsS -m 10 --retry 5`), GET or POST; its stdout parsed. */
async function curl(path: string, extra: string[] = []) {
  const { stdout } = await run("curl", ["-fsS", "-m", "10", "--retry", "5", ...extra, url(path)]);
  return JSON.parse(stdout);
}

async function haveCurl(): Promise<boolean> {
  return run("curl", ["--version"]).then(
    () => true,
    () => false,
  );
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call succeeded; an error was expected");
}

/** The operations whose declared access takes a ping key in the header: access `heartbeat`. */
const heartbeatOps = operations.filter((o) => o.op["x-vigil-caller"] === "heartbeat");
/** The gRPC name an operation's description gives (`**gRPC:** \`vigil.v1.X/Y\``). */
const grpcName = (o: Operation) => /\*\*gRPC:\*\* `([\w.]+\/\w+)`/.exec(o.op.description)?.[1];

describe("ping keys", () => {
  it("are created with kind ping: a vk_ping_ secret, listed as ping, stored as a hash", async () => {
    assert.match(ping.secret, /^vk_ping_[A-Za-z0-9]{40}$/);
    const list = await t.rest.get(`/v1/projects/${p.projectId}/api-keys`, { cookie: p.owner.cookie });
    const listed = list.body.data.find((k: { id: string }) => k.id === ping.id);
    assert.equal(listed.kind, "ping");
    assert.ok(!list.text.includes(ping.secret), "the list shows the secret");
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const r = await db.query("SELECT * FROM api_keys WHERE id = $1", [ping.id]);
      assert.equal(r.rows[0].kind, "ping");
      assert.ok(!JSON.stringify(r.rows[0]).includes(ping.secret), "the secret is stored");
    } finally {
      await db.end();
    }
  });

  it("send heartbeats over REST to any monitor of the project (an unknown slug creates it)", async () => {
    const made = await t.rest.post(`/v1/projects/${p.projectId}/monitors`, { name: "Made" }, { key: p.key });
    assert.equal(made.status, 201, made.text);
    for (const slug of [made.body.data.slug, "key-new-slug"]) {
      for (const projectId of [p.projectId, "self"]) {
        const r = await t.rest.post(
          `/v1/projects/${projectId}/heartbeats/${slug}`,
          { latencyMs: 3 },
          { key: ping.secret },
        );
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.data.accepted, true);
        assert.equal(r.body.data.monitor.slug, slug);
      }
      assert.ok((await monitorOf(p, slug)).lastHeartbeatAt, slug);
    }
  });

  it("answer 403 on every other operation of the OpenAPI document; only the heartbeat access level lets them in", async () => {
    // What takes a ping key is declared by the handler's access level (`heartbeat`), not by a path:
    // today that is the heartbeat route and the run signals.
    assert.deepEqual(
      heartbeatOps.map((o) => o.id),
      ["SendHeartbeat", "StartRun", "FailRun", "ExitRun"],
    );
    let refused = 0;
    for (const o of operations) {
      const caller = o.op["x-vigil-caller"];
      // No credentials read at all (sign-up, /health, status pages), or the ping URL's own key.
      if (caller === "public" || caller === "pingKey" || caller === "heartbeat") continue;
      const path = fillPath(
        o.path,
        Object.fromEntries(
          [...o.path.matchAll(/\{(\w+)\}/g)].map(([, v]) => [v, v === "projectId" ? p.projectId : "x1"]),
        ),
      );
      const hasBody = o.verb === "POST" || o.verb === "PATCH" || o.verb === "PUT";
      const r = await t.rest.req(o.verb, path, { key: ping.secret, body: hasBody ? {} : undefined });
      assert.equal(r.status, 403, `${o.verb} ${o.path}: ${r.status} ${r.text}`);
      const e = errorBody(r);
      assert.equal(e.code, "forbidden");
      assert.match(e.message, /a ping key can only send heartbeats/);
      refused++;
    }
    assert.ok(refused >= 50, `only ${refused} operations checked`);
  });

  it("answer PERMISSION_DENIED on every other RPC over gRPC, and send heartbeats over gRPC and Connect", async () => {
    const allowed = new Set(heartbeatOps.map(grpcName));
    assert.deepEqual(
      [...allowed],
      ["SendHeartbeat", "StartRun", "FailRun", "ExitRun"].map((m) => `vigil.v1.UptimeService/${m}`),
    );
    const headers = { authorization: `Bearer ${ping.secret}` };
    const grpc = createGrpcTransport({ baseUrl: t.url });
    let refused = 0;
    for (const service of t.app.features.flatMap((f) => f.services.map((s) => s.desc))) {
      const client = createClient(service, grpc) as unknown as Record<
        string,
        (req: object, opts: { headers: Record<string, string> }) => Promise<unknown> | AsyncIterable<unknown>
      >;
      for (const method of service.methods) {
        if (isPublic(method) || PING_URLS.has(method) || allowed.has(`${service.typeName}/${method.name}`)) continue;
        const answer = client[method.localName]({}, { headers });
        const e = await failure(
          method.methodKind === "server_streaming"
            ? (async () => {
                for await (const _ of answer as AsyncIterable<unknown>);
              })()
            : (answer as Promise<unknown>),
        );
        assert.equal(e.code, Code.PermissionDenied, `${service.typeName}/${method.name}: ${e.message}`);
        refused++;
      }
    }
    assert.ok(refused >= 50, `only ${refused} RPCs checked`);
    const transports: [string, Transport][] = [
      ["gRPC", grpc],
      ["Connect", createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })],
    ];
    for (const [name, tr] of transports) {
      const r = await createClient(UptimeService, tr).sendHeartbeat(
        { projectId: "self", monitorSlug: `rpc-${name.toLowerCase()}` },
        { headers },
      );
      assert.equal(r.data?.accepted, true, name);
      const e = await failure(createClient(ProjectService, tr).getProject({ projectId: "self" }, { headers }));
      assert.equal(e.code, Code.PermissionDenied, name);
      // The ping URL's RPC, with the key in the message (no header).
      const slug = `rpc-ping-${name.toLowerCase()}`;
      const q = await createClient(PingService, tr).ping({ pingKey: ping.secret, monitorSlug: slug });
      assert.equal(q.data?.monitor?.slug, slug, name);
      const bad = await failure(createClient(PingService, tr).ping({ pingKey: p.key, monitorSlug: "x" }));
      assert.equal(bad.code, Code.PermissionDenied, name);
    }
  });

  it("cannot reach another tenant's project: its path is a 404, its slug is a monitor of the key's own project", async () => {
    const theirs = await t.rest.post(
      `/v1/projects/${other.projectId}/monitors`,
      { name: "Their backup", slug: "their-backup" },
      { key: other.key },
    );
    assert.equal(theirs.status, 201, theirs.text);
    const r = await t.rest.post(`/v1/projects/${other.projectId}/heartbeats/their-backup`, {}, { key: ping.secret });
    assert.equal(r.status, 404, r.text);
    const u = await fetch(url(`/ping/${ping.secret}/their-backup`));
    assert.equal(u.status, 200);
    const mine = await monitorOf(p, "their-backup");
    assert.ok(mine?.lastHeartbeatAt, "the slug made a monitor of the key's own project");
    const still = await monitorOf(other, "their-backup");
    assert.equal(still.lastHeartbeatAt, null, "the other tenant's monitor received a heartbeat");
    assert.equal(still.status, "unknown");
  });

  it("the ping messages have the heartbeat's and run signals' fields, the ping key in place of the project", () => {
    const fields = (s: DescMessage, drop: string[], numbers = true) =>
      s.fields
        .filter((f) => !drop.includes(f.name))
        .map((f) => {
          const type = f.fieldKind === "scalar" ? f.scalar : f.fieldKind === "message" ? f.message.typeName : "";
          return `${f.name}:${numbers ? f.number : ""}:${f.fieldKind}:${type}:${f.proto.proto3Optional}`;
        })
        .sort();
    assert.deepEqual(fields(PingRequestSchema, ["ping_key"]), fields(SendHeartbeatRequestSchema, ["project_id"]));
    // The signal messages differ in numbers only (the path's `signal` comes third).
    for (const run of [StartRunRequestSchema, FailRunRequestSchema])
      assert.deepEqual(
        fields(PingSignalRequestSchema, ["ping_key", "signal"], false),
        fields(run, ["project_id"], false),
      );
    assert.deepEqual(
      fields(PingExitRequestSchema, ["ping_key"], false),
      fields(ExitRunRequestSchema, ["project_id"], false),
    );
  });
});

describe("ping URLs", () => {
  it("GET and POST with curl, as a crontab line runs it: the heartbeat route's answer", async (ctx) => {
    const viaRoute = await t.rest.post(`/v1/projects/self/heartbeats/cron-route`, {}, { key: p.key });
    const curlOk = await haveCurl();
    if (!curlOk) ctx.diagnostic("curl is not installed: node's fetch stands in for it");
    const get = curlOk
      ? await curl(`/ping/${ping.secret}/cron-backup`)
      : await (await fetch(url(`/ping/${ping.secret}/cron-backup`))).json();
    assert.equal(get.data.accepted, true);
    assert.equal(get.data.statusChanged, true, "a new monitor");
    assert.equal(get.data.monitor.slug, "cron-backup");
    assert.equal(get.data.monitor.projectId, p.projectId);
    assert.equal(get.data.monitor.status, "up");
    // The same shape as the heartbeat route's answer, field for field.
    assert.deepEqual(Object.keys(get.data).sort(), Object.keys(viaRoute.body.data).sort());
    assert.deepEqual(Object.keys(get.data.monitor).sort(), Object.keys(viaRoute.body.data.monitor).sort());
    // POST without a body (curl -X POST sends no Content-Type), then with the heartbeat route's JSON body.
    const post = curlOk
      ? await curl(`/ping/${ping.secret}/cron-backup`, ["-X", "POST"])
      : await (await fetch(url(`/ping/${ping.secret}/cron-backup`), { method: "POST" })).json();
    assert.equal(post.data.accepted, true);
    assert.equal(post.data.statusChanged, false);
    const body = JSON.stringify({ status: "down", latencyMs: 12.5, metadata: { exit: 1 } });
    const down = curlOk
      ? await curl(`/ping/${ping.secret}/cron-backup`, ["-H", "content-type: application/json", "-d", body])
      : await (
          await fetch(url(`/ping/${ping.secret}/cron-backup`), {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          })
        ).json();
    assert.equal(down.data.monitor.status, "down");
    assert.equal(down.data.statusChanged, true);
    const m = await monitorOf(p, "cron-backup");
    const beats = await t.rest.get(`/v1/projects/self/monitors/${m.id}/heartbeats`, { key: p.key });
    assert.equal(beats.body.data.length, 3);
    assert.equal(beats.body.data[0].status, "down");
    assert.equal(beats.body.data[0].latencyMs, 12.5);
    assert.deepEqual(beats.body.data[0].metadata, { exit: 1 });
    // GET takes the scalar fields as query parameters.
    const up = await fetch(url(`/ping/${ping.secret}/cron-backup?status=up&latencyMs=4`));
    assert.equal(up.status, 200);
    assert.equal((await up.json()).data.monitor.status, "up");
  });

  it("validates the body as the heartbeat route does", async () => {
    const cases: [unknown, number][] = [
      [{ status: "sideways" }, 400],
      [{ latencyMs: -1 }, 400],
      [{ id: "not-a-uuid" }, 400],
      [{ extraField: 1 }, 400],
      [{ expectedIntervalMs: 1 }, 400],
    ];
    for (const [body, status] of cases) {
      const viaRoute = await t.rest.post(`/v1/projects/self/heartbeats/valid-check`, body, { key: p.key });
      const viaPing = await t.rest.post(`/ping/${ping.secret}/valid-check`, body);
      assert.equal(viaRoute.status, status, viaRoute.text);
      assert.equal(viaPing.status, status, `${JSON.stringify(body)}: ${viaPing.text}`);
      assert.deepEqual(errorBody(viaPing).details, errorBody(viaRoute).details, JSON.stringify(body));
    }
    // The path gives the key and the slug: neither may come in the body.
    const dup = await t.rest.post(`/ping/${ping.secret}/valid-check`, { pingKey: ping.secret });
    assert.equal(dup.status, 400, dup.text);
    const form = await t.rest.req("POST", `/ping/${ping.secret}/valid-check`, {
      raw: "a=b",
      contentType: "application/x-www-form-urlencoded",
    });
    assert.equal(form.status, 415, form.text);
    assert.equal(
      (await t.rest.req("POST", `/ping/${ping.secret}/valid-check`, { raw: "{", contentType: "application/json" }))
        .status,
      400,
    );
    const put = await t.rest.req("PUT", `/ping/${ping.secret}/valid-check`, {});
    assert.equal(put.status, 405);
    assert.equal(put.headers.get("allow"), "GET, POST");
  });

  it("take a ping key only: unknown, malformed or revoked is a 401, another kind a 403, before the body is read", async () => {
    const revoked = await pingKey(t.rest, p, "revoked");
    assert.equal((await fetch(url(`/ping/${revoked.secret}/rk`))).status, 200);
    const del = await t.rest.del(`/v1/projects/${p.projectId}/api-keys/${revoked.id}`, { cookie: p.owner.cookie });
    assert.equal(del.status, 204, del.text);
    for (const key of [revoked.secret, "vk_ping_" + "0".repeat(40), "vk_" + "0".repeat(40), "nope", "Bearer"]) {
      for (const method of ["GET", "POST"]) {
        // A form body: still a 401 (the key is checked before the body and its media type).
        const r = await t.rest.req(method, `/ping/${encodeURIComponent(key)}/rk`, {
          raw: method === "POST" ? "a=b" : undefined,
          contentType: method === "POST" ? "application/x-www-form-urlencoded" : undefined,
        });
        assert.equal(r.status, 401, `${method} ${key}: ${r.text}`);
        assert.equal(errorBody(r).code, "unauthenticated");
      }
    }
    const pub = await publishableKey(t.rest, p);
    for (const key of [p.key, pub.secret]) {
      for (const method of ["GET", "POST"]) {
        const r = await t.rest.req(method, `/ping/${key}/rk`, {});
        assert.equal(r.status, 403, `${method}: ${r.text}`);
        const e = errorBody(r);
        assert.equal(e.code, "forbidden");
        assert.match(e.message, /only a ping key .* may be used in a ping URL/);
        assert.ok(!r.text.includes(key), "the answer repeats the key");
      }
    }
    // A ping key in a header on the ping URL is no credential of it: the path's key decides.
    const hdr = await t.rest.req("GET", `/ping/nope/rk`, { key: ping.secret });
    assert.equal(hdr.status, 401);
  });

  it("start, fail and exit/:code are the run signals, paired into runs; another suffix is a 404", async () => {
    const unknown = await t.rest.get(`/ping/${ping.secret}/rk/nonsense`);
    assert.equal(unknown.status, 404);
    assert.equal(errorBody(unknown).code, "not_found");
    assert.ok(!unknown.text.includes(ping.secret), "the 404 repeats the key");
    const slug = `ping-runs-${Date.now()}`;
    const start = await t.rest.get(`/ping/${ping.secret}/${slug}/start?runId=r1`);
    assert.equal(start.status, 200, start.text);
    const id = start.body.data.monitor.id;
    const exit = await t.rest.post(`/ping/${ping.secret}/${slug}/exit/3`, { runId: "r1", output: "tail of the log" });
    assert.equal(exit.status, 200, exit.text);
    assert.equal(exit.body.data.monitor.status, "down");
    assert.equal((await t.rest.req("POST", `/ping/${ping.secret}/${slug}/start`, {})).status, 200);
    const fail = await t.rest.get(`/ping/${ping.secret}/${slug}/fail`);
    assert.equal(fail.status, 200, fail.text);
    const bad = await t.rest.post(`/ping/${ping.secret}/${slug}/fail`, { status: "up" });
    assert.equal(bad.status, 400, "a run signal has no status");
    assert.equal((await t.rest.get(`/ping/${ping.secret}/${slug}/exit/256`)).status, 400);
    const runs = await t.rest.get(`/v1/projects/self/monitors/${id}/runs`, { key: p.key });
    assert.equal(runs.status, 200, runs.text);
    assert.deepEqual(
      runs.body.data.map(
        (r: { runId: string | null; outcome: string; exitCode: number | null; output: string | null }) => [
          r.runId,
          r.outcome,
          r.exitCode,
          r.output,
        ],
      ),
      [
        [null, "failed", null, null],
        ["r1", "failed", 3, "tail of the log"],
      ],
    );
  });

  it("the shell wrapper of docs/clients.md, run as written: start, then exit/:code with the output's tail", async (ctx) => {
    const tools = await Promise.all(
      ["curl", "jq"].map((c) =>
        run(c, ["--version"]).then(
          () => true,
          () => false,
        ),
      ),
    );
    if (tools.includes(false)) return ctx.skip("the wrapper needs curl and jq");
    const md = await readFile(new URL("../../docs/clients.md", import.meta.url), "utf8");
    const block = /<!-- vigil-run: begin -->\n```sh\n([\s\S]*?)```\n<!-- vigil-run: end -->/.exec(md);
    assert.ok(block, "docs/clients.md has no vigil-run block");
    const dir = await mkdtemp(path.join(os.tmpdir(), "vigil-run-"));
    const script = path.join(dir, "vigil-run");
    await writeFile(script, block[1]);
    const env = { ...process.env, VIGIL_URL: t.url, VIGIL_PING_KEY: ping.secret };
    const slug = `shell-job-${Date.now()}`;
    const wrapped = (command: string) =>
      run("sh", [script, slug, "sh", "-c", command], { env }).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
    const failed = await wrapped("echo 'copying \"db\" é'; echo oops >&2; exit 3");
    assert.equal(failed.code, 3, "the wrapper exits with the command's code");
    assert.match(failed.stdout, /copying "db" é\noops/, "the wrapper prints the command's output");
    const ok = await wrapped("sleep 0.2; echo done");
    assert.equal(ok.code, 0);
    const m = await t.rest.get(`/v1/projects/self/monitors?limit=1000`, { key: p.key });
    const id = m.body.data.find((x: { slug: string }) => x.slug === slug).id;
    const runs = await t.rest.get(`/v1/projects/self/monitors/${id}/runs`, { key: p.key });
    assert.equal(runs.status, 200, runs.text);
    const [second, first] = runs.body.data;
    assert.deepEqual([first.outcome, first.exitCode, first.output], ["failed", 3, 'copying "db" é\noops\n']);
    assert.deepEqual([second.outcome, second.exitCode, second.output], ["succeeded", 0, "done\n"]);
    for (const r of [first, second]) assert.match(r.runId, /^[0-9a-f]{16}$/);
    assert.notEqual(first.runId, second.runId);
    assert.ok(second.durationMs >= 200, `duration ${second.durationMs}`);
  });

  it("keep the key out of every log line (request lines: /ping/[redacted]/...) and out of the metrics", async () => {
    const rid = `ping-log-${Date.now()}`;
    const r = await fetch(url(`/ping/${ping.secret}/log-backup`), { headers: { "x-request-id": rid } });
    assert.equal(r.status, 200);
    await t.rest.get(`/ping/${ping.secret}/log-backup/start`);
    await t.rest.post(`/ping/${ping.secret}/log-backup`, { status: "sideways" });
    await t.rest.get(`/ping/${p.key}/log-backup`);
    const pub = await publishableKey(t.rest, p);
    await t.rest.get(`/ping/${pub.secret}/log-backup`);
    await new Promise((res) => setTimeout(res, 100));
    const line = lines.find((l) => l.msg === "request" && l.requestId === rid);
    assert.ok(line, "no request log line");
    assert.equal(line.path, "/ping/[redacted]/log-backup");
    assert.equal(line.route, "/ping/{ping_key}/{monitor_slug}");
    assert.equal(line.projectId, p.projectId);
    assert.equal(line.status, 200);
    const all = JSON.stringify(lines);
    assert.ok(lines.length > 20, `only ${lines.length} log lines`);
    for (const key of [ping.secret, p.key, pub.secret]) {
      assert.ok(!all.includes(key), "a key reached the logs");
      assert.ok(!all.includes(key.slice(8)), "a key's random part reached the logs");
    }
    assert.ok(t.metricsUrl, "no metrics port");
    const metrics = await (await fetch(`${t.metricsUrl}/metrics`)).text();
    assert.match(metrics, /route="\/ping\/\{ping_key\}\/\{monitor_slug\}"/);
    assert.ok(!metrics.includes(ping.secret.slice(8)), "the key is a metric label");
  });

  it("is rate limited and body limited as the heartbeat route", async () => {
    const small = await startTestApp({ RATE_LIMIT_HEARTBEATS_PER_MINUTE: "3", MAX_BODY_BYTES: "2048" });
    try {
      const q = await project(small.rest);
      const k = await pingKey(small.rest, q);
      // Counted (the gate takes the limit before the body is read), then refused for its size.
      const big = await small.rest.post(`/ping/${k.secret}/rl`, { metadata: { x: "y".repeat(4096) } });
      assert.equal(big.status, 413, big.text);
      assert.equal((await fetch(`${small.url}/ping/${k.secret}/rl`)).status, 200);
      // The heartbeat route and the ping URL count against the one per-project heartbeat limit.
      assert.equal((await small.rest.post(`/v1/projects/self/heartbeats/rl`, {}, { key: q.key })).status, 200);
      const limited = await fetch(`${small.url}/ping/${k.secret}/rl`, { method: "POST" });
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers.get("retry-after")) >= 1);
      assert.equal((await limited.json()).error.code, "rate_limited");
    } finally {
      await small.close();
    }
  });

  it("is in the OpenAPI document: GET and POST, the key a path parameter, no security scheme", () => {
    const path = doc.paths["/ping/{pingKey}/{monitorSlug}"];
    assert.ok(path, "no ping URL in the document");
    assert.deepEqual(Object.keys(path).sort(), ["get", "post"]);
    for (const verb of ["get", "post"]) {
      assert.deepEqual(path[verb].security, []);
      assert.equal(path[verb]["x-vigil-caller"], "pingKey");
      assert.deepEqual(path[verb]["x-vigil-rate-limits"], ["heartbeats"]);
      assert.ok(
        path[verb].parameters.some((x: { name: string; in: string }) => x.name === "pingKey" && x.in === "path"),
      );
    }
  });
});
