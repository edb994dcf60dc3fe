import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AnalyticsService } from "../../gen/vigil/v1/analytics_pb.js";
import { errorBody, project } from "../helpers/fixtures.js";
import { ingest } from "../helpers/events.js";
import { ALL, EVENTS } from "./dataset.js";
import { useProject } from "../helpers/use.js";

// Every operator and alias, nesting, the typed comparison rules and hostile input, over the real
// port against the fixed data set of dataset.ts (answers known by hand).

const ENV = {
  RATE_LIMIT_EVENTS_PER_MINUTE: "100000",
  RATE_LIMIT_BATCHES_PER_MINUTE: "10000",
  ANALYTICS_SLOT_INTERVAL_MS: "0",
};
const { t, p } = useProject(ENV, {}, async () => {
  await ingest(t.rest, p.key, EVENTS);
});

const post = (route: string, body: unknown, key = p.key, projectId = p.projectId) =>
  t.rest.post(`/v1/projects/${projectId}/${route}`, body, { key });
async function count(filters: unknown, time: unknown = ALL): Promise<number> {
  const r = await post("analytics/count", { filters, time });
  assert.equal(r.status, 200, r.text);
  return r.body.data.count;
}
const c = (field: string, operator: string, value?: unknown) =>
  value === undefined ? { field, operator } : { field, operator, value };

describe("filters over the real port", () => {
  it("counts the whole window inclusively, and both bounds are inclusive", async () => {
    assert.equal(await count(undefined), 8);
    assert.equal(await count(null, { start: "2024-01-01T00:59:59.999Z", end: "2024-01-01T01:00:00Z" }), 2);
    assert.equal(await count(null, { start: "2024-01-01T02:59:59.999+02:00", end: "2024-01-01T01:00:00Z" }), 2);
  });

  for (const [label, filter, expected] of [
    ["equals string", c("plan", "equals", "pro"), 3],
    ["equals number (JSON type of the value)", c("amount", "equals", 40), 0],
    ["equals string vs number", c("amount", "equals", "40"), 1],
    ["equals boolean", c("flag", "equals", true), 1],
    ["equals 'true' string is not boolean", c("flag", "equals", "true"), 0],
    ["not_equals includes missing fields", c("plan", "not_equals", "pro"), 5],
    ["contains (case-sensitive)", c("plan", "contains", "ro"), 3],
    ["contains is case-sensitive", c("plan", "contains", "RO"), 0],
    ["not_contains", c("plan", "not_contains", "ro"), 5],
    ["starts_with", c("plan", "starts_with", "fr"), 1],
    ["ends_with", c("plan", "ends_with", "am"), 1],
    ["not_starts_with includes missing fields (Vigil's own)", c("plan", "not_starts_with", "fr"), 7],
    ["not_ends_with includes missing fields (Vigil's own)", c("plan", "not_ends_with", "am"), 7],
    [
      "not_starts_with: of the amounts only the string '40' is text starting with 4",
      c("amount", "not_starts_with", "4"),
      7,
    ],
    ["in with mixed types", c("amount", "in", [10, "40"]), 2],
    ["not_in", c("amount", "not_in", [10, "40"]), 6],
    ["gt numeric ignores strings", c("amount", "gt", 25), 4],
    ["gte", c("amount", "gte", 30), 4],
    ["lt", c("amount", "lt", 20), 1],
    ["lte", c("amount", "lte", 20), 2],
    ["exists (JSON null is null)", c("plan", "exists"), 5],
    ["not_exists", c("plan", "not_exists"), 3],
    ["gt ISO timestamp on a data string", c("when", "gt", "2024-01-01T11:00:00+00:00"), 1],
    ["lt ISO timestamp on a data string", c("data.when", "lt", "2024-01-01T11:00:00Z"), 0],
    ["timestamp gt", c("timestamp", "gt", "2024-01-08T00:00:00Z"), 3],
    ["timestamp gte", c("timestamp", "gte", "2024-01-08T00:00:00Z"), 4],
    ["alias event", c("event", "equals", "view"), 3],
    ["type", c("type", "in", ["signup", "view"]), 5],
    ["alias userId", c("userId", "equals", "u1"), 2],
    ["alias groupId", c("groupId", "equals", "g1"), 1],
    ["alias sourceId", c("sourceId", "exists"), 2],
    ["alias createdAt", c("createdAt", "gte", "2000-01-01T00:00:00Z"), 8],
    ["userId equals a number never matches a string column", c("userId", "equals", 1), 0],
    ["nested data path", c("data.nested.a.b", "equals", "deep"), 1],
    ["multi-segment path resolves against data", c("nested.a.b", "equals", "deep"), 1],
    ["context path", c("context.page.path", "equals", "/buy"), 1],
    ["tags path", c("tags.env", "equals", "prod"), 1],
    ["hostile value matches nothing", c("plan", "equals", "'; DROP TABLE events; --"), 0],
    ["quotes, semicolons and backslashes as values", c("note", "contains", '; a "test" \\ h'), 1],
    ["or", { or: [c("event", "equals", "signup"), c("amount", "gt", 65)] }, 3],
    ["and", { and: [c("event", "equals", "purchase"), c("plan", "equals", "pro")] }, 2],
    ["top-level array is an and", [c("event", "equals", "purchase"), c("userId", "equals", "u3")], 2],
    ["empty group constrains nothing", { and: [] }, 8],
  ] as const) {
    it(`${label}`, async () => {
      assert.equal(await count(filter), expected);
    });
  }

  it("projectId alias is this project", async () => {
    assert.equal(await count(c("projectId", "equals", p.projectId)), 8);
  });

  it("accepts five nested groups and refuses a sixth with 400", async () => {
    const nest = (d: number) => {
      let n: unknown = c("event", "equals", "view");
      for (let i = 0; i < d; i++) n = i % 2 ? { and: [n] } : { or: [n, c("event", "equals", "nope")] };
      return n;
    };
    assert.equal(await count(nest(5)), 3);
    const r = await post("analytics/count", { filters: nest(6), time: ALL });
    assert.equal(r.status, 400);
    assert.equal(errorBody(r).code, "validation_failed");
  });

  it("answers hostile field names with 400 and leaves the data intact", async () => {
    for (const field of [
      "data.'; DROP TABLE events;--",
      "a..b",
      ".a",
      "a.",
      "",
      "a\\b",
      'a"b',
      "a;b",
      "a b",
      "data.x'y",
    ]) {
      const r = await post("analytics/count", { filters: c(field, "equals", 1), time: ALL });
      assert.equal(r.status, 400, `${field}: ${r.text}`);
      errorBody(r);
      for (const route of ["analytics/unique", "analytics/group"]) {
        const u = await post(route, { field, groupBy: [field], time: ALL });
        assert.equal(u.status, 400, `${route} ${field}`);
      }
    }
    assert.equal(await count(undefined), 8);
  });

  it("answers malformed requests with clean 400s", async () => {
    for (const body of [
      { filters: c("plan", "equals", "pro") },
      { time: { start: "2024-01-01T00:00:00", end: "2024-01-02T00:00:00Z" } },
      { time: { start: "2024-01-02T00:00:00Z", end: "2024-01-01T00:00:00Z" } },
      { time: "yesterday" },
      { time: { start: 5, end: 6 } },
      { time: ALL, filters: c("plan", "like", "x") },
      { time: ALL, filters: c("plan", "in", "pro") },
      { time: ALL, filters: c("plan", "exists", "x") },
      { time: ALL, filters: c("amount", "gt", "ten") },
      { time: ALL, filters: { field: 1, operator: "equals", value: 1 } },
      { time: ALL, filters: "plan = pro" },
    ]) {
      const r = await post("analytics/count", body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      errorBody(r);
    }
  });

  it("answers another tenant's project with 404 and a revoked key with 401", async () => {
    const other = await project(t.rest);
    const r = await post("analytics/count", { time: ALL }, p.key, other.projectId);
    assert.equal(r.status, 404);
    assert.equal(errorBody(r).code, "not_found");
    const s = await post("analytics/count", { time: ALL }, other.key, "self");
    assert.equal(s.body.data.count, 0);
    const k = await t.rest.post(
      `/v1/projects/${other.projectId}/api-keys`,
      { name: "tmp", environment: "development" },
      { cookie: other.owner.cookie },
    );
    await t.rest.del(`/v1/projects/${other.projectId}/api-keys/${k.body.data.id}`, { cookie: other.owner.cookie });
    const revoked = await post("analytics/count", { time: ALL }, k.body.data.secret, other.projectId);
    assert.equal(revoked.status, 401);
    errorBody(revoked);
  });

  it("serves a member's session as well as the key", async () => {
    const r = await t.rest.post(
      `/v1/projects/${p.projectId}/analytics/count`,
      { time: ALL },
      { cookie: p.owner.cookie },
    );
    assert.equal(r.body.data.count, 8);
  });

  it("answers over gRPC too", async () => {
    const client = createClient(AnalyticsService, createGrpcTransport({ baseUrl: t.url }));
    const r = await client.count(
      {
        projectId: p.projectId,
        time: ALL,
        filters: fromJson(ValueSchema, c("event", "equals", "purchase") as JsonValue),
      },
      { headers: { authorization: `Bearer ${p.key}` } },
    );
    assert.equal(r.data?.count, 3n);
    const g = await client.group(
      { projectId: "self", time: ALL, groupBy: ["event"] },
      { headers: { authorization: `Bearer ${p.key}` } },
    );
    assert.deepEqual(g.data?.groups.slice(0, 2), [
      { event: "purchase", count: 3 },
      { event: "view", count: 3 },
    ]);
  });
});
