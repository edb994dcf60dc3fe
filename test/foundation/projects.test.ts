import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorBody, signup } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

const { t, p } = useProject();

describe("projects", () => {
  it("creates with the caller as owner and the record of decisions.md", async () => {
    const a = await signup(t.rest);
    const r = await t.rest.post("/v1/projects", { name: "Shop", platform: "next" }, { cookie: a.cookie });
    assert.equal(r.status, 201);
    assert.deepEqual(Object.keys(r.body.data).sort(), [
      "allowedOrigins",
      "createdAt",
      "id",
      "name",
      "platform",
      "retention",
      "retentionDays",
      "role",
      "updatedAt",
    ]);
    assert.equal(r.body.data.role, "owner");
    assert.deepEqual(r.body.data.allowedOrigins, []);
    assert.equal(r.body.data.platform, "next");
    const list = await t.rest.get("/v1/projects", { cookie: a.cookie });
    assert.deepEqual(
      list.body.data.map((x: any) => x.id),
      [r.body.data.id],
    );
  });

  for (const [label, body] of [
    ["bad platform", { name: "x", platform: "cobol" }],
    ["missing name", { platform: "node" }],
    ["empty name", { name: "  ", platform: "node" }],
    ["name of wrong type", { name: { a: 1 }, platform: "node" }],
    ["missing platform", { name: "x" }],
  ] as const) {
    it(`refuses ${label} with 400`, async () => {
      const r = await t.rest.post("/v1/projects", body, { cookie: p.owner.cookie });
      assert.equal(r.status, 400, r.text);
      assert.equal(errorBody(r).code, "validation_failed");
    });
  }

  it("gets, patches (only present fields) and deletes", async () => {
    const a = await signup(t.rest);
    const c = await t.rest.post("/v1/projects", { name: "Before", platform: "react" }, { cookie: a.cookie });
    const id = c.body.data.id;
    const g = await t.rest.get(`/v1/projects/${id}`, { cookie: a.cookie });
    assert.equal(g.body.data.name, "Before");
    const u = await t.rest.patch(`/v1/projects/${id}`, { name: "After" }, { cookie: a.cookie });
    assert.equal(u.status, 200);
    assert.equal(u.body.data.name, "After");
    assert.equal(u.body.data.platform, "react");
    const noop = await t.rest.patch(`/v1/projects/${id}`, {}, { cookie: a.cookie });
    assert.equal(noop.body.data.name, "After");
    const d = await t.rest.del(`/v1/projects/${id}`, { cookie: a.cookie });
    assert.equal(d.status, 204);
    assert.equal(d.text, "");
    assert.equal((await t.rest.get(`/v1/projects/${id}`, { cookie: a.cookie })).status, 404);
  });

  it("another account sees 404 for a project it is not in (ids are not probed)", async () => {
    const stranger = await signup(t.rest, "stranger");
    for (const [m, path] of [
      ["GET", `/v1/projects/${p.projectId}`],
      ["PATCH", `/v1/projects/${p.projectId}`],
      ["DELETE", `/v1/projects/${p.projectId}`],
      ["GET", `/v1/projects/${p.projectId}/api-keys`],
      ["GET", `/v1/projects/${p.projectId}/members`],
    ]) {
      const r = await t.rest.req(m, path, { cookie: stranger.cookie, body: m === "PATCH" ? { name: "x" } : undefined });
      assert.equal(r.status, 404, `${m} ${path}: ${r.text}`);
      assert.equal(errorBody(r).code, "not_found");
    }
    assert.equal((await t.rest.get("/v1/projects/prj_doesnotexist", { cookie: stranger.cookie })).status, 404);
  });
});

describe("members and roles", () => {
  it("owner adds members; member reads; admin manages; only owner deletes", async () => {
    const owner = await signup(t.rest, "own");
    const admin = await signup(t.rest, "adm");
    const member = await signup(t.rest, "mem");
    const c = await t.rest.post("/v1/projects", { name: "Team", platform: "node" }, { cookie: owner.cookie });
    const id = c.body.data.id;
    const addA = await t.rest.post(
      `/v1/projects/${id}/members`,
      { email: admin.email, role: "admin" },
      { cookie: owner.cookie },
    );
    assert.equal(addA.status, 201);
    assert.deepEqual({ userId: addA.body.data.userId, role: addA.body.data.role }, { userId: admin.id, role: "admin" });
    assert.equal(
      (
        await t.rest.post(
          `/v1/projects/${id}/members`,
          { email: member.email, role: "member" },
          { cookie: admin.cookie },
        )
      ).status,
      201,
    );
    assert.equal(
      (
        await t.rest.post(
          `/v1/projects/${id}/members`,
          { email: member.email, role: "member" },
          { cookie: owner.cookie },
        )
      ).status,
      409,
    );
    assert.equal(
      (
        await t.rest.post(
          `/v1/projects/${id}/members`,
          { email: "ghost@example.com", role: "member" },
          { cookie: owner.cookie },
        )
      ).status,
      404,
    );
    assert.equal(
      (
        await t.rest.post(
          `/v1/projects/${id}/members`,
          { email: member.email, role: "owner" },
          { cookie: owner.cookie },
        )
      ).status,
      400,
    );

    // member: reads the project, may not change it
    const mg = await t.rest.get(`/v1/projects/${id}`, { cookie: member.cookie });
    assert.equal(mg.status, 200);
    assert.equal(mg.body.data.role, "member");
    assert.equal((await t.rest.get(`/v1/projects/${id}/members`, { cookie: member.cookie })).body.data.length, 3);
    for (const [m, path, body] of [
      ["PATCH", `/v1/projects/${id}`, { name: "x" }],
      ["POST", `/v1/projects/${id}/api-keys`, { name: "k", environment: "preview" }],
      ["GET", `/v1/projects/${id}/api-keys`, undefined],
      ["POST", `/v1/projects/${id}/members`, { email: owner.email, role: "admin" }],
      ["DELETE", `/v1/projects/${id}`, undefined],
    ] as const) {
      const r = await t.rest.req(m, path, { cookie: member.cookie, body });
      assert.equal(r.status, 403, `${m} ${path}: ${r.text}`);
      assert.equal(errorBody(r).code, "forbidden");
    }
    // admin: manages keys and the project, may not delete it
    assert.equal((await t.rest.patch(`/v1/projects/${id}`, { name: "Renamed" }, { cookie: admin.cookie })).status, 200);
    assert.equal(
      (
        await t.rest.post(
          `/v1/projects/${id}/api-keys`,
          { name: "k", environment: "preview" },
          { cookie: admin.cookie },
        )
      ).status,
      201,
    );
    assert.equal((await t.rest.del(`/v1/projects/${id}`, { cookie: admin.cookie })).status, 403);
    // the owner cannot be removed or demoted
    assert.equal((await t.rest.del(`/v1/projects/${id}/members/${owner.id}`, { cookie: admin.cookie })).status, 403);
    assert.equal(
      (await t.rest.patch(`/v1/projects/${id}/members/${owner.id}`, { role: "member" }, { cookie: owner.cookie }))
        .status,
      403,
    );
    // promote, demote, remove
    const up = await t.rest.patch(
      `/v1/projects/${id}/members/${member.id}`,
      { role: "admin" },
      { cookie: owner.cookie },
    );
    assert.equal(up.body.data.role, "admin");
    assert.equal((await t.rest.del(`/v1/projects/${id}/members/${member.id}`, { cookie: owner.cookie })).status, 204);
    assert.equal((await t.rest.get(`/v1/projects/${id}`, { cookie: member.cookie })).status, 404);
    assert.equal((await t.rest.del(`/v1/projects/${id}/members/${member.id}`, { cookie: owner.cookie })).status, 404);
    assert.equal((await t.rest.del(`/v1/projects/${id}`, { cookie: owner.cookie })).status, 204);
  });
});
