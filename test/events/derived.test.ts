import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rollupDelta } from "../../src/analytics/rollups.js";
import { mergePacked } from "../../src/identity/projection.js";
import type { StoredEvent } from "../../src/events/pipeline.js";
import { eventsOf } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// Derived records (users, groups, rollups) follow the stored events through `ingest_deltas`
// (src/events/projector.ts): written with the events, applied exactly once by a projector, and settled
// by every reader so an answer never misses an acknowledged event.

const { t, p } = useProject({ RATE_LIMIT_EVENTS_PER_MINUTE: "100000", RATE_LIMIT_BATCHES_PER_MINUTE: "100000" });

const db = () => t.app.deps.db;
const pending = async (projectId: string) =>
  (await db().query("SELECT count(*)::int AS n FROM ingest_deltas WHERE project_id = $1", [projectId])).rows[0]
    .n as number;

async function batch(events: object[]) {
  const r = await t.rest.post("/v1/events/batch", { events }, { key: p.key });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.data.rejected, 0, r.text);
}

describe("derived records", () => {
  it("deltas are pure: per-key aggregates merge in commit order; rollups count per grain and bucket", () => {
    const merged = mergePacked("p", [
      [["u1", { plan: "free", a: 1 }, 2, 200, 300]],
      [
        ["u2", {}, 1, 50, 50],
        ["u1", { plan: "pro" }, 1, 100, 400],
      ],
    ]);
    assert.deepEqual(merged, [
      { projectId: "p", key: "u1", properties: { plan: "pro", a: 1 }, count: 3, first: 100, last: 400 },
      { projectId: "p", key: "u2", properties: {}, count: 1, first: 50, last: 50 },
    ]);
    const at = (iso: string, type: string) => ({ timestamp: new Date(iso), type }) as StoredEvent;
    const d = rollupDelta([
      at("2024-01-01T10:15:30Z", "a"),
      at("2024-01-01T10:15:59Z", "a"),
      at("2024-01-01T10:16:00Z", "a"),
      at("2024-01-01T11:00:00Z", "b"),
    ])!;
    const key = (g: number, iso: string, type: string) =>
      d.find((x) => x[0] === g && x[1] === Date.parse(iso) && x[2] === type)?.[3];
    assert.deepEqual(
      [
        key(0, "2024-01-01T10:15:00Z", "a"),
        key(0, "2024-01-01T10:16:00Z", "a"),
        key(1, "2024-01-01T10:00:00Z", "a"),
        key(2, "2024-01-01T00:00:00Z", "a"),
        key(2, "2024-01-01T00:00:00Z", "b"),
      ],
      [2, 1, 3, 3, 1],
    );
    assert.equal(rollupDelta([]), null);
  });

  it("with the projector stopped, a read settles the project itself: the user and the counts are exact", async () => {
    await eventsOf(t.app).derived.stop(); // no background projection from here on (kicks are ignored)
    await batch([
      { type: "visit", userId: "lazy-1", timestamp: "2024-05-01T10:00:00Z" },
      { type: "$identify", userId: "lazy-1", data: { plan: "pro" }, timestamp: "2024-05-01T10:01:00Z" },
      { type: "visit", userId: "lazy-1", groupId: "org-9", timestamp: "2024-05-01T10:02:00Z" },
    ]);
    assert.ok((await pending(p.projectId)) > 0, "the deltas wait in ingest_deltas");
    const before = await db().query(
      "SELECT count(*)::int AS n FROM users WHERE project_id = $1 AND external_id = 'lazy-1'",
      [p.projectId],
    );
    assert.equal(before.rows[0].n, 0, "not projected yet");

    const u = await t.rest.get(`/v1/projects/${p.projectId}/users/lazy-1`, { key: p.key });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.data.eventCount, 3);
    assert.deepEqual(u.body.data.properties, { plan: "pro" });
    assert.equal(await pending(p.projectId), 0);
    const g = await db().query("SELECT event_count FROM groups WHERE project_id = $1 AND group_id = 'org-9'", [
      p.projectId,
    ]);
    assert.equal(g.rows[0].event_count, 1);

    await batch([{ type: "visit", timestamp: "2024-05-01T10:03:00Z" }]);
    const c = await t.rest.post(
      `/v1/projects/${p.projectId}/analytics/count`,
      { time: { start: "2024-05-01T00:00:00Z", end: "2024-05-02T00:00:00Z" } },
      { key: p.key },
    );
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.data.count, 4, "the count (from rollups) includes the event accepted just before");
  });

  it("concurrent projectors and readers apply every delta exactly once", async () => {
    const derived = eventsOf(t.app).derived;
    const users = 7;
    const rounds = 30;
    const ingest = (async () => {
      for (let i = 0; i < rounds; i++)
        await batch(
          Array.from({ length: 20 }, (_, j) => ({
            type: "tick",
            userId: `race-${(i + j) % users}`,
            timestamp: "2024-05-02T10:00:00Z",
          })),
        );
    })();
    const appliers = Array.from({ length: 4 }, async (_, k) => {
      for (let i = 0; i < rounds; i++) await (k % 2 ? derived.drain() : derived.settle(p.projectId));
    });
    await Promise.all([ingest, ...appliers]);
    await derived.settle(p.projectId);
    assert.equal(await pending(p.projectId), 0);
    const r = await db().query(
      "SELECT sum(event_count)::int AS n FROM users WHERE project_id = $1 AND external_id LIKE 'race-%'",
      [p.projectId],
    );
    assert.equal(r.rows[0].n, rounds * 20);
    const roll = await db().query(
      "SELECT grain, sum(count)::int AS n FROM analytics_rollups WHERE project_id = $1 AND type = 'tick' GROUP BY grain ORDER BY grain",
      [p.projectId],
    );
    assert.deepEqual(
      roll.rows.map((x) => x.n),
      [rounds * 20, rounds * 20, rounds * 20],
    );
  });

  it("drops the pending deltas of a deleted project instead of failing every later pass", async () => {
    const derived = eventsOf(t.app).derived;
    await derived.stop();
    try {
      const gone = await project(t.rest);
      const r = await t.rest.post(
        "/v1/events/batch",
        { events: [{ type: "v", userId: "ghost", groupId: "ghost-org" }] },
        { key: gone.key },
      );
      assert.equal(r.status, 202, r.text);
      assert.ok((await pending(gone.projectId)) > 0);
      const del = await t.rest.req("DELETE", `/v1/projects/${gone.projectId}`, { cookie: gone.owner.cookie });
      assert.equal(del.status, 204, del.text);
      const live = await project(t.rest);
      const r2 = await t.rest.post("/v1/events/batch", { events: [{ type: "v", userId: "alive" }] }, { key: live.key });
      assert.equal(r2.status, 202, r2.text);
      await derived.drain(); // rejects if a delta of the deleted project fails the users foreign key
      assert.equal(await pending(gone.projectId), 0);
      assert.equal(await pending(live.projectId), 0);
      const u = await db().query("SELECT event_count FROM users WHERE project_id = $1 AND external_id = 'alive'", [
        live.projectId,
      ]);
      assert.equal(Number(u.rows[0]?.event_count), 1);
    } finally {
      derived.start();
    }
  });
});
