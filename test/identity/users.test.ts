import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { eventsOf } from "../helpers/app.js";
import { errorBody, project, signup, type ProjectFixture } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

const { t, p } = useProject();

async function batch(fx: ProjectFixture, events: object[]) {
  const r = await t.rest.post("/v1/events/batch", { events }, { key: fx.key });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.data.rejected, 0, r.text);
}

describe("users from events", () => {
  it("creates the user on first sight, moves lastSeenAt, counts events, merges $identify data", async () => {
    await batch(p, [
      { type: "visit", userId: "ext-1", timestamp: "2024-04-02T00:00:00Z" },
      {
        type: "$identify",
        userId: "ext-1",
        data: { email: "a@example.com", plan: "free" },
        timestamp: "2024-04-01T00:00:00Z",
      },
    ]);
    await t.rest.post(
      "/v1/events",
      { type: "$identify", userId: "ext-1", data: { plan: "pro", seats: 3 }, timestamp: "2024-04-03T00:00:00Z" },
      { key: p.key },
    );
    const r = await t.rest.get(`/v1/projects/self/users/ext-1`, { key: p.key });
    assert.equal(r.status, 200, r.text);
    const u = r.body.data;
    assert.match(u.id, /^usr_/);
    assert.equal(u.projectId, p.projectId);
    assert.equal(u.externalId, "ext-1");
    assert.deepEqual(u.properties, { email: "a@example.com", plan: "pro", seats: 3 });
    assert.equal(u.eventCount, 3);
    assert.equal(u.firstSeenAt, "2024-04-01T00:00:00.000Z");
    assert.equal(u.lastSeenAt, "2024-04-03T00:00:00.000Z");
    const byId = await t.rest.get(`/v1/projects/${p.projectId}/users/${u.id}`, { key: p.key });
    assert.deepEqual(byId.body.data, u);
  });

  it("keeps users per project; another project's user is 404", async () => {
    const q = await project(t.rest);
    await batch(q, [{ type: "x", userId: "shared-name" }]);
    await batch(p, [
      { type: "x", userId: "shared-name" },
      { type: "y", userId: "shared-name" },
    ]);
    const a = await t.rest.get(`/v1/projects/self/users/shared-name`, { key: p.key });
    const b = await t.rest.get(`/v1/projects/self/users/shared-name`, { key: q.key });
    assert.notEqual(a.body.data.id, b.body.data.id);
    assert.equal(a.body.data.eventCount, 2);
    assert.equal(b.body.data.eventCount, 1);
    const cross = await t.rest.get(`/v1/projects/self/users/${b.body.data.id}`, { key: p.key });
    assert.equal(cross.status, 404);
    errorBody(cross);
    const unknown = await t.rest.get(`/v1/projects/self/users/${encodeURIComponent("nobody' OR '1'='1")}`, {
      key: p.key,
    });
    assert.equal(unknown.status, 404);
  });

  it("counts exactly under concurrent ingestion of the same users (no deadlock, no lost update)", async () => {
    const q = await project(t.rest);
    const users = ["u-a", "u-b", "u-c", "u-d"];
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        batch(
          q,
          Array.from({ length: 10 }, (_, j) => ({
            type: "hit",
            userId: users[(i + j) % 4],
            groupId: `g-${(i * j) % 3}`,
          })).reverse(),
        ),
      ),
    );
    let total = 0;
    for (const u of users)
      total += (await t.rest.get(`/v1/projects/self/users/${u}`, { key: q.key })).body.data.eventCount;
    assert.equal(total, 400);
  });

  it("creates and merges groups from $group events", async () => {
    const q = await project(t.rest);
    await batch(q, [{ type: "$group", groupId: "acme", data: { name: "Acme", size: 10 } }]);
    await batch(q, [
      { type: "$group", groupId: "acme", data: { size: 12, plan: "team" } },
      { type: "click", groupId: "acme" },
    ]);
    await eventsOf(t.app).derived.settle(q.projectId); // groups are derived records (no read endpoint settles them)
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const r = await db.query(
        "SELECT properties, event_count FROM groups WHERE project_id = $1 AND group_id = 'acme'",
        [q.projectId],
      );
      assert.deepEqual(r.rows[0].properties, { name: "Acme", size: 12, plan: "team" });
      assert.equal(Number(r.rows[0].event_count), 3);
    } finally {
      await db.end();
    }
    const ev = await t.rest.get(`/v1/projects/self/events?type=%24group`, { key: q.key });
    assert.equal(ev.body.data.length, 2);
    assert.ok(ev.body.data.every((e: any) => e.groupId === "acme"));
  });
});

describe("POST /v1/projects/:projectId/identify", () => {
  it("creates, then merges properties and moves lastSeenAt (200)", async () => {
    const a = await t.rest.post(
      `/v1/projects/${p.projectId}/identify`,
      { externalId: "dash-1", properties: { name: "Ada", tier: 1 } },
      { cookie: p.owner.cookie },
    );
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(Object.keys(a.body.data).sort(), [
      "eventCount",
      "externalId",
      "firstSeenAt",
      "id",
      "lastSeenAt",
      "projectId",
      "properties",
    ]);
    assert.equal(a.body.data.externalId, "dash-1");
    assert.deepEqual(a.body.data.properties, { name: "Ada", tier: 1 });
    const b = await t.rest.post(
      `/v1/projects/${p.projectId}/identify`,
      { externalId: "dash-1", properties: { tier: 2 } },
      { cookie: p.owner.cookie },
    );
    assert.equal(b.status, 200);
    assert.equal(b.body.data.id, a.body.data.id);
    assert.deepEqual(b.body.data.properties, { name: "Ada", tier: 2 });
    assert.equal(b.body.data.firstSeenAt, a.body.data.firstSeenAt);
    assert.ok(b.body.data.lastSeenAt >= a.body.data.lastSeenAt);
  });

  it("is a session route: an API key is 403, a stranger 404, no credentials 401", async () => {
    const k = await t.rest.post(`/v1/projects/self/identify`, { externalId: "x" }, { key: p.key });
    assert.equal(k.status, 403);
    errorBody(k);
    const stranger = await signup(t.rest, "stranger");
    const s = await t.rest.post(
      `/v1/projects/${p.projectId}/identify`,
      { externalId: "x" },
      { cookie: stranger.cookie },
    );
    assert.equal(s.status, 404);
    const none = await t.rest.post(`/v1/projects/${p.projectId}/identify`, { externalId: "x" });
    assert.equal(none.status, 401);
  });

  for (const [label, body] of [
    ["missing externalId", { properties: {} }],
    ["blank externalId", { externalId: "  " }],
    ["numeric externalId", { externalId: 5 }],
    ["properties as array", { externalId: "x", properties: [1] }],
    ["properties as string", { externalId: "x", properties: "x" }],
    ["NUL in properties", { externalId: "x", properties: { a: "\u0000" } }],
  ] as const) {
    it(`refuses ${label} with 400`, async () => {
      const r = await t.rest.post(`/v1/projects/${p.projectId}/identify`, body, { cookie: p.owner.cookie });
      assert.equal(r.status, 400, r.text);
      errorBody(r);
    });
  }
});

describe("GET /v1/projects/:projectId/users", () => {
  it("lists with meta {total, limit, offset}, by key or session", async () => {
    const q = await project(t.rest);
    await batch(
      q,
      Array.from({ length: 7 }, (_, i) => ({
        type: "x",
        userId: `list-${i}`,
        timestamp: new Date(Date.UTC(2024, 0, 1 + i)).toISOString(),
      })),
    );
    const r = await t.rest.get(`/v1/projects/self/users?limit=3&offset=2`, { key: q.key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.meta, { total: 7, limit: 3, offset: 2 });
    assert.deepEqual(
      r.body.data.map((u: any) => u.externalId),
      ["list-4", "list-3", "list-2"],
    );
    assert.equal(r.body.data[0].eventCount, null);
    const d = await t.rest.get(`/v1/projects/${q.projectId}/users`, { cookie: q.owner.cookie });
    assert.deepEqual(d.body.meta, { total: 7, limit: 50, offset: 0 });
    const other = await t.rest.get(`/v1/projects/${q.projectId}/users`, { key: p.key });
    assert.equal(other.status, 404);
  });

  for (const qs of ["limit=0", "limit=101", "offset=-1", "limit=x"]) {
    it(`answers 400 for ${qs}`, async () => {
      const r = await t.rest.get(`/v1/projects/self/users?${qs}`, { key: p.key });
      assert.equal(r.status, 400, r.text);
      errorBody(r);
    });
  }
});
