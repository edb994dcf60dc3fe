// Publishable API keys (vk_pub_...): created with `kind`, shown like secret keys, and limited to the
// browser ingestion routes. Every other REST route (taken from the served RPCs, so a new route is
// covered the moment it exists) and every other RPC over Connect, gRPC and gRPC-web answers 403.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { ProjectService } from "../../gen/vigil/v1/projects_pb.js";
import { MetricsService } from "../../gen/vigil/v1/metrics_pb.js";
import { routesFor, type Route } from "../../src/transcoding/routes.js";
import { createContextValues } from "@connectrpc/connect";
import { principalKey, type Principal } from "../../src/auth/principal.js";
import { clientInfoKey } from "../../src/shared/context.js";
import { restContext } from "../../src/transcoding/context.js";
import { isPublic } from "../../src/server/gate.js";
import { BROWSER_INGEST, PING_URLS } from "../../src/server/ingest-routes.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, publishableKey } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

let pub: { id: string; secret: string };

const { t, p } = useProject(GENEROUS_LIMITS, {}, async () => {
  pub = await publishableKey(t.rest, p);
});

const INGEST = new Set(["POST /v1/events", "POST /v1/events/batch"]);
const label = (r: Route) => `${r.verb} ${r.template}`;

function pathFor(route: Route): string {
  return (
    "/" +
    route.segments.map((s) => ("literal" in s ? s.literal : s.variable === "project_id" ? "self" : "x1")).join("/")
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

describe("publishable API keys", () => {
  it("are created with kind publishable: vk_pub_ secret, 7-character prefix, kind listed, hash stored", async () => {
    assert.match(pub.secret, /^vk_pub_[A-Za-z0-9]{40}$/);
    const list = await t.rest.get(`/v1/projects/${p.projectId}/api-keys`, { cookie: p.owner.cookie });
    const listed = list.body.data.find((k: any) => k.id === pub.id);
    assert.equal(listed.kind, "publishable");
    assert.equal(listed.prefix, "vk_pub_");
    assert.ok(!list.text.includes(pub.secret));
    // The fixture's key was created without `kind`: secret by default.
    assert.equal(list.body.data.find((k: any) => k.id === p.keyId).kind, "secret");
    assert.match(p.key, /^vk_[A-Za-z0-9]{40}$/);
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const r = await db.query("SELECT * FROM api_keys WHERE id = $1", [pub.id]);
      assert.equal(r.rows[0].kind, "publishable");
      assert.ok(!JSON.stringify(r.rows[0]).includes(pub.secret));
    } finally {
      await db.end();
    }
  });

  it("refuses an unknown kind with a 400 naming kind", async () => {
    for (const kind of ["", "PUBLISHABLE", "admin", 1, true, "__proto__", "secret\u0000"]) {
      const r = await t.rest.post(
        `/v1/projects/${p.projectId}/api-keys`,
        { name: "k", environment: "production", kind },
        { cookie: p.owner.cookie },
      );
      assert.equal(r.status, 400, `${JSON.stringify(kind)}: ${r.text}`);
      const e = errorBody(r);
      assert.ok(JSON.stringify(e.details ?? e.message).includes("kind"), r.text);
    }
  });

  it("ingests events and batches", async () => {
    const one = await t.rest.post("/v1/events", { type: "pub.single" }, { key: pub.secret });
    assert.equal(one.status, 202, one.text);
    const batch = await t.rest.post(
      "/v1/events/batch",
      { events: [{ type: "pub.a" }, { type: "pub.b" }] },
      { key: pub.secret },
    );
    assert.equal(batch.status, 202, batch.text);
    assert.equal(batch.body.data.accepted, 2);
    // Stored in the key's project: the secret key reads them back.
    const list = await t.rest.get("/v1/projects/self/events?type=pub.single", { key: p.key });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.data.length, 1);
  });

  it("answers 403 on every other REST route", async () => {
    const routes = routesFor(t.app.features.flatMap((f) => f.services.map((s) => s.desc)));
    let refused = 0;
    for (const route of routes) {
      // The RPCs marked (vigil.v1.no_credentials) take no key at all (sign-up, /health, status pages),
      // and a ping URL reads none from a header (its key is in the path: test/uptime/ping.test.ts).
      if (INGEST.has(label(route)) || isPublic(route.method) || PING_URLS.has(route.method)) continue;
      const hasBody = route.verb === "POST" || route.verb === "PATCH" || route.verb === "PUT";
      const r = await t.rest.req(route.verb, pathFor(route), { key: pub.secret, body: hasBody ? {} : undefined });
      assert.equal(r.status, 403, `${label(route)}: ${r.status} ${r.text}`);
      const e = errorBody(r);
      assert.equal(e.code, "forbidden");
      assert.match(e.message, /publishable key can only ingest events/);
      refused++;
    }
    assert.ok(refused >= 40, `only ${refused} routes checked`);
  });

  it("answers 403 on every other RPC of every served service over gRPC", async () => {
    const tr = createGrpcTransport({ baseUrl: t.url });
    const headers = { authorization: `Bearer ${pub.secret}` };
    let refused = 0;
    for (const service of t.app.features.flatMap((f) => f.services.map((s) => s.desc))) {
      const client = createClient(service, tr) as unknown as Record<
        string,
        (req: object, opts: { headers: Record<string, string> }) => Promise<unknown> | AsyncIterable<unknown>
      >;
      for (const method of service.methods) {
        if (isPublic(method) || BROWSER_INGEST.has(method) || PING_URLS.has(method)) continue;
        const answer = client[method.localName]({}, { headers });
        // A server stream's error arrives while it is read (ExportEvents): read it to its end.
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
    assert.ok(refused >= 40, `only ${refused} RPCs checked`);
  });

  it("answers 403 over Connect, gRPC and gRPC-web, and ingests over each", async () => {
    const transports: [string, Transport][] = [
      ["Connect", createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })],
      ["gRPC", createGrpcTransport({ baseUrl: t.url })],
      ["gRPC-web", createGrpcWebTransport({ baseUrl: t.url, httpVersion: "1.1" })],
    ];
    const headers = { authorization: `Bearer ${pub.secret}` };
    for (const [name, tr] of transports) {
      const projects = createClient(ProjectService, tr);
      const e = await failure(projects.getProject({ projectId: "self" }, { headers }));
      assert.equal(e.code, Code.PermissionDenied, `${name}: ${e.message}`);
      assert.match(e.rawMessage, /publishable key can only ingest events/, name);
      const m = await failure(
        createClient(MetricsService, tr).recordMetric(
          { projectId: "self", type: "measurement", name: "x" },
          { headers },
        ),
      );
      assert.equal(m.code, Code.PermissionDenied, `${name}: ${m.message}`);
      const events = createClient(EventService, tr);
      const list = await failure(events.listEvents({ projectId: "self" }, { headers }));
      assert.equal(list.code, Code.PermissionDenied, name);
      const ok = await events.ingestEvent({ type: `pub.${name}` }, { headers });
      assert.ok(ok.data?.id, name);
    }
  });

  it("a revoked publishable key is 401 on ingestion", async () => {
    const k = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "gone", environment: "preview", kind: "publishable" },
      { cookie: p.owner.cookie },
    );
    assert.equal((await t.rest.post("/v1/events", { type: "x" }, { key: k.body.data.secret })).status, 202);
    await t.rest.del(`/v1/projects/${p.projectId}/api-keys/${k.body.data.id}`, { cookie: p.owner.cookie });
    const r = await t.rest.post("/v1/events", { type: "x" }, { key: k.body.data.secret });
    assert.equal(r.status, 401, r.text);
    assert.equal(errorBody(r).code, "unauthenticated");
  });

  it("a secret key keeps every right it had", async () => {
    assert.equal((await t.rest.get("/v1/projects/self", { key: p.key })).status, 200);
    assert.equal(
      (await t.rest.post("/v1/projects/self/metrics", { type: "measurement", name: "m", value: 1 }, { key: p.key }))
        .status,
      201,
    );
  });

  it("src/auth refuses them itself past the gate: project() and session() 403, ingestKey() accepts", async () => {
    const principal: Principal = {
      kind: "apiKey",
      keyId: pub.id,
      projectId: p.projectId,
      environment: "production",
      keyKind: "publishable",
      allowedOrigins: [],
    };
    const ctx = restContext({
      service: ProjectService,
      method: ProjectService.method.getProject,
      requestMethod: "GET",
      url: "http://vigil.local/v1/projects/self",
      headers: {},
      values: createContextValues()
        .set(clientInfoKey, { ip: "127.0.0.1", requestId: "t" })
        .set(principalKey, principal),
    });
    const auth = t.app.deps.auth;
    await assert.rejects(
      auth.project(ctx, "self", "data"),
      (e: any) => e.status === 403 && /publishable/.test(e.rawMessage),
    );
    await assert.rejects(auth.session(ctx), (e: any) => e.status === 403 && /publishable/.test(e.rawMessage));
    assert.equal((await auth.ingestKey(ctx)).projectId, p.projectId);
    const secret = { ...principal, keyKind: "secret" as const };
    const ctx2 = restContext({
      service: ProjectService,
      method: ProjectService.method.getProject,
      requestMethod: "GET",
      url: "http://vigil.local/v1/projects/self",
      headers: {},
      values: createContextValues().set(clientInfoKey, { ip: "127.0.0.1", requestId: "t" }).set(principalKey, secret),
    });
    assert.equal((await auth.project(ctx2, "self", "data")).projectId, p.projectId);
  });
});
