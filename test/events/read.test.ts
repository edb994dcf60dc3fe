import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { errorBody, project, signup, type ProjectFixture } from "../helpers/fixtures.js";
import { pageAllEvents } from "../helpers/events.js";
import { useProject } from "../helpers/use.js";

const { t, p } = useProject();

async function ingest(fx: ProjectFixture, events: object[]): Promise<string[]> {
  const r = await t.rest.post("/v1/events/batch", { events }, { key: fx.key });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.data.rejected, 0, r.text);
  return r.body.data.events.map((e: { id: string }) => e.id);
}

const pageAll = (fx: ProjectFixture, query: string, limit: number) => pageAllEvents(t.rest, fx.key, query, limit);

describe("GET /v1/projects/:projectId/events", () => {
  let q: ProjectFixture;
  before(async () => {
    q = await project(t.rest);
    await ingest(q, [
      { type: "signup", userId: "alice", source: "web", data: { plan: "Pro" }, timestamp: "2024-03-01T10:00:00Z" },
      { type: "login", userId: "alice", source: "web", timestamp: "2024-03-02T10:00:00Z" },
      {
        type: "login",
        userId: "bob",
        source: "ios",
        context: { device: "iPhone 15" },
        timestamp: "2024-03-03T10:00:00Z",
      },
      { type: "purchase", userId: "bob", source: "ios", data: { sku: "100%_off" }, timestamp: "2024-03-04T10:00:00Z" },
      { type: "Checkout", timestamp: "2024-03-05T10:00:00Z" },
    ]);
  });

  it("lists newest first with pagination, default limit 50", async () => {
    const r = await t.rest.get(`/v1/projects/${q.projectId}/events`, { key: q.key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.body.data.map((e: any) => e.type),
      ["Checkout", "purchase", "login", "login", "signup"],
    );
    assert.deepEqual(r.body.pagination, { nextCursor: null, hasMore: false });
  });

  it("filters by type, userId and source key", async () => {
    const types = async (qs: string) =>
      (await t.rest.get(`/v1/projects/self/events?${qs}`, { key: q.key })).body.data.map(
        (e: any) => `${e.type}/${e.userId}`,
      );
    assert.deepEqual(await types("type=login"), ["login/bob", "login/alice"]);
    assert.deepEqual(await types("userId=alice"), ["login/alice", "signup/alice"]);
    assert.deepEqual(await types("source=ios"), ["purchase/bob", "login/bob"]);
    assert.deepEqual(await types("source=nope"), []);
    assert.deepEqual(await types("type=login&userId=bob"), ["login/bob"]);
  });

  it("searches type, user, data and context case-insensitively, wildcards literal", async () => {
    const types = async (s: string) =>
      (await t.rest.get(`/v1/projects/self/events?search=${encodeURIComponent(s)}`, { key: q.key })).body.data.map(
        (e: any) => e.type,
      );
    assert.deepEqual(await types("checkout"), ["Checkout"]);
    assert.deepEqual(await types("ALICE"), ["login", "signup"]);
    assert.deepEqual(await types("pro"), ["signup"]);
    assert.deepEqual(await types("iphone"), ["login"]);
    assert.deepEqual(await types("100%_"), ["purchase"]);
    assert.deepEqual(await types("%"), ["purchase"]);
    assert.deepEqual(await types("_"), ["purchase"]);
  });

  it("treats startDate and endDate as inclusive", async () => {
    const r = await t.rest.get(
      `/v1/projects/self/events?startDate=2024-03-02T10:00:00Z&endDate=2024-03-04T10:00:00.000Z`,
      { key: q.key },
    );
    assert.deepEqual(
      r.body.data.map((e: any) => e.timestamp),
      ["2024-03-04T10:00:00.000Z", "2024-03-03T10:00:00.000Z", "2024-03-02T10:00:00.000Z"],
    );
    const off = await t.rest.get(
      `/v1/projects/self/events?startDate=${encodeURIComponent("2024-03-05T12:00:00+02:00")}`,
      { key: q.key },
    );
    assert.deepEqual(
      off.body.data.map((e: any) => e.type),
      ["Checkout"],
    );
  });

  for (const [label, qs] of [
    ["limit 0", "limit=0"],
    ["limit 101", "limit=101"],
    ["limit -1", "limit=-1"],
    ["limit abc", "limit=abc"],
    ["limit 1.5", "limit=1.5"],
    ["a date without timezone", "startDate=2024-03-01T00:00:00"],
    ["a garbage date", "endDate=tomorrow"],
    ["start after end", "startDate=2024-03-05T00:00:00Z&endDate=2024-03-01T00:00:00Z"],
    ["a forged cursor", "cursor=bm90LWEtY3Vyc29y"],
    ["a cursor with hostile characters", `cursor=${encodeURIComponent("'; DROP TABLE events; --")}`],
  ]) {
    it(`answers 400 for ${label}`, async () => {
      const r = await t.rest.get(`/v1/projects/self/events?${qs}`, { key: q.key });
      assert.equal(r.status, 400, r.text);
      errorBody(r);
    });
  }

  it("accepts limit 1 and 100", async () => {
    assert.equal((await t.rest.get(`/v1/projects/self/events?limit=1`, { key: q.key })).body.data.length, 1);
    assert.equal((await t.rest.get(`/v1/projects/self/events?limit=100`, { key: q.key })).status, 200);
  });

  it("is readable by a member's session, not by a stranger's or another project's key", async () => {
    const s = await t.rest.get(`/v1/projects/${q.projectId}/events`, { cookie: q.owner.cookie });
    assert.equal(s.status, 200);
    assert.equal(s.body.data.length, 5);
    const stranger = await signup(t.rest, "stranger");
    const r = await t.rest.get(`/v1/projects/${q.projectId}/events`, { cookie: stranger.cookie });
    assert.equal(r.status, 404);
    errorBody(r);
    const other = await t.rest.get(`/v1/projects/${q.projectId}/events`, { key: p.key });
    assert.equal(other.status, 404);
    errorBody(other);
    const none = await t.rest.get(`/v1/projects/${q.projectId}/events`);
    assert.equal(none.status, 401);
  });
});

describe("GET /v1/projects/:projectId/events/:eventId", () => {
  it("is 404 for another tenant's event, an unknown id and a malformed id", async () => {
    const other = await project(t.rest);
    const [id] = await ingest(other, [{ type: "secret" }]);
    assert.equal((await t.rest.get(`/v1/projects/self/events/${id}`, { key: other.key })).status, 200);
    const cross = await t.rest.get(`/v1/projects/self/events/${id}`, { key: p.key });
    assert.equal(cross.status, 404);
    assert.equal(errorBody(cross).code, "not_found");
    const viaPath = await t.rest.get(`/v1/projects/${other.projectId}/events/${id}`, { key: p.key });
    assert.equal(viaPath.status, 404);
    assert.ok(!viaPath.text.includes("secret"));
    for (const bad of [
      "nope",
      "00000000-0000-0000-0000-000000000000",
      "018f0000-0000-7000-8000-000000000000",
      encodeURIComponent("' OR 1=1 --"),
      "x".repeat(5000),
    ]) {
      const r = await t.rest.get(`/v1/projects/self/events/${bad}`, { key: p.key });
      assert.equal(r.status, 404, `${bad.slice(0, 40)}: ${r.text}`);
      errorBody(r);
    }
  });

  it("accepts the id in upper case", async () => {
    const [id] = await ingest(p, [{ type: "upper" }]);
    const r = await t.rest.get(`/v1/projects/self/events/${id.toUpperCase()}`, { key: p.key });
    assert.equal(r.status, 200);
    assert.equal(r.body.data.id, id);
  });
});

describe("keyset pagination", () => {
  it("never skips or repeats an event while new events arrive", async () => {
    const q = await project(t.rest);
    const base = Date.parse("2024-06-01T00:00:00Z");
    // 300 events, many sharing a millisecond (ties are broken by id)
    const initial = await ingest(
      q,
      Array.from({ length: 300 }, (_, i) => ({
        type: "seed",
        timestamp: new Date(base + Math.floor(i / 7) * 1000).toISOString(),
      })),
    );
    let stop = false;
    const arrivals = (async () => {
      let n = 0;
      while (!stop) {
        // new events both newer than everything and in the middle of the range already paged
        const ts = n % 2 === 0 ? new Date().toISOString() : new Date(base + (n % 40) * 1000).toISOString();
        await ingest(q, [{ type: "late", timestamp: ts }, { type: "late" }]);
        n++;
      }
      return n;
    })();
    const seen = await pageAll(q, "", 7);
    stop = true;
    const writes = await arrivals;
    assert.ok(writes > 0, "events arrived during pagination");
    const ids = seen.map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length, "no event repeated");
    const seenSet = new Set(ids);
    for (const id of initial) assert.ok(seenSet.has(id), `event ${id} skipped`);
    for (let i = 1; i < seen.length; i++) {
      const a = seen[i - 1],
        b = seen[i];
      assert.ok(a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.id > b.id), "ordered newest first");
    }
  });

  it("keeps filters across pages", async () => {
    const q = await project(t.rest);
    await ingest(
      q,
      Array.from({ length: 25 }, (_, i) => ({ type: i % 2 ? "odd" : "even", userId: `u${i % 3}` })),
    );
    const odd = await pageAll(q, "&type=odd", 4);
    assert.equal(odd.length, 12);
    assert.ok(odd.every((e) => e.type === "odd"));
  });
});
