import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { errorBody, project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

const { t, p } = useProject();

describe("API keys", () => {
  it("shows the secret once, lists only the 7-character prefix", async () => {
    const c = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "ci", environment: "development" },
      { cookie: p.owner.cookie },
    );
    assert.equal(c.status, 201);
    const k = c.body.data;
    assert.match(k.secret, /^vk_[A-Za-z0-9]{32,}$/);
    assert.equal(k.prefix, k.secret.slice(0, 7));
    assert.equal(k.prefix.length, 7);
    assert.equal(k.environment, "development");
    assert.equal(k.kind, "secret");
    assert.equal(k.lastUsedAt, null);
    const list = await t.rest.get(`/v1/projects/${p.projectId}/api-keys`, { cookie: p.owner.cookie });
    const listed = list.body.data.find((x: any) => x.id === k.id);
    assert.deepEqual(Object.keys(listed).sort(), [
      "createdAt",
      "environment",
      "id",
      "kind",
      "lastUsedAt",
      "name",
      "prefix",
    ]);
    assert.ok(!list.text.includes(k.secret));
  });

  it("stores only a SHA-256 hash of the secret", async () => {
    const c = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "h", environment: "production" },
      { cookie: p.owner.cookie },
    );
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const r = await db.query("SELECT * FROM api_keys WHERE id = $1", [c.body.data.id]);
      const row = JSON.stringify(r.rows[0]);
      assert.ok(!row.includes(c.body.data.secret), "secret must not be stored");
      assert.match(r.rows[0].key_hash, /^[0-9a-f]{64}$/);
    } finally {
      await db.end();
    }
  });

  for (const [label, body] of [
    ["bad environment", { name: "k", environment: "staging" }],
    ["missing name", { environment: "production" }],
    ["environment of wrong type", { name: "k", environment: 1 }],
  ] as const) {
    it(`refuses ${label} with 400`, async () => {
      const r = await t.rest.post(`/v1/projects/${p.projectId}/api-keys`, body, { cookie: p.owner.cookie });
      assert.equal(r.status, 400, r.text);
      errorBody(r);
    });
  }

  it("authenticates with `self` and the real id; another project's id is 404", async () => {
    const self = await t.rest.get("/v1/projects/self", { key: p.key });
    assert.equal(self.status, 200);
    assert.equal(self.body.data.id, p.projectId);
    assert.equal((await t.rest.get(`/v1/projects/${p.projectId}`, { key: p.key })).status, 200);
    const other = await project(t.rest);
    const r = await t.rest.get(`/v1/projects/${other.projectId}`, { key: p.key });
    assert.equal(r.status, 404);
    assert.equal(errorBody(r).code, "not_found");
  });

  it("is refused on session routes with 403", async () => {
    // Each POST with a valid body of its own (an unknown field would be a 400 first).
    for (const [m, path, body] of [
      ["GET", "/v1/projects"],
      ["POST", "/v1/projects", { name: "x", platform: "node" }],
      ["GET", `/v1/projects/self/api-keys`],
      ["POST", `/v1/projects/self/api-keys`, { name: "x", environment: "preview" }],
      ["DELETE", `/v1/projects/self`],
      ["GET", `/v1/projects/self/members`],
    ] as [string, string, object?][]) {
      const r = await t.rest.req(m, path, { key: p.key, body });
      assert.equal(r.status, 403, `${m} ${path}: ${r.text}`);
      assert.equal(errorBody(r).code, "forbidden");
    }
  });

  it("rejects missing, malformed and unknown keys with 401", async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: "Bearer" },
      { authorization: "Basic dXNlcjpwYXNz" },
      { authorization: "Bearer not_a_vigil_key" },
      { authorization: "Bearer vk_unknownunknownunknownunknownunknown" },
    ]) {
      const r = await t.rest.get("/v1/projects/self", { headers });
      assert.equal(r.status, 401, JSON.stringify(headers));
      assert.equal(errorBody(r).code, "unauthenticated");
    }
  });

  it("a revoked key stops authenticating on the very next request", async () => {
    const c = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "tmp", environment: "preview" },
      { cookie: p.owner.cookie },
    );
    const key = c.body.data.secret;
    assert.equal((await t.rest.get("/v1/projects/self", { key })).status, 200);
    const rv = await t.rest.del(`/v1/projects/${p.projectId}/api-keys/${c.body.data.id}`, { cookie: p.owner.cookie });
    assert.equal(rv.status, 204);
    assert.equal((await t.rest.get("/v1/projects/self", { key })).status, 401);
    assert.equal(
      (await t.rest.del(`/v1/projects/${p.projectId}/api-keys/${c.body.data.id}`, { cookie: p.owner.cookie })).status,
      404,
    );
    const list = await t.rest.get(`/v1/projects/${p.projectId}/api-keys`, { cookie: p.owner.cookie });
    assert.ok(!list.body.data.some((x: any) => x.id === c.body.data.id));
  });

  it("another project's key id cannot be revoked through this project", async () => {
    const other = await project(t.rest);
    const r = await t.rest.del(`/v1/projects/${p.projectId}/api-keys/${other.keyId}`, { cookie: p.owner.cookie });
    assert.equal(r.status, 404);
    assert.equal((await t.rest.get("/v1/projects/self", { key: other.key })).status, 200);
  });
});
