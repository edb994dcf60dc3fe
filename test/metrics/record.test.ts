import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { MetricsService } from "../../gen/vigil/v1/metrics_pb.js";
import { errorBody, memberOf, project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// Recording: POST .../metrics and .../metrics/batch over the real port, the 409 type rule,
// validation with the decisions.md error body, tenant isolation and credentials, gRPC.

const NOW = new Date("2024-03-20T12:00:00.000Z");
const { t, p } = useProject({}, { clock: () => NOW });

const path = (id = p.projectId) => `/v1/projects/${id}/metrics`;
const record = (body: unknown, key = p.key) => t.rest.post(path(), body, { key });
const current = (name: string) => t.rest.post(`${path()}/current`, { name }, { key: p.key });

describe("POST .../metrics", () => {
  it("answers 201 with data.accepted, stores a $measure event visible in the event list", async () => {
    const r = await record({
      type: "measurement",
      name: "cpu",
      value: 0.75,
      unit: "ratio",
      timestamp: "2024-03-20T11:00:00+01:00",
      tags: { host: "a" },
    });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body, { data: { accepted: 1 } });
    const c = await current("cpu");
    assert.deepEqual(c.body.data, {
      name: "cpu",
      type: "measurement",
      value: 0.75,
      lastTimestamp: "2024-03-20T10:00:00.000Z",
    });
    const ev = await t.rest.get(`/v1/projects/${p.projectId}/events?type=%24measure`, { key: p.key });
    assert.equal(ev.status, 200, ev.text);
    const e = ev.body.data.find((x: any) => x.data?.name === "cpu");
    assert.ok(e, ev.text);
    assert.equal(e.type, "$measure");
    assert.equal(e.timestamp, "2024-03-20T10:00:00.000Z");
    assert.deepEqual(e.data, { name: "cpu", value: 0.75, unit: "ratio" });
    assert.deepEqual(e.tags, { host: "a" });
  });

  it("defaults the timestamp to now; increments and decrements are $increment/$decrement events", async () => {
    assert.equal((await record({ type: "increment", name: "jobs", value: 4 })).status, 201);
    assert.equal((await record({ type: "decrement", name: "jobs", value: 1 })).status, 201);
    const c = await current("jobs");
    assert.deepEqual(c.body.data, { name: "jobs", type: "counter", value: 3, lastTimestamp: NOW.toISOString() });
    for (const type of ["$increment", "$decrement"]) {
      const ev = await t.rest.get(`/v1/projects/${p.projectId}/events?type=${encodeURIComponent(type)}`, {
        key: p.key,
      });
      assert.ok(
        ev.body.data.some((x: any) => x.data?.name === "jobs" && x.timestamp === NOW.toISOString()),
        `${type}: ${ev.text}`,
      );
    }
  });

  it("a name keeps its first type: the other type is a 409 with the error body", async () => {
    const r = await record({ type: "increment", name: "cpu", value: 1 });
    assert.equal(r.status, 409, r.text);
    assert.equal(errorBody(r).code, "conflict");
    assert.match(errorBody(r).message, /measurement/);
    const m = await record({ type: "measurement", name: "jobs", value: 1 });
    assert.equal(m.status, 409);
    assert.equal((await current("jobs")).body.data.value, 3, "the refused point changed nothing");
  });

  it("settles a race between the two types for a new name: one type wins, the rest are 409, no 500", async () => {
    const tries = Array.from({ length: 16 }, (_, i) =>
      record({ type: i % 2 ? "increment" : "measurement", name: "racy", value: 1 }),
    );
    const res = await Promise.all(tries);
    const statuses = res.map((r) => r.status);
    assert.ok(
      statuses.every((s) => s === 201 || s === 409),
      statuses.join(","),
    );
    const c = await current("racy");
    const winner = c.body.data.type === "counter" ? 1 : 0;
    res.forEach((r, i) => assert.equal(r.status, i % 2 === winner ? 201 : 409, `try ${i}: ${r.text}`));
    if (winner === 1) assert.equal(c.body.data.value, 8);
  });

  const bad: [string, unknown][] = [
    ["missing name", { type: "measurement", value: 1 }],
    ["empty name", { type: "measurement", name: "", value: 1 }],
    ["name starting with $", { type: "measurement", name: "$cpu", value: 1 }],
    ["name of the wrong type", { type: "measurement", name: 42, value: 1 }],
    ["name with a NUL", { type: "measurement", name: "a\u0000", value: 1 }],
    ["missing value", { type: "measurement", name: "v" }],
    ["string value", { type: "measurement", name: "v", value: "12" }],
    ["null value", { type: "measurement", name: "v", value: null }],
    ["object value", { type: "measurement", name: "v", value: { n: 1 } }],
    ["negative increment", { type: "increment", name: "v2", value: -3 }],
    ["negative decrement", { type: "decrement", name: "v2", value: -3 }],
    ["missing type", { name: "v", value: 1 }],
    ["unknown type", { type: "counter", name: "v", value: 1 }],
    ["timestamp without timezone", { type: "measurement", name: "v", value: 1, timestamp: "2024-03-20T10:00:00" }],
    ["timestamp that is no date", { type: "measurement", name: "v", value: 1, timestamp: "2024-02-30T10:00:00Z" }],
    ["numeric timestamp", { type: "measurement", name: "v", value: 1, timestamp: 1710000000000 }],
    ["unit of the wrong type", { type: "measurement", name: "v", value: 1, unit: 5 }],
    ["tags that are an array", { type: "measurement", name: "v", value: 1, tags: ["a"] }],
    ["tags with a nested object", { type: "measurement", name: "v", value: 1, tags: { a: { b: 1 } } }],
    ["a tag value with a lone surrogate", { type: "measurement", name: "v", value: 1, tags: { a: "\ud800" } }],
    ["a tag value with a NUL", { type: "measurement", name: "v", value: 1, tags: { a: "x\u0000" } }],
  ];
  for (const [label, body] of bad) {
    it(`refuses ${label} with 400 validation_failed naming the field`, async () => {
      const r = await record(body);
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.ok(
        Array.isArray(e.details) &&
          (e.details as any[]).every((d) => typeof d.field === "string" && typeof d.message === "string"),
        r.text,
      );
    });
  }
  it("refuses a body that is not JSON (400) or not declared JSON (415)", async () => {
    const a = await t.rest.req("POST", path(), { raw: "{nope", contentType: "application/json", key: p.key });
    assert.equal(a.status, 400);
    errorBody(a);
    const b = await t.rest.req("POST", path(), { raw: "name=x", contentType: "text/plain", key: p.key });
    assert.equal(b.status, 415);
    errorBody(b);
  });
  it("hostile but valid names and tags are stored and read back verbatim", async () => {
    const name = "x'; DROP TABLE metrics;-- \"é🌡\\%_";
    const r = await record({
      type: "increment",
      name,
      value: 1,
      timestamp: "2024-03-20T08:00:00Z",
      tags: { "a'b": "<script>", "%": "_" },
    });
    assert.equal(r.status, 201, r.text);
    const pts = await t.rest.post(
      `${path()}/points`,
      { name, time: { start: "2024-03-20T00:00:00Z", end: "2024-03-20T12:00:00Z" } },
      { key: p.key },
    );
    assert.deepEqual(pts.body.data.points, [
      {
        timestamp: "2024-03-20T08:00:00.000Z",
        value: 1,
        operation: "increment",
        tags: { "a'b": "<script>", "%": "_" },
      },
    ]);
    assert.ok((await t.rest.get(path(), { key: p.key })).body.data.some((m: any) => m.name === name));
  });
  it("stores nothing for a refused point", async () => {
    assert.equal((await current("v")).status, 404);
    assert.equal((await current("v2")).status, 404);
  });
});

describe("POST .../metrics/batch", () => {
  it("accepts the valid items and reports the others as {index, code, message}", async () => {
    const r = await t.rest.post(
      `${path()}/batch`,
      {
        metrics: [
          { type: "increment", name: "signups", value: 2, timestamp: "2024-03-19T10:00:00Z" },
          { type: "increment", name: "$signups", value: 1 },
          { type: "increment", name: "signups", value: -1 },
          "not an object",
          { type: "decrement", name: "signups", value: 1, timestamp: "2024-03-19T11:00:00Z" },
          { type: "measurement", name: "signups", value: 1 },
          { type: "measurement", name: "queue", value: 9, timestamp: "2024-03-19T10:00:00" },
          { type: "measurement", name: "queue", value: 9, tags: { q: "mail" } },
        ],
      },
      { key: p.key },
    );
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.data.accepted, 3);
    assert.equal(r.body.data.rejected, 5);
    assert.deepEqual(
      r.body.data.errors.map((e: any) => [e.index, e.code]),
      [
        [1, "validation_failed"],
        [2, "validation_failed"],
        [3, "validation_failed"],
        [5, "conflict"],
        [6, "validation_failed"],
      ],
    );
    for (const e of r.body.data.errors) assert.equal(typeof e.message, "string");
    assert.equal((await current("signups")).body.data.value, 1);
    assert.equal((await current("queue")).body.data.value, 9);
  });

  it("takes exactly 500; 501 is refused whole with 413", async () => {
    const items = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        type: "increment",
        name: "bulk",
        value: 1,
        timestamp: new Date(NOW.getTime() - i * 1000).toISOString(),
      }));
    const ok = await t.rest.post(`${path()}/batch`, { metrics: items(500) }, { key: p.key });
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual(ok.body.data, { accepted: 500, rejected: 0, errors: [] });
    const big = await t.rest.post(`${path()}/batch`, { metrics: items(501) }, { key: p.key });
    assert.equal(big.status, 413, big.text);
    assert.equal(errorBody(big).code, "payload_too_large");
    assert.equal((await current("bulk")).body.data.value, 500, "nothing of the 501 was stored");
  });

  it("refuses a missing, empty or non-array metrics field with 400", async () => {
    for (const body of [{}, { metrics: [] }, { metrics: "x" }, { metrics: { a: 1 } }]) {
      const r = await t.rest.post(`${path()}/batch`, body, { key: p.key });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      errorBody(r);
    }
  });
});

describe("credentials and tenants", () => {
  it("another tenant's project is a 404 on every metrics route; its data is not touched", async () => {
    const other = await project(t.rest);
    const routes: [string, string, unknown][] = [
      ["POST", "", { type: "measurement", name: "cpu", value: 1 }],
      ["POST", "/batch", { metrics: [{ type: "measurement", name: "cpu", value: 1 }] }],
      ["POST", "/query", { name: "cpu", time: { start: "2024-03-01T00:00:00Z", end: "2024-03-21T00:00:00Z" } }],
      [
        "POST",
        "/timeseries",
        { name: "cpu", interval: "1h", time: { start: "2024-03-01T00:00:00Z", end: "2024-03-21T00:00:00Z" } },
      ],
      ["POST", "/points", { name: "cpu", time: { start: "2024-03-01T00:00:00Z", end: "2024-03-21T00:00:00Z" } }],
      ["POST", "/current", { name: "cpu" }],
      ["GET", "", undefined],
    ];
    for (const [method, suffix, body] of routes) {
      for (const cred of [{ key: other.key }, { cookie: other.owner.cookie }]) {
        const r = await t.rest.req(method, `${path()}${suffix}`, { ...cred, body });
        assert.equal(r.status, 404, `${method} ${suffix}: ${r.text}`);
        assert.equal(errorBody(r).code, "not_found");
      }
    }
    assert.equal((await current("cpu")).body.data.value, 0.75);
    const own = await t.rest.get(path(other.projectId), { key: other.key });
    assert.deepEqual(own.body.data, []);
  });

  it("no credentials and revoked keys are 401; a member's session and 'self' work", async () => {
    assert.equal((await t.rest.post(path(), { type: "measurement", name: "x", value: 1 })).status, 401);
    const proj = await project(t.rest);
    const q = await memberOf(t.rest, proj, "q");
    const viaSession = await t.rest.post(
      path(proj.projectId),
      { type: "measurement", name: "m", value: 2 },
      { cookie: q.cookie },
    );
    assert.equal(viaSession.status, 201, viaSession.text);
    const viaSelf = await t.rest.post("/v1/projects/self/metrics/current", { name: "m" }, { key: proj.key });
    assert.equal(viaSelf.body.data.value, 2);
    assert.equal(
      (await t.rest.del(`/v1/projects/${proj.projectId}/api-keys/${proj.keyId}`, { cookie: proj.owner.cookie })).status,
      204,
    );
    const revoked = await t.rest.post(
      path(proj.projectId),
      { type: "measurement", name: "m", value: 3 },
      { key: proj.key },
    );
    assert.equal(revoked.status, 401);
    assert.equal(errorBody(revoked).code, "unauthenticated");
  });
});

describe("gRPC", () => {
  it("records and reads through a real gRPC client; refusals map to gRPC codes", async () => {
    const c = createClient(MetricsService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${p.key}` };
    const r = await c.recordMetric(
      {
        projectId: "self",
        type: "measurement",
        name: "grpc_temp",
        value: fromJson(ValueSchema, 21.5),
        timestamp: "2024-03-20T09:00:00Z",
        tags: { room: "lab" },
      },
      { headers },
    );
    assert.equal(r.data?.accepted, 1n);
    const cur = await c.getCurrentMetric({ projectId: "self", name: "grpc_temp" }, { headers });
    assert.equal(cur.data?.value, 21.5);
    assert.equal(cur.data?.lastTimestamp, "2024-03-20T09:00:00.000Z");
    await assert.rejects(
      c.recordMetric(
        { projectId: "self", type: "increment", name: "grpc_temp", value: fromJson(ValueSchema, 1) },
        { headers },
      ),
      (e: unknown) => e instanceof ConnectError && e.code === Code.AlreadyExists,
    );
    await assert.rejects(
      c.recordMetric(
        { projectId: "self", type: "measurement", name: "$x", value: fromJson(ValueSchema, 1) },
        { headers },
      ),
      (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
    );
  });
});
