import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MAX_FIELDS, pickFields, SAMPLE } from "../../src/analytics/known.js";
import { errorBody, project, signup } from "../helpers/fixtures.js";
import { ingest } from "../helpers/events.js";
import { useProject } from "../helpers/use.js";

// GET /v1/projects/:id/analytics/fields: the event types and fields a filter builder suggests, read
// from bounded samples (daily rollups of 30 days, the latest SAMPLE events).

const { t, p } = useProject({ RATE_LIMIT_EVENTS_PER_MINUTE: "100000", RATE_LIMIT_BATCHES_PER_MINUTE: "10000" });

const fields = (projectId: string, auth: { key?: string; cookie?: string }) =>
  t.rest.get(`/v1/projects/${projectId}/analytics/fields`, auth);

describe("analytics fields", () => {
  it("is empty for a project without events", async () => {
    const q = await project(t.rest);
    const r = await fields(q.projectId, { key: q.key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, { types: [], fields: [], sampled: 0 });
  });

  it("names the types by frequency and the keys of data, context and tags with their JSON types", async () => {
    await ingest(t.rest, p.key, [
      ...Array.from({ length: 3 }, (_, i) => ({
        type: "purchase",
        data: { plan: "pro", amount: 10 * i, paid: true, items: [1], address: { city: "Oslo", zip: 1 } },
        context: { page: { url: "/cart" } },
        tags: { env: "prod" },
      })),
      { type: "signup", data: JSON.parse('{"plan": 5, "has space": 1, "a.b": 2, "__proto__": "x", "constructor": 1}') },
      { type: "signup", data: { nothing: null } },
      { type: "view" },
    ]);
    const r = await fields(p.projectId, { key: p.key });
    assert.equal(r.status, 200, r.text);
    const d = r.body.data;
    assert.deepEqual(d.types, [
      { type: "purchase", count: 3 },
      { type: "signup", count: 2 },
      { type: "view", count: 1 },
    ]);
    assert.equal(d.sampled, 6);
    const by = new Map(d.fields.map((f: { field: string }) => [f.field, f]));
    // The most frequent JSON type wins (string 3 times, number once); the count is every event with it.
    assert.deepEqual(by.get("data.plan"), { field: "data.plan", kind: "string", count: 4 });
    assert.deepEqual(by.get("data.amount"), { field: "data.amount", kind: "number", count: 3 });
    assert.equal((by.get("data.paid") as { kind: string }).kind, "boolean");
    assert.equal((by.get("data.items") as { kind: string }).kind, "array");
    assert.equal((by.get("data.address") as { kind: string }).kind, "object");
    // One level below the top.
    assert.deepEqual(by.get("data.address.city"), { field: "data.address.city", kind: "string", count: 3 });
    assert.equal((by.get("context.page.url") as { kind: string }).kind, "string");
    assert.equal((by.get("tags.env") as { count: number }).count, 3);
    // The server's own context (docs/events.md "Server context").
    assert.ok(by.has("context.userAgent") && by.has("context.receivedAt"));
    // Keys are data: prototype names are fields like any other.
    assert.ok(by.has("data.__proto__") && by.has("data.constructor"));
    // Names no filter can address (a space, a dot inside a key) and null-only keys are left out.
    assert.ok(!by.has("data.has space") && !by.has("data.a.b") && !by.has("data.nothing"));
    // Most frequent first.
    const counts = d.fields.map((f: { count: number }) => f.count);
    assert.deepEqual(
      counts,
      [...counts].sort((a: number, b: number) => b - a),
    );
  });

  it(`reads only the latest ${SAMPLE} events`, async () => {
    const q = await project(t.rest);
    const old = Date.now() - 3_600_000;
    await ingest(
      t.rest,
      q.key,
      Array.from({ length: SAMPLE + 20 }, (_, i) => ({
        type: "tick",
        data: i < 20 ? { old: true } : { fresh: i },
        timestamp: new Date(old + i * 1000).toISOString(),
      })),
    );
    const r = await fields(q.projectId, { key: q.key });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.sampled, SAMPLE);
    const names = r.body.data.fields.map((f: { field: string }) => f.field);
    assert.ok(names.includes("data.fresh"));
    assert.ok(!names.includes("data.old"), "the oldest events are outside the sample");
    assert.deepEqual(r.body.data.types, [{ type: "tick", count: SAMPLE + 20 }]);
  });

  it("answers members' sessions, and no one else", async () => {
    assert.equal((await fields(p.projectId, { cookie: p.owner.cookie })).status, 200);
    assert.equal((await fields(p.projectId, { key: p.key })).status, 200);
    const other = await project(t.rest);
    // Another tenant's key or session: the project does not exist for them.
    const foreign = await fields(p.projectId, { key: other.key });
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal(errorBody(foreign).code, "not_found");
    const stranger = await signup(t.rest, "stranger");
    assert.equal((await fields(p.projectId, { cookie: stranger.cookie })).status, 404);
    const anon = await fields(p.projectId, {});
    assert.equal(anon.status, 401, anon.text);
    assert.equal((await fields("../../v1/projects", { key: p.key })).status >= 400, true);
    assert.equal((await fields("__proto__", { key: p.key })).status, 404);
  });
});

describe("pickFields", () => {
  it("keeps addressable names, picks the majority type, orders by count then name, and caps the list", () => {
    assert.deepEqual(
      pickFields([
        { field: "data.b", kind: "number", n: 2 },
        { field: "data.b", kind: "string", n: 2 },
        { field: "data.a", kind: "string", n: 4 },
        { field: "data.x y", kind: "string", n: 9 },
        { field: "data.n", kind: "null", n: 9 },
        { field: "data.c", kind: "boolean", n: 1 },
        { field: "data.c", kind: "null", n: 5 },
      ]),
      [
        // A tie between types: the first in name order.
        { field: "data.a", kind: "string", count: 4 },
        { field: "data.b", kind: "number", count: 4 },
        { field: "data.c", kind: "boolean", count: 1 },
      ],
    );
    const many = Array.from({ length: MAX_FIELDS + 5 }, (_, i) => ({ field: `data.k${i}`, kind: "string", n: i + 1 }));
    const out = pickFields(many);
    assert.equal(out.length, MAX_FIELDS);
    assert.equal(out[0].field, `data.k${MAX_FIELDS + 4}`);
  });
});
