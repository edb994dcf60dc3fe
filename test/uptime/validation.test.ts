import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import { errorBody, project, signup, type ProjectFixture } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// Every refusal of the uptime routes is a clean 4xx with the decisions.md error body.

let other: ProjectFixture;
let monitorId: string;
let incidentId: string;
const { t, p } = useProject({}, {}, async () => {
  other = await project(t.rest);
  const m = await t.rest.post(`/v1/projects/${p.projectId}/monitors`, { name: "Main", slug: "main" }, { key: p.key });
  monitorId = m.body.data.id;
  const down = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/main`, { status: "down" }, { key: p.key });
  assert.equal(down.status, 200, down.text);
  incidentId = (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${monitorId}/incidents`, { key: p.key })).body
    .data[0].id;
});

const base = () => `/v1/projects/${p.projectId}`;
async function refused(method: string, path: string, body: unknown, status: number, field?: string) {
  const r = await t.rest.req(method, path, { key: p.key, body });
  assert.equal(r.status, status, `${method} ${path} ${JSON.stringify(body)}: ${r.text}`);
  const e = errorBody(r);
  if (field) assert.ok(JSON.stringify(e.details ?? "").includes(`"${field}"`), `details name ${field}: ${r.text}`);
  assert.ok(!/select|insert|stack|at .*\.ts/i.test(r.text), "no SQL or stack in the body");
  return e;
}

describe("monitor validation", () => {
  it("creates with the spec's defaults", async () => {
    const r = await t.rest.post(`${base()}/monitors`, { name: "Defaults" }, { key: p.key });
    assert.equal(r.status, 201);
    const d = r.body.data;
    assert.deepEqual(
      [d.type, d.status, d.expectedIntervalMs, d.gracePeriodMs, d.timeUp, d.lastHeartbeatAt],
      ["heartbeat", "unknown", 60000, 30000, 0, null],
    );
    assert.deepEqual([d.metadata, d.tags], [{}, {}]);
    // A slug made from a name that is taken gets a suffix; an explicit duplicate slug is a 409.
    const again = await t.rest.post(
      `${base()}/monitors`,
      { name: "Defaults", type: "cron", metadata: { team: "ops" }, tags: { env: "prod" } },
      { key: p.key },
    );
    assert.equal(again.body.data.slug, "defaults-2");
    assert.deepEqual(again.body.data.tags, { env: "prod" });
    const dup = await refused("POST", `${base()}/monitors`, { name: "X", slug: "main" }, 409, "slug");
    assert.equal(dup.code, "conflict");
  });

  for (const [label, body, field] of [
    ["missing name", {}, "name"],
    ["blank name", { name: "   " }, "name"],
    ["name of wrong type", { name: 42 }, "name"],
    ["name too long", { name: "x".repeat(201) }, "name"],
    ["unknown type", { name: "a", type: "ping" }, "type"],
    ["fractional interval", { name: "a", expectedIntervalMs: 1.5 }, "expectedIntervalMs"],
    ["interval too small", { name: "a", expectedIntervalMs: 10 }, "expectedIntervalMs"],
    ["interval as text", { name: "a", expectedIntervalMs: "soon" }, "expectedIntervalMs"],
    ["negative grace", { name: "a", gracePeriodMs: -1 }, "gracePeriodMs"],
    ["metadata not an object", { name: "a", metadata: [1, 2] }, "metadata"],
    ["tags not an object", { name: "a", tags: "x" }, "tags"],
    ["bad slug", { name: "a", slug: "no spaces!" }, "slug"],
    ["hostile slug", { name: "a", slug: "'; DROP TABLE monitors; --" }, "slug"],
    ["huge metadata", { name: "a", metadata: { blob: "x".repeat(20_000) } }, "metadata"],
    ["NUL in the name", { name: "a\u0000b" }, "name"],
    ["NUL in metadata", { name: "a", metadata: { k: ["x\u0000"] } }, "metadata.k[0]"],
    ["unpaired surrogate in tags", { name: "a", tags: { "\ud800": "x" } }, "tags"],
  ] as const) {
    it(`create refuses ${label} with 400`, async () => {
      const e = await refused("POST", `${base()}/monitors`, body, 400, field);
      assert.equal(e.code, "validation_failed");
    });
  }

  it("patch refuses bad fields, a duplicate slug and unknown ids", async () => {
    await refused("PATCH", `${base()}/monitors/${monitorId}`, { expectedIntervalMs: 0 }, 400, "expectedIntervalMs");
    await refused("PATCH", `${base()}/monitors/${monitorId}`, { name: "" }, 400, "name");
    await t.rest.post(`${base()}/monitors`, { name: "Taken", slug: "taken" }, { key: p.key });
    await refused("PATCH", `${base()}/monitors/${monitorId}`, { slug: "taken" }, 409, "slug");
    await refused("PATCH", `${base()}/monitors/mon_nope`, { name: "x" }, 404);
    for (const path of ["", "/status", "/history", "/stats", "/heartbeats", "/incidents"])
      await refused("GET", `${base()}/monitors/mon_nope${path}`, undefined, 404);
    await refused("POST", `${base()}/monitors/mon_nope/pause`, {}, 404);
    await refused("POST", `${base()}/monitors/mon_nope/resume`, {}, 404);
    await refused("DELETE", `${base()}/monitors/mon_nope`, undefined, 404);
  });

  it("refuses malformed JSON and non-JSON bodies", async () => {
    const bad = await t.rest.req("POST", `${base()}/monitors`, {
      key: p.key,
      raw: "{name:",
      contentType: "application/json",
    });
    assert.equal(bad.status, 400);
    errorBody(bad);
    const text = await t.rest.req("POST", `${base()}/heartbeats/main`, {
      key: p.key,
      raw: "ping",
      contentType: "text/plain",
    });
    assert.equal(text.status, 415);
    errorBody(text);
  });
});

describe("heartbeat validation", () => {
  it("normalizes the slug's case and accepts an empty JSON body", async () => {
    const r = await t.rest.post(`${base()}/heartbeats/Billing-Job`, {}, { key: p.key });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.monitor.slug, "billing-job");
  });

  it("refuses an absent body with an API key too (415, as the document's requestBody.required says)", async () => {
    const r = await t.rest.req("POST", `${base()}/heartbeats/no-body`, { key: p.key });
    assert.equal(r.status, 415, r.text);
    assert.equal(errorBody(r).code, "unsupported_media_type");
  });

  for (const [label, slug, body, field] of [
    ["unknown status", "main", { status: "sideways" }, "status"],
    ["negative latency", "main", { latencyMs: -5 }, "latencyMs"],
    ["latency as text", "main", { latencyMs: "fast" }, "latencyMs"],
    ["metadata array", "main", { metadata: ["x"] }, "metadata"],
    ["NUL in metadata", "main", { metadata: { e: "\u0000" } }, "metadata.e"],
    ["zero interval", "main", { expectedIntervalMs: 0 }, "expectedIntervalMs"],
    ["slug with spaces", "bad%20slug", {}, "monitorSlug"],
    ["hostile slug", encodeURIComponent("x'; DELETE FROM monitors; --"), {}, "monitorSlug"],
    ["slug too long", "a".repeat(150), {}, "monitorSlug"],
    ["slug starting with a dash", "-job", {}, "monitorSlug"],
  ] as const) {
    it(`refuses ${label} with 400`, async () => {
      await refused("POST", `${base()}/heartbeats/${slug}`, body, 400, field);
    });
  }
});

describe("incident, list, stats and history validation", () => {
  it("PATCH incident: at least one field; empty string clears; unknown id 404", async () => {
    await refused("PATCH", `${base()}/incidents/${incidentId}`, {}, 400, "title");
    await refused("PATCH", `${base()}/incidents/${incidentId}`, { title: 5 }, 400, "title");
    await refused(
      "PATCH",
      `${base()}/incidents/${incidentId}`,
      { description: "x".repeat(10_001) },
      400,
      "description",
    );
    await refused("PATCH", `${base()}/incidents/${incidentId}`, { title: "bad \udc00 text" }, 400, "title");
    await refused("PATCH", `${base()}/incidents/inc_nope`, { title: "x" }, 404);
    const set = await t.rest.patch(
      `${base()}/incidents/${incidentId}`,
      { title: "DB down", description: "disk full" },
      { key: p.key },
    );
    assert.equal(set.status, 200, set.text);
    assert.deepEqual([set.body.data.title, set.body.data.description], ["DB down", "disk full"]);
    const clear = await t.rest.patch(`${base()}/incidents/${incidentId}`, { title: "" }, { key: p.key });
    assert.deepEqual([clear.body.data.title, clear.body.data.description], [null, "disk full"]);
  });

  for (const [label, query, field] of [
    ["heartbeats: from without timezone", `heartbeats?from=2024-01-01T00:00:00`, "from"],
    ["heartbeats: to not a time", `heartbeats?to=yesterday`, "to"],
    ["heartbeats: limit 0", `heartbeats?limit=0`, "limit"],
    ["heartbeats: limit too big", `heartbeats?limit=5000`, "limit"],
    ["incidents: limit not a number", `incidents?limit=lots`, "limit"],
    ["stats: bad period", `stats?period=7x`, "period"],
    ["stats: zero period", `stats?period=0d`, "period"],
    ["stats: period and from", `stats?period=7d&from=2024-01-01T00:00:00Z`, "period"],
    ["stats: from after to", `stats?from=2024-02-01T00:00:00Z&to=2024-01-01T00:00:00Z`, "from"],
    ["stats: from without timezone", `stats?from=2024-01-01T00:00:00`, "from"],
    ["history: unknown window", `history?window=1y`, "window"],
  ] as const) {
    it(`refuses ${label} with 400`, async () => {
      await refused("GET", `${base()}/monitors/${monitorId}/${query}`, undefined, 400, field);
    });
  }
});

describe("access", () => {
  it("no credentials 401; revoked key 401; another tenant's monitor and incident 404; a member's session works", async () => {
    const none = await t.rest.get(`${base()}/monitors`);
    assert.equal(none.status, 401);
    assert.equal(errorBody(none).code, "unauthenticated");
    // Each write with a valid body of its own (an unknown field would be a 400 before any lookup).
    const foreign: [string, string, object?][] = [
      ["GET", `/v1/projects/${p.projectId}/monitors`],
      ["GET", `/v1/projects/self/monitors/${monitorId}`],
      ["GET", `/v1/projects/self/monitors/${monitorId}/stats`],
      ["PATCH", `/v1/projects/self/monitors/${monitorId}`, { name: "x" }],
      ["DELETE", `/v1/projects/self/monitors/${monitorId}`],
      ["POST", `/v1/projects/self/monitors/${monitorId}/pause`, {}],
      ["PATCH", `/v1/projects/self/incidents/${incidentId}`, { title: "x" }],
    ];
    for (const [m, path, body] of foreign) {
      const r = await t.rest.req(m, path, { key: other.key, body });
      assert.equal(r.status, 404, `${m} ${path}: ${r.text}`);
      assert.equal(errorBody(r).code, "not_found");
    }
    // The other tenant's heartbeat to the same slug creates ITS monitor, never touches ours.
    const theirs = await t.rest.post(`/v1/projects/self/heartbeats/main`, {}, { key: other.key });
    assert.notEqual(theirs.body.data.monitor.id, monitorId);
    assert.equal((await t.rest.get(`${base()}/monitors/${monitorId}/status`, { key: p.key })).body.data.status, "down");

    const stranger = await signup(t.rest, "stranger");
    assert.equal((await t.rest.get(`${base()}/monitors`, { cookie: stranger.cookie })).status, 404);
    assert.equal((await t.rest.get(`${base()}/monitors`, { cookie: p.owner.cookie })).status, 200);

    const fresh = await project(t.rest);
    await t.rest.del(`/v1/projects/${fresh.projectId}/api-keys/${fresh.keyId}`, { cookie: fresh.owner.cookie });
    const revoked = await t.rest.post(`/v1/projects/self/heartbeats/x`, {}, { key: fresh.key });
    assert.equal(revoked.status, 401);
    assert.equal(errorBody(revoked).code, "unauthenticated");
  });
});

describe("gRPC", () => {
  it("sends a heartbeat and reads status and overview through a real gRPC client", async () => {
    const c = createClient(UptimeService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${p.key}` };
    const r = await c.sendHeartbeat({ projectId: "self", monitorSlug: "grpc-job", latencyMs: 3 }, { headers });
    assert.equal(r.data?.accepted, true);
    assert.equal(r.data?.statusChanged, true);
    assert.equal(r.data?.monitor?.status, "up");
    const s = await c.getMonitorStatus({ projectId: "self", monitorId: r.data!.monitor!.id }, { headers });
    assert.equal(s.data?.status, "up");
    const o = await c.getMonitorsOverview({ projectId: "self" }, { headers });
    const mine = o.data.find((x) => x.id === r.data!.monitor!.id)!;
    assert.deepEqual([mine.slug, mine.status, mine.uptimePercentage24h], ["grpc-job", "up", 100]);
    await assert.rejects(
      c.sendHeartbeat({ projectId: "self", monitorSlug: "grpc-job", status: "maybe" }, { headers }),
      (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
    );
    await assert.rejects(
      c.getMonitor({ projectId: "self", monitorId: "mon_nope" }, { headers }),
      (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound,
    );
  });
});
