import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

const { t, p } = useProject();

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("POST /v1/events", () => {
  it("answers 202 with the full event as stored, server context merged", async () => {
    const r = await t.rest.post(
      "/v1/events",
      {
        type: "signup",
        userId: "u-1",
        groupId: "g-1",
        source: "web",
        data: { plan: "pro", n: 3 },
        context: { locale: "fr" },
        tags: { env: "prod" },
        timestamp: "2024-05-06T10:00:00+02:00",
      },
      { key: p.key, headers: { "user-agent": "vigil-test/1.0" } },
    );
    assert.equal(r.status, 202, r.text);
    const e = r.body.data;
    assert.match(e.id, UUID_V7);
    assert.equal(e.projectId, p.projectId);
    assert.equal(e.type, "signup");
    assert.equal(e.timestamp, "2024-05-06T08:00:00.000Z");
    assert.equal(e.userId, "u-1");
    assert.equal(e.groupId, "g-1");
    assert.match(e.sourceId, /^src_/);
    assert.deepEqual(e.data, { plan: "pro", n: 3 });
    assert.deepEqual(e.tags, { env: "prod" });
    assert.equal(e.context.locale, "fr");
    assert.equal(e.context.userAgent, "vigil-test/1.0");
    assert.equal(e.context.ip, "127.0.0.1");
    assert.ok(!Number.isNaN(Date.parse(e.context.receivedAt)));
    assert.ok(!Number.isNaN(Date.parse(e.createdAt)));
    assert.deepEqual(Object.keys(e).sort(), [
      "context",
      "createdAt",
      "data",
      "groupId",
      "id",
      "projectId",
      "sourceId",
      "tags",
      "timestamp",
      "type",
      "userId",
    ]);
    // the id carries the event's own timestamp (UUIDv7)
    assert.equal(parseInt(e.id.replace(/-/g, "").slice(0, 12), 16), Date.parse("2024-05-06T08:00:00.000Z"));

    const got = await t.rest.get(`/v1/projects/self/events/${e.id}`, { key: p.key });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body.data, e);
  });

  it("defaults the timestamp to now and optional fields to null / {}", async () => {
    const before = Date.now();
    const r = await t.rest.post("/v1/events", { type: "ping" }, { key: p.key });
    assert.equal(r.status, 202, r.text);
    const e = r.body.data;
    assert.ok(Date.parse(e.timestamp) >= before - 1000 && Date.parse(e.timestamp) <= Date.now() + 1000);
    assert.equal(e.userId, null);
    assert.equal(e.groupId, null);
    assert.equal(e.sourceId, null);
    assert.deepEqual(e.data, {});
    assert.deepEqual(e.tags, {});
  });

  it("resolves one source id per source key and project", async () => {
    const a = await t.rest.post("/v1/events", { type: "x", source: "ios" }, { key: p.key });
    const b = await t.rest.post("/v1/events", { type: "x", source: "ios" }, { key: p.key });
    const c = await t.rest.post("/v1/events", { type: "x", source: "android" }, { key: p.key });
    assert.equal(a.body.data.sourceId, b.body.data.sourceId);
    assert.notEqual(a.body.data.sourceId, c.body.data.sourceId);
    const other = await project(t.rest);
    const d = await t.rest.post("/v1/events", { type: "x", source: "ios" }, { key: other.key });
    assert.notEqual(d.body.data.sourceId, a.body.data.sourceId);
  });

  it("accepts the SDK's $ types", async () => {
    for (const type of ["$page", "$error"]) {
      const r = await t.rest.post("/v1/events", { type }, { key: p.key });
      assert.equal(r.status, 202, `${type}: ${r.text}`);
    }
    assert.equal((await t.rest.post("/v1/events", { type: "$identify", userId: "u" }, { key: p.key })).status, 202);
    assert.equal((await t.rest.post("/v1/events", { type: "$group", groupId: "g" }, { key: p.key })).status, 202);
  });
});
