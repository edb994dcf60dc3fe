import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { OPENAPI_PATH } from "../../src/server/docs.js";
import { GENEROUS_LIMITS, startTestApp, type TestApp } from "../helpers/app.js";
import { pingKey, project, signup, type ProjectFixture } from "../helpers/fixtures.js";
import type { ReqOpts, Res } from "../helpers/rest.js";
import { Receiver, waitFor } from "../webhooks/receiver.js";
import {
  byId,
  checkResponse,
  coverage,
  doc,
  fillPath,
  hasScheme,
  operations,
  type Json,
  type Operation,
} from "./openapi-check.js";

// Every REST operation of the OpenAPI document (gen/openapi.json) driven over the real port: a
// realistic request that succeeds, and the errors the document's own rules predict (no
// credentials, the wrong kind of credentials, an unknown project, a non-JSON body...). Each
// response is validated against the document's schema for its status. An operation of the
// document that no request here reached fails the last test, so a new route needs coverage.

const run = promisify(execFile);

let t: TestApp;
let p: ProjectFixture;
let rx: Receiver;
/** The path parameters each operation succeeded with (reused by the error probes). */
const used = new Map<string, Record<string, string>>();

type Auth = "key" | "cookie" | "none" | { key: string } | { cookie: string };
interface Call {
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  raw?: string;
  contentType?: string;
  auth?: Auth;
}

function op(id: string): Operation {
  const o = byId.get(id);
  assert.ok(o, `operation ${id} is not in the document`);
  return o;
}

/** The credentials the document names first for the operation: an API key where allowed. */
const defaultAuth = (o: Operation): Auth =>
  hasScheme(o, "apiKey") ? "key" : hasScheme(o, "session") ? "cookie" : "none";

async function call(id: string, c: Call = {}): Promise<Res> {
  const o = op(id);
  const params = { projectId: p.projectId, ...c.params };
  let url = fillPath(o.path, params);
  if (c.query) url += "?" + new URLSearchParams(c.query).toString();
  const auth = c.auth ?? defaultAuth(o);
  const opts: ReqOpts = {};
  if (auth === "key") opts.key = p.key;
  else if (auth === "cookie") opts.cookie = p.owner.cookie;
  else if (typeof auth === "object") Object.assign(opts, auth);
  if (c.raw !== undefined) {
    opts.raw = c.raw;
    opts.contentType = c.contentType;
  } else if (c.body !== undefined) opts.body = c.body;
  else if (o.op.requestBody?.required) opts.body = {}; // the document requires a body: `{}` at least
  const res = await t.rest.req(o.verb, url, opts);
  checkResponse(o, res);
  return res;
}

/** A call that must succeed with the operation's documented success status. */
async function ok(id: string, c: Call = {}): Promise<Json> {
  const res = await call(id, c);
  const expected = Object.keys(op(id).op.responses).find((s) => s.startsWith("2"));
  assert.equal(String(res.status), expected, `${id}: ${res.status} ${res.text.slice(0, 300)}`);
  used.set(id, { projectId: p.projectId, ...c.params });
  return res.body;
}

const WINDOW = { start: "2020-01-01T00:00:00Z", end: "2100-01-01T00:00:00Z" };

before(async () => {
  t = await startTestApp({ ...GENEROUS_LIMITS, WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_BACKOFF_BASE_MS: "60000" });
  p = await project(t.rest);
  rx = await Receiver.start();
});

after(async () => {
  await rx?.close();
  await t?.close();
});

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(JSON.parse(readFileSync(OPENAPI_PATH, "utf8")));
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1));
    assert.equal(doc.openapi, "3.1.0");
  });

  it("is served at GET /openapi.json as committed", async () => {
    const r = await fetch(`${t.url}/openapi.json`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal(await r.text(), readFileSync(OPENAPI_PATH, "utf8"));
    const post = await fetch(`${t.url}/openapi.json`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    // decisions.md "Corrections from the second round": 405 with Allow on a path that exists.
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET, HEAD");
    assert.equal((await post.json()).error.code, "method_not_allowed");
  });

  it("describes operations from the proto comments and says who may call them", () => {
    const ingest = op("IngestEvent").op;
    assert.match(ingest.description, /One event\. Answers 202/);
    assert.deepEqual(ingest.security, [{ apiKey: [] }]);
    assert.deepEqual(op("Check").op.security, []);
    assert.deepEqual(op("ListMembers").op.security, [{ session: [] }]);
    assert.deepEqual(op("ListEvents").op.security, [{ apiKey: [] }, { session: [] }]);
    assert.ok(op("Login").op.responses["429"], "login is rate limited");
  });
});

describe("GET /docs", () => {
  it("is an HTML page whose scripts and styles all come from Vigil itself, under a strict CSP", async () => {
    const r = await fetch(`${t.url}/docs`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /^text\/html/);
    const csp = r.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/, "no inline or remote scripts");
    assert.match(csp, /connect-src 'self'/);
    const html = await r.text();
    assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]/, "no inline script");
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    assert.ok(urls.length >= 3, html);
    for (const u of urls) {
      assert.match(u, /^\/[^/]/, `${u} is served by Vigil itself`);
      const a = await fetch(t.url + u);
      assert.equal(a.status, 200, u);
      assert.ok((await a.arrayBuffer()).byteLength > 0, u);
    }
    const types = await Promise.all(
      ["/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css"].map(async (u) =>
        (await fetch(t.url + u)).headers.get("content-type"),
      ),
    );
    assert.deepEqual(
      types.map((x) => x?.split(";")[0]),
      ["text/javascript", "text/css"],
    );
    assert.match(await (await fetch(`${t.url}/docs/assets/init.js`)).text(), /url: "\/openapi\.json"/);
    assert.equal((await fetch(`${t.url}/docs/assets/nope.js`)).status, 404);
  });

  it("renders every operation in a real browser under that CSP (when Chromium is installed)", async (ctx) => {
    if (!existsSync(CHROMIUM)) return ctx.skip(`${CHROMIUM} not installed`);
    const dom = await renderedDom(`${t.url}/docs`);
    // Rendered by Swagger UI's script (not in the served HTML): the title and every operation.
    assert.match(dom, /Vigil API/);
    for (const o of operations)
      assert.ok(dom.includes(`operations-${o.op.tags[0]}-${o.id}`), `${o.id} is not rendered`);
  });
});

const CHROMIUM = "/usr/bin/chromium";

/** The page's DOM after its scripts ran (Chromium headless; a CSP violation would leave it empty). */
async function renderedDom(url: string): Promise<string> {
  const args = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--virtual-time-budget=15000",
    "--dump-dom",
    url,
  ];
  const { stdout } = await run(CHROMIUM, args, { timeout: 60_000, maxBuffer: 64 << 20 });
  return stdout;
}

describe("every operation against the document", () => {
  it("health, accounts and sessions", async () => {
    await ok("Check");
    const email = `openapi-${Date.now()}@example.com`;
    const su = await t.rest.post("/v1/auth/signup", { email, password: "correct horse battery", name: "Ada" });
    checkResponse(op("Signup"), su);
    assert.equal(su.status, 201);
    used.set("Signup", {});
    const login = await ok("Login", { body: { email, password: "correct horse battery" }, auth: "none" });
    assert.equal(login.data.email, email);
    // An error the operation decides itself: documented by `default`, in the same body.
    const wrong = await call("Login", { body: { email, password: "not the password" }, auth: "none" });
    assert.equal(wrong.status, 401, wrong.text);
    assert.equal(wrong.body.error.code, "invalid_credentials");
    await ok("Me", { auth: "cookie" });
    const state = await ok("GetSignupState", { auth: "none" });
    assert.equal(state.data.accountsExist, true);
    // Logout ends the session of an account of its own (the fixture's session stays valid).
    const other = await signup(t.rest, "leaver");
    await ok("Logout", { auth: { cookie: other.cookie } });
  });

  it("projects, members and API keys", async () => {
    const created = await ok("CreateProject", { body: { name: "Docs", platform: "node" } });
    await ok("ListProjects");
    await ok("GetProject");
    await ok("UpdateProject", { body: { name: "Renamed" } });
    const key = await ok("CreateApiKey", { body: { name: "ci", environment: "development" } });
    await ok("ListApiKeys");
    await ok("RevokeApiKey", { params: { keyId: key.data.id } });
    const m = await signup(t.rest, "member");
    const added = await ok("AddMember", { body: { email: m.email, role: "member" } });
    await ok("UpdateMember", { params: { userId: added.data.userId }, body: { role: "admin" } });
    await ok("ListMembers");
    await ok("RemoveMember", { params: { userId: added.data.userId } });
    await ok("DeleteProject", { params: { projectId: created.data.id } });
  });

  it("events and users", async () => {
    const ev = await ok("IngestEvent", {
      body: { type: "order.paid", userId: "u1", data: { amount: 5 }, tags: { shop: "eu" } },
    });
    await ok("IngestEventBatch", {
      body: {
        events: [
          { type: "page", userId: "u1" },
          { type: "page", userId: "u2", data: { path: "/" } },
        ],
      },
    });
    await ok("ListEvents", { query: { limit: "10" } });
    await ok("GetEvent", { params: { eventId: ev.data.id } });
    await ok("Identify", { body: { externalId: "u1", properties: { plan: "pro" } } });
    await ok("ListUsers", { query: { limit: "5" } });
    await ok("GetUser", { params: { userId: "u1" } });
    await ok("ExportUser", { params: { userId: "u1" } });
    const deletion = await ok("DeleteUser", { params: { userId: "u2" } });
    await ok("GetJob", { params: { jobId: deletion.data.jobId } });
  });

  it("analytics", async () => {
    await ok("QueryEvents", {
      body: { filters: { field: "type", operator: "equals", value: "order.paid" }, pagination: { limit: 10 } },
    });
    await ok("ExportEvents", { body: { time: WINDOW } });
    await ok("ExportEvents", { body: { format: "csv", columns: ["id", "data.amount"] } });
    await ok("Count", { body: { time: WINDOW } });
    await ok("Timeseries", {
      body: { interval: "day", time: { start: "2020-01-01T00:00:00Z", end: "2020-01-03T00:00:00Z" } },
    });
    await ok("Aggregate", {
      body: {
        time: WINDOW,
        aggregations: [
          { name: "n", operation: "count" },
          { name: "avg", operation: "avg", field: "amount" },
        ],
      },
    });
    await ok("Unique", { body: { field: "type", time: WINDOW } });
    await ok("Group", { body: { groupBy: ["type"], time: WINDOW } });
    await ok("Group", {
      body: { groupBy: ["type"], time: WINDOW, aggregations: [{ name: "total", operation: "sum", field: "amount" }] },
    });
    await ok("Timeseries", {
      body: {
        interval: "day",
        time: { start: "2020-01-01T00:00:00Z", end: "2020-01-03T00:00:00Z" },
        aggregation: { operation: "avg", field: "amount" },
      },
    });
    const step = { filters: { field: "type", operator: "equals", value: "order.paid" } };
    await ok("Funnel", { body: { steps: [step, step], time: WINDOW, windowMs: 3600000 } });
    await ok("Retention", { body: { start: step, return: step, interval: "week", periods: 4, time: WINDOW } });
    await ok("ListFields", {});
  });

  it("metrics", async () => {
    await ok("RecordMetric", { body: { type: "measurement", name: "latency", value: 7, unit: "ms" } });
    const batch = await ok("RecordMetricBatch", {
      body: {
        metrics: [
          { type: "increment", name: "orders", value: 2 },
          { type: "measurement", name: "latency", value: 9 },
        ],
      },
    });
    assert.equal(batch.data.rejected, 0, JSON.stringify(batch.data));
    await ok("QueryMetric", { body: { name: "latency", time: WINDOW } });
    await ok("GetMetricTimeseries", {
      body: { name: "latency", interval: "1d", time: { start: "2020-01-01T00:00:00Z", end: "2020-01-03T00:00:00Z" } },
    });
    await ok("ListMetricPoints", { body: { name: "latency", time: WINDOW } });
    // Recorded points reach the read side through the ingestor's next flush.
    await waitFor(
      async () => (await call("GetCurrentMetric", { body: { name: "orders" } })).status === 200,
      "the counter is readable",
    );
    await ok("GetCurrentMetric", { body: { name: "orders" } });
    await ok("ListMetrics");
  });

  it("webhooks", async () => {
    const url = rx.on("/hook", () => ({ status: 500, body: "no" }));
    const w = await ok("CreateWebhook", { body: { name: "Orders", type: "http", url, events: ["order.paid"] } });
    const webhookId = w.data.id;
    await ok("ListWebhooks");
    const types = await ok("ListWebhookTypes");
    assert.ok(types.data.some((x: { type: string }) => x.type === "mattermost"));
    await ok("GetWebhook", { params: { webhookId } });
    await ok("UpdateWebhook", { params: { webhookId }, body: { name: "Paid orders" } });
    await ok("RotateWebhookSecret", { params: { webhookId }, body: { overlapSeconds: 60 } });
    const test = await ok("TestWebhook", { params: { webhookId }, body: { data: { hello: "world" } } });
    await waitFor(async () => {
      const r = await call("ListDeliveries", { params: { webhookId } });
      return r.body.data.find(
        (d: Json) =>
          d.id === test.data.id && d.attempts.length > 0 && d.status !== "pending" && d.status !== "in_progress",
      );
    }, "the test delivery's first attempt");
    await ok("ListDeliveries", { params: { webhookId }, query: { limit: "10" } });
    await ok("GetDelivery", { params: { webhookId, deliveryId: test.data.id } });
    await ok("RetryDelivery", { params: { webhookId, deliveryId: test.data.id } });
    const recovery = await ok("RecoverDeliveries", {
      params: { webhookId },
      body: { since: "2026-01-01T00:00:00Z" },
    });
    assert.equal(recovery.data.kind, "webhook.recover");
    await ok("DeleteWebhook", { params: { webhookId } });
  });

  it("uptime", async () => {
    const m = await ok("CreateMonitor", {
      body: { name: "Nightly job", expectedIntervalMs: 3_600_000, gracePeriodMs: 0, tags: { team: "ops" } },
    });
    const monitorId = m.data.id;
    await ok("ListMonitors");
    await ok("GetMonitorsOverview");
    await ok("GetMonitor", { params: { monitorId } });
    await ok("GetMonitorStatus", { params: { monitorId } });
    await ok("UpdateMonitor", { params: { monitorId }, body: { name: "Nightly backup" } });
    await ok("SendHeartbeat", { params: { monitorSlug: m.data.slug }, body: { latencyMs: 12 } });
    await ok("SendHeartbeat", {
      params: { monitorSlug: m.data.slug },
      body: { status: "down", metadata: { error: "disk full" } },
    });
    await ok("ListHeartbeats", { params: { monitorId }, query: { limit: "10" } });
    // The ping URLs: the ping key in the path, no header.
    const ping = await pingKey(t.rest, p);
    await ok("Ping", { params: { pingKey: ping.secret, monitorSlug: m.data.slug }, auth: "none" });
    await ok("PingPost", {
      params: { pingKey: ping.secret, monitorSlug: m.data.slug },
      body: { latencyMs: 7 },
      auth: "none",
    });
    const incidents = await ok("ListIncidents", { params: { monitorId } });
    assert.ok(incidents.data.length > 0, "the down heartbeat opened an incident");
    await ok("UpdateIncident", { params: { incidentId: incidents.data[0].id }, body: { title: "Backup disk full" } });
    await ok("GetMonitorStats", { params: { monitorId } });
    await ok("GetMonitorHistory", { params: { monitorId } });
    // Cron jobs: a schedule, run signals and the run list.
    await ok("UpdateMonitor", {
      params: { monitorId },
      body: { schedule: { cron: "0 3 * * *", timezone: "Europe/Berlin" }, maxRuntimeMs: 60_000, failureTolerance: 1 },
    });
    await ok("GetMonitorSchedule", { params: { monitorId }, query: { count: "3" } });
    await ok("StartRun", { params: { monitorSlug: m.data.slug }, body: { runId: "n1" } });
    await ok("ExitRun", { params: { monitorSlug: m.data.slug, code: "0" }, body: { runId: "n1", output: "done" } });
    await ok("FailRun", { params: { monitorSlug: m.data.slug }, body: { output: "boom" } });
    const pinged = { pingKey: ping.secret, monitorSlug: m.data.slug };
    await ok("PingSignal", { params: { ...pinged, signal: "start" }, query: { runId: "p1" }, auth: "none" });
    await ok("PingExitPost", { params: { ...pinged, code: "0" }, body: { runId: "p1" }, auth: "none" });
    await ok("PingSignalPost", { params: { ...pinged, signal: "start" }, body: { runId: "p2" }, auth: "none" });
    await ok("PingExit", { params: { ...pinged, code: "2" }, query: { runId: "p2" }, auth: "none" });
    await ok("PingSignal", { params: { ...pinged, signal: "fail" }, auth: "none" });
    await ok("ListRuns", { params: { monitorId }, query: { limit: "10" } });
    await ok("PauseMonitor", { params: { monitorId } });
    await ok("ResumeMonitor", { params: { monitorId } });
    await ok("DeleteMonitor", { params: { monitorId } });
  });

  it("status pages and incident updates", async () => {
    const m = await t.rest.post(`/v1/projects/${p.projectId}/monitors`, { name: "Status API" }, { key: p.key });
    assert.equal(m.status, 201, m.text);
    const down = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/${m.body.data.slug}`,
      { status: "down" },
      {
        key: p.key,
      },
    );
    assert.equal(down.status, 200, down.text);
    const incidents = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${m.body.data.id}/incidents`, {
      key: p.key,
    });
    const incidentId = incidents.body.data[0].id;
    await ok("CreateIncidentUpdate", { params: { incidentId }, body: { message: "Investigating" } });
    await ok("ListIncidentUpdates", { params: { incidentId } });
    await ok("GetIncident", { params: { incidentId } });
    // A manual incident (docs/uptime.md "Manual incidents"), moved along by an update with a status.
    const manual = await ok("CreateIncident", {
      body: {
        title: "Payments degraded",
        impact: "minor",
        monitorIds: [m.body.data.id],
        status: "investigating",
        message: "Looking into it",
      },
    });
    await ok("CreateIncidentUpdate", {
      params: { incidentId: manual.data.id },
      body: { message: "Fixed", status: "resolved" },
    });
    await ok("ListProjectIncidents", { query: { limit: "10" } });
    // Maintenance windows (docs/uptime.md "Maintenance windows"): one-off and recurring.
    const soon = Date.now() + 86_400_000;
    const win = await ok("CreateMaintenance", {
      body: {
        title: "Database upgrade",
        description: "Postgres 17",
        monitorIds: [m.body.data.id],
        startsAt: new Date(soon).toISOString(),
        endsAt: new Date(soon + 3_600_000).toISOString(),
      },
    });
    await ok("CreateMaintenance", {
      body: {
        title: "Nightly backup",
        monitorIds: [m.body.data.id],
        schedule: { cron: "0 3 * * *", timezone: "Europe/Berlin", durationMs: 1_800_000 },
      },
    });
    await ok("ListMaintenances");
    await ok("GetMaintenance", { params: { maintenanceId: win.data.id } });
    await ok("UpdateMaintenance", { params: { maintenanceId: win.data.id }, body: { title: "Database upgrade (17)" } });
    await ok("DeleteMaintenance", { params: { maintenanceId: win.data.id } });
    const page = await ok("CreatePage", {
      body: {
        slug: `docs-${Date.now()}`,
        title: "Acme status",
        description: "Our services",
        monitors: [{ monitorId: m.body.data.id, name: "API", section: "Public" }],
      },
    });
    const pageId = page.data.id;
    await ok("ListPages");
    await ok("GetPage", { params: { pageId } });
    // Published, the page is public: no credentials.
    await ok("UpdatePage", { params: { pageId }, body: { published: true } });
    const status = await ok("GetStatusPage", { params: { slug: page.data.slug }, auth: "none" });
    assert.equal(status.data.monitors[0].name, "API");
    assert.equal(status.data.monitors[0].days.length, 90);
    const missing = await call("GetStatusPage", { params: { slug: "no-such-page" }, auth: "none" });
    assert.equal(missing.status, 404, missing.text);
    await ok("UpdatePage", { params: { pageId }, body: { description: null, published: true, monitors: [] } });
    // This app has no SMTP_URL (no public subscribe route): the subscriber is a row written here.
    await t.app.deps.db.query(
      `INSERT INTO page_subscribers (id, page_id, project_id, email, confirmed_at, created_at)
       VALUES ('psub_openapi0000000000000', $1, $2, 'reader@example.com', now(), now())`,
      [pageId, p.projectId],
    );
    const hook = await ok("CreatePageSubscriber", {
      params: { pageId },
      body: { url: "http://127.0.0.1:9/openapi-subscriber" },
    });
    assert.equal(hook.data.kind, "webhook");
    const subs = await ok("ListPageSubscribers", { params: { pageId }, query: { limit: "10" } });
    assert.equal(subs.data[0].status, "confirmed");
    assert.equal(subs.data[1].url, "http://127.0.0.1:9/openapi-subscriber");
    await ok("DeletePageSubscriber", { params: { pageId, subscriberId: subs.data[0].id } });
    await ok("DeletePage", { params: { pageId } });
  });

  it("alerts", async () => {
    const rule = {
      query: { source: "metric", name: "latency", aggregation: "p95" },
      condition: { operator: "gt", value: 500 },
      windowMs: 300_000,
    };
    const a = await ok("CreateAlert", {
      body: { ...rule, name: "Slow checkout", resolve: { operator: "lte", value: 300, forMs: 60_000 } },
    });
    const alertId = a.data.id;
    await ok("ListAlerts", { query: { limit: "10" } });
    await ok("GetAlert", { params: { alertId } });
    await ok("UpdateAlert", { params: { alertId }, body: { forMs: 120_000, resolve: null } });
    await ok("ListAlertEvaluations", { params: { alertId }, query: { limit: "10" } });
    await ok("PreviewAlert", {
      body: { ...rule, time: { start: "2024-03-04T10:00:00Z", end: "2024-03-04T11:00:00Z" } },
    });
    await ok("DeleteAlert", { params: { alertId } });
  });

  // The errors each operation's documented rules predict, with the parameters it succeeded with.
  it("errors: the document's rules, over every operation", async () => {
    for (const o of operations) {
      const params = used.get(o.id);
      assert.ok(params, `${o.id} has no successful request above: add one`);
      const named = (s: string) => o.op.responses[s] !== undefined;
      // Text parameters are checked before anything else: a NUL is a 400 on every route.
      const nul = await t.rest.req(
        o.verb,
        fillPath(o.path, params) + "?probe=%00",
        o.verb === "POST" || o.verb === "PATCH" ? { body: {} } : {},
      );
      checkResponse(o, nul);
      assert.equal(nul.status, 400, `${o.id}: NUL query parameter`);
      if (o.op.security.length) {
        const anon = await call(o.id, { params, auth: "none", body: o.op.requestBody ? {} : undefined });
        assert.equal(anon.status, 401, `${o.id}: without credentials`);
        assert.ok(named("401"));
      }
      if (o.op.security.length && !hasScheme(o, "apiKey")) {
        const r = await call(o.id, { params, auth: "key", body: o.op.requestBody ? {} : undefined });
        assert.ok(
          r.status === 403 || r.status === 401,
          `${o.id}: with an API key the document does not allow: ${r.status} ${r.text}`,
        );
        assert.ok(named(String(r.status)));
      }
      if (o.op.security.length && !hasScheme(o, "session")) {
        const r = await call(o.id, { params, auth: "cookie", body: o.op.requestBody ? {} : undefined });
        assert.equal(r.status, 403, `${o.id}: with a session the document does not allow: ${r.text}`);
        assert.ok(named("403"));
      }
      if (o.path.includes("{projectId}")) {
        const r = await call(o.id, {
          params: { ...params, projectId: "prj_unknown" },
          body: o.op.requestBody ? {} : undefined,
        });
        assert.equal(r.status, 404, `${o.id}: an unknown project: ${r.text}`);
        assert.ok(named("404"));
      }
      if (o.op.requestBody) {
        const text = await call(o.id, { params, raw: "x", contentType: "text/plain" });
        assert.equal(text.status, 415, `${o.id}: a text body: ${text.text}`);
        const array = await call(o.id, { params, raw: "[]", contentType: "application/json" });
        assert.equal(array.status, 400, `${o.id}: a JSON array body: ${array.text}`);
        assert.ok(named("415") && named("400"));
      }
    }
  });

  it("a rate-limited operation answers its documented 429 with Retry-After", async () => {
    const small = await startTestApp({ RATE_LIMIT_EVENTS_PER_MINUTE: "1" });
    try {
      const q = await project(small.rest);
      const o = op("IngestEvent");
      assert.deepEqual(o.op["x-vigil-rate-limits"], ["events"]);
      const first = await small.rest.post("/v1/events", { type: "a" }, { key: q.key });
      checkResponse(o, first);
      const second = await small.rest.post("/v1/events", { type: "a" }, { key: q.key });
      assert.equal(second.status, 429, second.text);
      checkResponse(o, second); // the documented Retry-After header is checked there
    } finally {
      await small.close();
    }
  });

  it("no operation of the document went without a validated success and a validated error", () => {
    const missing = operations
      .filter((o) => !coverage.get(o.id)?.success || !coverage.get(o.id)?.error)
      .map((o) => `${o.verb} ${o.path} (${o.id})`);
    assert.deepEqual(missing, [], "operations without a validated success and error response");
  });
});
