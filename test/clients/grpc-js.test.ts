// @grpc/grpc-js, with definitions loaded from proto/ by @grpc/proto-loader, over the real port
// (h2c): every vigil.v1 service, metadata auth (API key and session cookie), error details in
// grpc-status-details-bin, grpc-message as grpc-js reads it, deadlines, size limits, compression
// and many concurrent calls on one connection.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { startTestApp, GENEROUS_LIMITS, type TestApp } from "../helpers/app.js";
import { pingKey, project, tenants, type ProjectFixture } from "../helpers/fixtures.js";
import { countingProxy, grpcError, loadVigil, statusDetails, struct, unary, type Proxy } from "./grpc-js-util.js";

const MAX_BODY = 256 * 1024;
let t: TestApp;
let p: ProjectFixture;
let revokedKey: string;
let proxy: Proxy;
let services: Record<string, grpc.ServiceClientConstructor>;
const clients: grpc.Client[] = [];
const called = new Set<string>();

/** A grpc-js client of one service through the counting proxy; options are channel options. */
function client(service: string, options: grpc.ChannelOptions = {}): grpc.Client {
  const c = new services[service](`127.0.0.1:${proxy.port}`, grpc.credentials.createInsecure(), options);
  clients.push(c);
  return c;
}
/** The promise form of service/method on a (new, unless given) client; records the service as called. */
function rpc(service: string, method: string, c = client(service)) {
  called.add(service);
  return unary(c, method);
}
const bearer = () => ({ authorization: `Bearer ${p.key}` });

before(async () => {
  t = await startTestApp({ ...GENEROUS_LIMITS, RATE_LIMIT_IDENTIFY_PER_MINUTE: "3", MAX_BODY_BYTES: String(MAX_BODY) });
  const ts = await tenants(t.rest);
  p = ts.a;
  revokedKey = ts.revokedKey;
  services = loadVigil();
  proxy = await countingProxy(t.port);
});
after(async () => {
  for (const c of clients) c.close();
  await proxy.close();
  await t.close();
});

describe("@grpc/grpc-js against every vigil.v1 service", () => {
  it("calls each service with metadata auth: Bearer key, session cookie, none where public", async () => {
    assert.ok(Object.keys(services).length >= 9, `services: ${Object.keys(services)}`);
    const health = await rpc("HealthService", "check")({});
    assert.equal(health.res.status, "ok");

    // Signing in over gRPC: the session cookie arrives in the response metadata and is sent back
    // as `cookie` metadata.
    const login = await rpc("AuthService", "login")({ email: p.owner.email, password: p.owner.password });
    const setCookie = String(login.headers.get("set-cookie")[0] ?? "");
    assert.match(setCookie, /^vigil_session=/);
    const cookie = { cookie: setCookie.split(";")[0] };
    const me = await rpc("AuthService", "me")({}, cookie);
    assert.equal(me.res.data.email, p.owner.email);

    const projects = await rpc("ProjectService", "listProjects")({}, cookie);
    assert.ok(projects.res.data.some((x: { id: string }) => x.id === p.projectId));

    const ev = await rpc("EventService", "ingestEvent")(
      { type: "signup", userId: "u-1", data: struct({ plan: "pro", seats: 3 }) },
      bearer(),
    );
    assert.match(ev.res.data.id, /^[0-9a-f-]{36}$/);

    const count = await rpc("AnalyticsService", "count")(
      {
        projectId: p.projectId,
        time: {
          start: new Date(Date.now() - 3600_000).toISOString(),
          end: new Date(Date.now() + 60_000).toISOString(),
        },
      },
      bearer(),
    );
    assert.equal(typeof Number(count.res.data.count), "number"); // double or int64, read as a number

    const who = await rpc("IdentityService", "identify")(
      { projectId: p.projectId, externalId: "u-1", properties: struct({ plan: "pro" }) },
      cookie,
    );
    assert.equal(who.res.data.externalId, "u-1");

    // Deleting a person starts a job (202 over REST); the job is read back by its id.
    const del = await rpc("IdentityService", "deleteUser")({ projectId: p.projectId, userId: "u-1" }, cookie);
    assert.match(del.res.data.jobId, /^job_/);
    const job = await rpc("JobsService", "getJob")({ projectId: p.projectId, jobId: del.res.data.jobId }, cookie);
    assert.equal(job.res.data.jobId, del.res.data.jobId);
    assert.ok(["pending", "running", "succeeded"].includes(job.res.data.status), job.res.data.status);

    const metric = await rpc("MetricsService", "recordMetric")(
      { projectId: p.projectId, type: "measurement", name: "latency", value: { numberValue: 12.5 } },
      bearer(),
    );
    assert.ok(metric.res.data);

    const mon = await rpc("UptimeService", "createMonitor")(
      { projectId: p.projectId, name: "Cron", slug: "cron-job", expectedIntervalMs: 60_000 },
      cookie,
    );
    assert.equal(mon.res.data.slug, "cron-job");
    assert.equal(Number(mon.res.data.expectedIntervalMs), 60_000);
    await rpc("UptimeService", "sendHeartbeat")({ projectId: p.projectId, monitorSlug: "cron-job" }, bearer());
    // The ping URL's RPC: a ping key in the message, no metadata.
    const ping = await pingKey(t.rest, p);
    const pinged = await rpc("PingService", "ping")({ pingKey: ping.secret, monitorSlug: "cron-job" });
    assert.equal(pinged.res.data.monitor.slug, "cron-job");

    const hooks = await rpc("WebhookService", "listWebhooks")({ projectId: p.projectId }, cookie);
    assert.deepEqual(hooks.res.data, []);

    const alerts = await rpc("AlertService", "listAlerts")({ projectId: p.projectId }, bearer());
    assert.deepEqual(alerts.res.data, []);

    const page = await rpc("PageService", "createPage")(
      { projectId: p.projectId, slug: "grpc-js-page", title: "Status", monitors: [{ monitorId: mon.res.data.id }] },
      cookie,
    );
    assert.equal(page.res.data.monitors[0].monitorId, mon.res.data.id);
    const subs = await rpc("PageSubscriberService", "listPageSubscribers")(
      { projectId: p.projectId, pageId: page.res.data.id },
      cookie,
    );
    assert.deepEqual(subs.res.data, []);

    // Public status pages: no credentials; the page above is not published yet, so NOT_FOUND.
    const publicPage = await grpcError(rpc("StatusService", "getStatusPage")({ slug: "grpc-js-page" }));
    assert.equal(publicPage.code, grpc.status.NOT_FOUND);

    assert.deepEqual([...called].sort(), Object.keys(services).sort(), "every vigil.v1 service is called");
  });

  it("answers a missing or revoked key with UNAUTHENTICATED, the exact message and ErrorInfo", async () => {
    const e1 = await grpcError(rpc("EventService", "ingestEvent")({ type: "x" }));
    assert.equal(e1.code, grpc.status.UNAUTHENTICATED);
    // grpc-js decodes grpc-message with decodeURI: only the gRPC spec's percent-encoding reads right.
    assert.equal(e1.details, "missing credentials: send an API key (Authorization: Bearer vk_...) or a session cookie");
    const d1 = statusDetails(e1);
    assert.equal(d1.code, grpc.status.UNAUTHENTICATED);
    assert.equal(d1.message, e1.details);
    assert.equal(d1.errorInfo?.reason, "unauthenticated");
    assert.equal(d1.errorInfo?.domain, "vigil.dev");
    assert.equal(e1.metadata.get("vigil-error-code")[0], "unauthenticated");

    const e2 = await grpcError(
      rpc("ProjectService", "listApiKeys")({ projectId: p.projectId }, { authorization: `Bearer ${revokedKey}` }),
    );
    assert.equal(e2.code, grpc.status.UNAUTHENTICATED);
    assert.equal(statusDetails(e2).errorInfo?.reason, "unauthenticated");
    assert.doesNotMatch(e2.details, /%[0-9A-F]{2}/, e2.details);
  });

  it("sends grpc-message so that non-ASCII text, % and reserved characters read back exactly", async () => {
    const name = "p99 % 100%25 — Latenz…ü 😀 a/b?c#d,e;f=g&h+i:j@k$";
    const e = await grpcError(rpc("MetricsService", "getCurrentMetric")({ projectId: p.projectId, name }, bearer()));
    assert.equal(e.code, grpc.status.NOT_FOUND);
    assert.equal(e.details, `metric '${name}' not found`);
    assert.equal(statusDetails(e).message, e.details);
    assert.equal(statusDetails(e).errorInfo?.reason, "not_found");
  });

  it("answers a validation error with INVALID_ARGUMENT and the REST details as BadRequest field violations", async () => {
    const body = { name: "Bad", slug: "Not A Slug!", expectedIntervalMs: 60_000 };
    const rest = await t.rest.post(`/v1/projects/${p.projectId}/monitors`, body, { key: p.key });
    assert.equal(rest.status, 400);
    const e = await grpcError(rpc("UptimeService", "createMonitor")({ projectId: p.projectId, ...body }, bearer()));
    assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(e.details, rest.body.error.message);
    const d = statusDetails(e);
    assert.equal(d.errorInfo?.reason, rest.body.error.code);
    assert.ok(rest.body.error.details.length > 0);
    assert.deepEqual(
      d.badRequest?.fieldViolations.map((v) => ({ field: v.field, message: v.description })),
      rest.body.error.details,
    );
  });

  it("answers a rate limit with RESOURCE_EXHAUSTED, RetryInfo and retry-after that agree", async () => {
    const own = await project(t.rest);
    const identify = rpc("IdentityService", "identify");
    const md = { cookie: own.owner.cookie };
    for (let i = 0; i < 3; i++) await identify({ projectId: own.projectId, externalId: `u-${i}` }, md);
    const e = await grpcError(identify({ projectId: own.projectId, externalId: "u-over" }, md));
    assert.equal(e.code, grpc.status.RESOURCE_EXHAUSTED);
    const d = statusDetails(e);
    assert.equal(d.errorInfo?.reason, "rate_limited");
    const retryAfter = Number(e.metadata.get("retry-after")[0]);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `retry-after ${retryAfter}`);
    assert.equal(Number(d.retryInfo?.retryDelay?.seconds), retryAfter);
  });

  it("ends a call past its deadline with DEADLINE_EXCEEDED, and the server stays healthy", async () => {
    const c = client("AnalyticsService");
    const query = rpc("AnalyticsService", "queryEvents", c);
    const started = Date.now();
    const e = await grpcError(query({ projectId: p.projectId }, bearer(), { deadline: Date.now() + 1 }));
    assert.equal(e.code, grpc.status.DEADLINE_EXCEEDED);
    assert.ok(Date.now() - started < 2000, "no hang");
    // The same connection, and a fresh one, still serve.
    const ok = await query({ projectId: p.projectId }, bearer(), { deadline: Date.now() + 10_000 });
    assert.ok(Array.isArray(ok.res.data));
    assert.equal((await rpc("HealthService", "check")({})).res.status, "ok");
    assert.equal((await t.rest.get("/health")).status, 200);
  });

  it("refuses a message over MAX_BODY_BYTES with RESOURCE_EXHAUSTED, without hanging", async () => {
    const started = Date.now();
    const e = await grpcError(
      rpc("EventService", "ingestEvent")(
        { type: "big", data: struct({ blob: "x".repeat(MAX_BODY + 1024) }) },
        bearer(),
        { deadline: Date.now() + 10_000 },
      ),
    );
    assert.equal(e.code, grpc.status.RESOURCE_EXHAUSTED, `${e.code} ${e.details}`);
    assert.equal(statusDetails(e).errorInfo?.reason, "payload_too_large");
    assert.ok(Date.now() - started < 5000);
    // The client's own receive limit ends an answer too large for it the same way.
    const small = client("EventService", { "grpc.max_receive_message_length": 64 });
    const list = await grpcError(rpc("EventService", "listEvents", small)({ projectId: p.projectId }, bearer()));
    assert.equal(list.code, grpc.status.RESOURCE_EXHAUSTED);
  });

  it("compresses requests and responses with gzip (grpc.default_compression_algorithm)", async () => {
    // 40 KB of repetitive text: a few hundred bytes once gzipped.
    const text = "the quick brown fox jumps over the lazy dog ".repeat(1000);
    const plain = client("EventService");
    const gzip = client("EventService", { "grpc.default_compression_algorithm": grpc.compressionAlgorithms.gzip });
    const send = async (c: grpc.Client) => {
      proxy.reset();
      const r = await rpc("EventService", "ingestEvent", c)({ type: "compressible", data: struct({ text }) }, bearer());
      return { up: proxy.up, id: r.res.data.id as string };
    };
    await send(plain); // connections set up before measuring
    await send(gzip);
    const a = await send(plain);
    const b = await send(gzip);
    assert.ok(a.up > text.length, `uncompressed request: ${a.up} bytes`);
    assert.ok(b.up < text.length / 4, `gzip request: ${b.up} bytes`);
    const got = await rpc("EventService", "getEvent", gzip)({ projectId: p.projectId, eventId: b.id }, bearer());
    assert.equal(got.res.data.data.fields.text.stringValue, text, "the server read the decompressed message");

    // The answer: compressed (grpc-js accepts gzip and strips grpc-encoding from what it hands
    // over, so the bytes on the wire tell), and decoded by grpc-js.
    proxy.reset();
    const listed = await rpc(
      "EventService",
      "listEvents",
      gzip,
    )({ projectId: p.projectId, type: "compressible" }, bearer());
    assert.equal(listed.res.data.length, 4);
    for (const e of listed.res.data) assert.equal(e.data.fields.text.stringValue, text);
    assert.ok(proxy.down < text.length, `gzip response: ${proxy.down} bytes for 4 events of ${text.length} chars`);
  });

  it("serves 200 concurrent calls on one connection", async () => {
    const c = client("EventService");
    const ingest = rpc("EventService", "ingestEvent", c);
    await ingest({ type: "warmup" }, bearer());
    const before = proxy.connections;
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        ingest({ type: "concurrent", data: struct({ i }) }, bearer(), { deadline: Date.now() + 30_000 }),
      ),
    );
    assert.equal(new Set(results.map((r) => r.res.data.id)).size, 200);
    assert.equal(proxy.connections, before, "no new connection was opened");
  });
});
