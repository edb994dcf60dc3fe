import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { errorBody, project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

const { t, p } = useProject();

describe("single event validation", () => {
  const cases: [string, unknown, string][] = [
    ["missing type", { data: {} }, "type"],
    ["empty type", { type: "" }, "type"],
    ["blank type", { type: "   " }, "type"],
    ["type of wrong type", { type: 42 }, "type"],
    ["$measure", { type: "$measure" }, "type"],
    ["$increment", { type: "$increment" }, "type"],
    ["$decrement", { type: "$decrement" }, "type"],
    ["unknown $ type", { type: "$custom" }, "type"],
    ["timestamp without timezone", { type: "a", timestamp: "2024-05-06T10:00:00" }, "timestamp"],
    ["date-only timestamp", { type: "a", timestamp: "2024-05-06" }, "timestamp"],
    ["impossible date", { type: "a", timestamp: "2024-02-30T10:00:00Z" }, "timestamp"],
    ["numeric timestamp", { type: "a", timestamp: 1714989600000 }, "timestamp"],
    ["garbage timestamp", { type: "a", timestamp: "yesterday" }, "timestamp"],
    ["timestamp before 2000", { type: "a", timestamp: "1999-12-31T23:59:59Z" }, "timestamp"],
    ["timestamp far in the future", { type: "a", timestamp: "2999-01-01T00:00:00Z" }, "timestamp"],
    ["data as array", { type: "a", data: [1, 2] }, "data"],
    ["data as string", { type: "a", data: "x" }, "data"],
    ["context as number", { type: "a", context: 5 }, "context"],
    ["tags as array", { type: "a", tags: ["x"] }, "tags"],
    ["userId as number", { type: "a", userId: 7 }, "userId"],
    ["userId as object", { type: "a", userId: { id: 1 } }, "userId"],
    // Free-form JSON problems name the offending value's path.
    ["NUL in data", { type: "a", data: { x: "a\u0000b" } }, "data.x"],
    ["NUL in type", { type: "a\u0000" }, "type"],
    ["lone surrogate", { type: "a", data: { x: "\ud800" } }, "data.x"],
    ["$identify without userId", { type: "$identify", data: { a: 1 } }, "userId"],
    ["$group without groupId", { type: "$group", data: { a: 1 } }, "groupId"],
    ["overlong userId", { type: "a", userId: "u".repeat(300) }, "userId"],
  ];
  for (const [label, body, field] of cases) {
    it(`refuses ${label} with 400`, async () => {
      const r = await t.rest.post("/v1/events", body, { key: p.key });
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.ok(Array.isArray(e.details), r.text);
      assert.equal((e.details as { field: string }[])[0].field, field, r.text);
    });
  }

  it("names the reserved type in the refusal", async () => {
    const r = await t.rest.post("/v1/events", { type: "$measure" }, { key: p.key });
    assert.equal(errorBody(r).code, "reserved_type");
  });

  it("accepts offsets and fractional seconds, stored in UTC", async () => {
    const r = await t.rest.post(
      "/v1/events",
      { type: "a", timestamp: "2024-05-06T10:00:00.123456-05:30" },
      { key: p.key },
    );
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.timestamp, "2024-05-06T15:30:00.123Z");
  });

  it("refuses malformed JSON, non-JSON bodies and non-object bodies", async () => {
    const bad = await t.rest.req("POST", "/v1/events", {
      raw: '{"type": "a",',
      contentType: "application/json",
      key: p.key,
    });
    assert.equal(bad.status, 400);
    assert.equal(errorBody(bad).code, "invalid_json");
    const text = await t.rest.req("POST", "/v1/events", { raw: "type=a", contentType: "text/plain", key: p.key });
    assert.equal(text.status, 415);
    errorBody(text);
    const arr = await t.rest.req("POST", "/v1/events", { raw: "[1,2]", contentType: "application/json", key: p.key });
    assert.equal(arr.status, 400);
    errorBody(arr);
    const batchBad = await t.rest.req("POST", "/v1/events/batch", {
      raw: '{"events": [',
      contentType: "application/json",
      key: p.key,
    });
    assert.equal(batchBad.status, 400);
    assert.equal(errorBody(batchBad).code, "invalid_json");
  });

  it("refuses an event over 1 MB serialized with 400", async () => {
    const r = await t.rest.post("/v1/events", { type: "big", data: { blob: "x".repeat(1024 * 1024) } }, { key: p.key });
    assert.equal(r.status, 400, r.text.slice(0, 300));
    assert.equal(errorBody(r).code, "event_too_large");
  });

  it("refuses a body over 10 MB with 413", async () => {
    const r = await t.rest.req("POST", "/v1/events/batch", {
      raw: `{"events":[{"type":"a","data":{"x":"${"y".repeat(11 * 1024 * 1024)}"}}]}`,
      contentType: "application/json",
      key: p.key,
    });
    assert.equal(r.status, 413);
    assert.equal(errorBody(r).code, "payload_too_large");
  });

  it("needs a project API key: none is 401, a session is 403, a revoked key is 401", async () => {
    const none = await t.rest.post("/v1/events", { type: "a" });
    assert.equal(none.status, 401);
    errorBody(none);
    const session = await t.rest.post("/v1/events", { type: "a" }, { cookie: p.owner.cookie });
    assert.equal(session.status, 403);
    errorBody(session);
    const wrong = await t.rest.post("/v1/events", { type: "a" }, { key: "vk_notarealkey000000000000000000000000" });
    assert.equal(wrong.status, 401);
    const k = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "tmp", environment: "development" },
      { cookie: p.owner.cookie },
    );
    assert.equal((await t.rest.post("/v1/events", { type: "a" }, { key: k.body.data.secret })).status, 202);
    assert.equal(
      (await t.rest.del(`/v1/projects/${p.projectId}/api-keys/${k.body.data.id}`, { cookie: p.owner.cookie })).status,
      204,
    );
    const revoked = await t.rest.post("/v1/events", { type: "a" }, { key: k.body.data.secret });
    assert.equal(revoked.status, 401);
    errorBody(revoked);
    const revokedBatch = await t.rest.post(
      "/v1/events/batch",
      { events: [{ type: "a" }] },
      { key: k.body.data.secret },
    );
    assert.equal(revokedBatch.status, 401);
  });

  it("refuses a projectId in the body (no such field: the key decides the project), storing nothing", async () => {
    const other = await project(t.rest);
    const type = "body-project-id";
    const r = await t.rest.post("/v1/events", { type, projectId: other.projectId }, { key: p.key });
    assert.equal(r.status, 400, r.text);
    assert.equal(errorBody(r).code, "validation_failed");
    assert.deepEqual(errorBody(r).details, [{ field: "projectId", message: "unknown field" }]);
    for (const x of [p, other]) {
      const list = await t.rest.get(`/v1/projects/${x.projectId}/events?type=${type}`, { key: x.key });
      assert.deepEqual(list.body.data, []);
    }
    const ok = await t.rest.post("/v1/events", { type }, { key: p.key });
    assert.equal(ok.status, 202);
    assert.equal(ok.body.data.projectId, p.projectId);
  });
});

describe("batch ingestion", () => {
  it("stores the valid events and reports the invalid ones as {index, code, message}", async () => {
    const events = [
      { type: "ok-1", userId: "u1" },
      { type: "$measure" },
      "not an object",
      { type: "ok-2", timestamp: "2024-01-01T00:00:00" },
      { type: "ok-3", data: [1] },
      { type: 5 },
      null,
      { type: "ok-4", data: { nested: { deep: [1, 2, { x: true }] } } },
    ];
    const r = await t.rest.post("/v1/events/batch", { events }, { key: p.key });
    assert.equal(r.status, 202, r.text);
    const d = r.body.data;
    assert.equal(d.received, 8);
    assert.equal(d.accepted, 2);
    assert.equal(d.rejected, 6);
    assert.deepEqual(
      d.events.map((e: { type: string }) => e.type),
      ["ok-1", "ok-4"],
    );
    assert.deepEqual(
      d.errors.map((e: { index: number }) => e.index),
      [1, 2, 3, 4, 5, 6],
    );
    for (const e of d.errors) {
      assert.deepEqual(Object.keys(e).sort(), ["code", "index", "message"]);
      assert.match(e.code, /^[a-z_]+$/);
      assert.ok(e.message.length > 0);
    }
    assert.equal(d.errors[0].code, "reserved_type");
    for (const e of d.events) {
      const got = await t.rest.get(`/v1/projects/self/events/${e.id}`, { key: p.key });
      assert.equal(got.status, 200);
      assert.equal(got.body.data.type, e.type);
    }
    const deep = await t.rest.get(`/v1/projects/self/events/${d.events[1].id}`, { key: p.key });
    assert.deepEqual(deep.body.data.data, { nested: { deep: [1, 2, { x: true }] } });
  });

  it("answers 202 with accepted 0 when every event is invalid", async () => {
    const r = await t.rest.post("/v1/events/batch", { events: [{ type: "$measure" }, {}] }, { key: p.key });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.accepted, 0);
    assert.equal(r.body.data.rejected, 2);
    assert.deepEqual(r.body.data.events, []);
  });

  it("reports an event over 1 MB as an errors entry", async () => {
    const r = await t.rest.post(
      "/v1/events/batch",
      { events: [{ type: "small" }, { type: "big", data: { blob: "x".repeat(1024 * 1024 + 10) } }] },
      { key: p.key },
    );
    assert.equal(r.status, 202, r.text.slice(0, 300));
    assert.equal(r.body.data.accepted, 1);
    assert.deepEqual(
      r.body.data.errors.map((e: any) => [e.index, e.code]),
      [[1, "event_too_large"]],
    );
  });

  it("refuses more than 1000 events whole with 413, and stores none", async () => {
    const marker = `over-${Date.now()}`;
    const events = Array.from({ length: 1001 }, () => ({ type: marker }));
    const r = await t.rest.post("/v1/events/batch", { events }, { key: p.key });
    assert.equal(r.status, 413);
    assert.equal(errorBody(r).code, "payload_too_large");
    const list = await t.rest.get(`/v1/projects/self/events?type=${marker}`, { key: p.key });
    assert.equal(list.body.data.length, 0);
    const ok = await t.rest.post("/v1/events/batch", { events: events.slice(0, 1000) }, { key: p.key });
    assert.equal(ok.status, 202);
    assert.equal(ok.body.data.accepted, 1000);
  });

  it("refuses a number beyond float64 range (1e400 parses as Infinity) in a single event and in a batch item", async () => {
    const single = await t.rest.req("POST", "/v1/events", {
      raw: '{"type":"huge","data":{"n":1e400}}',
      contentType: "application/json",
      key: p.key,
    });
    assert.equal(single.status, 400, single.text);
    errorBody(single);
    const batch = await t.rest.req("POST", "/v1/events/batch", {
      raw: '{"events":[{"type":"fine","data":{"n":1e300}},{"type":"huge","data":{"n":-1e400}}]}',
      contentType: "application/json",
      key: p.key,
    });
    assert.equal(batch.status, 202, batch.text);
    assert.equal(batch.body.data.accepted, 1);
    assert.deepEqual(
      batch.body.data.errors.map((e: { index: number }) => e.index),
      [1],
    );
    const got = await t.rest.get(`/v1/projects/self/events/${batch.body.data.events[0].id}`, { key: p.key });
    assert.deepEqual(got.body.data.data, { n: 1e300 });
  });

  it("keeps keys named __proto__ and constructor as data, in events, context and user properties", async () => {
    const raw =
      '{"events":[{"type":"$identify","userId":"proto-user","data":{"__proto__":{"admin":true},"constructor":"c","plan":"pro"},"context":{"__proto__":{"x":1}}}]}';
    const r = await t.rest.req("POST", "/v1/events/batch", { raw, contentType: "application/json", key: p.key });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.accepted, 1, r.text);
    const got = await t.rest.get(`/v1/projects/self/events/${r.body.data.events[0].id}`, { key: p.key });
    assert.deepEqual(
      JSON.parse(JSON.stringify(got.body.data.data)),
      JSON.parse('{"__proto__":{"admin":true},"constructor":"c","plan":"pro"}'),
    );
    assert.deepEqual(
      Object.keys(got.body.data.context).sort(),
      ["__proto__", "ip", "receivedAt", "userAgent"].filter((k) => k !== "ip" || "ip" in got.body.data.context).sort(),
    );
    const u = await t.rest.get(`/v1/projects/self/users/proto-user`, { key: p.key });
    assert.equal(u.status, 200, u.text);
    assert.deepEqual(Object.keys(u.body.data.properties).sort(), ["__proto__", "constructor", "plan"]);
    const one = await t.rest.req("POST", "/v1/events", {
      raw: '{"type":"single-proto","data":{"__proto__":{"admin":true},"k":1}}',
      contentType: "application/json",
      key: p.key,
    });
    assert.equal(one.status, 202, one.text);
    const back = await t.rest.get(`/v1/projects/self/events/${one.body.data.id}`, { key: p.key });
    assert.deepEqual(Object.keys(back.body.data.data).sort(), ["__proto__", "k"]);
    assert.equal(({} as Record<string, unknown>).admin, undefined, "no global prototype pollution");
  });

  it("refuses a missing, empty or non-array events field with 400", async () => {
    for (const body of [{}, { events: [] }, { events: "x" }, { events: { type: "a" } }]) {
      const r = await t.rest.post("/v1/events/batch", body, { key: p.key });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      errorBody(r);
    }
  });

  it("works over gRPC, with loosely typed items", async () => {
    const client = createClient(EventService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${p.key}` };
    const r = await client.ingestEventBatch(
      {
        events: [
          fromJson(ValueSchema, { type: "grpc-ok", data: { a: 1 } }),
          fromJson(ValueSchema, { type: "$increment" }),
          fromJson(ValueSchema, 12),
        ],
      },
      { headers },
    );
    assert.equal(r.data?.accepted, 1);
    assert.equal(r.data?.rejected, 2);
    const one = await client.ingestEvent({ type: "grpc-single", data: { x: "y" } }, { headers });
    assert.equal(one.data?.type, "grpc-single");
    const got = await client.getEvent({ projectId: "self", eventId: one.data!.id }, { headers });
    assert.deepEqual(got.data?.data, { x: "y" });
  });
});
