import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assignSlots, backfillSlots } from "../../src/analytics/assign.js";
import { buildBlock, buildPending, pendingHours } from "../../src/analytics/blocks/build.js";
import { decodeBlock } from "../../src/analytics/blocks/format.js";
import { startTestApp, eventsOf, metricOf } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { ingest } from "../helpers/events.js";
import { useProject } from "../helpers/use.js";

// Building column blocks on a real database: a block holds exactly its hour's events (compared
// column by column with SQL), concurrent builders (several nodes) leave one consistent block per
// hour, and a block is refused while the hour's rollups do not yet account for its events.

const H = 3_600_000;
const T0 = Date.UTC(2024, 4, 6, 8); // an hour boundary
const db = () => t.app.deps.db;
const opts = { sealMs: 0, rebuildMs: 0 };

function events(n: number, offset = 0) {
  return Array.from({ length: n }, (_, i) => ({
    type: ["view", "click", "buy"][i % 3],
    timestamp: new Date(T0 + ((i * 7919 + offset) % 18_000) * 1000).toISOString(),
    userId: i % 5 === 0 ? undefined : `u${i % 17}`,
    data: { plan: ["free", "pro", "team"][i % 3], amount: i % 4 === 0 ? "n/a" : i / 4 },
  }));
}

const { t, p } = useProject(
  { RATE_LIMIT_EVENTS_PER_MINUTE: "100000", ANALYTICS_SLOT_INTERVAL_MS: "0", ANALYTICS_BLOCK_INTERVAL_MS: "0" },
  {},
  async () => {
    await ingest(t.rest, p.key, events(900));
    await assignSlots(db(), p.projectId, new Date(), { sample: 10_000, minShare: 0.01 });
    await backfillSlots(db(), p.projectId, new Date());
    await eventsOf(t.app).derived.settle(p.projectId);
  },
);

describe("column block building", () => {
  it("concurrent builders leave one block per hour, each holding exactly the hour's events", async () => {
    const results = await Promise.all([1, 2, 3].map(() => buildPending(db(), p.projectId, () => new Date(), opts)));
    assert.ok(results.every((r) => r.done));
    assert.deepEqual(await pendingHours(db(), p.projectId, new Date(), opts, 100), []);
    const blocks = await db().query(
      "SELECT hour, rows, keys FROM analytics_blocks WHERE project_id = $1 ORDER BY hour",
      [p.projectId],
    );
    assert.equal(blocks.rows.length, 5);
    for (const b of blocks.rows) {
      assert.deepEqual([...b.keys].sort(), ["amount", "plan"]);
      const sql = await db().query(
        "SELECT type, user_id, data->>'plan' AS plan, CASE WHEN jsonb_typeof(data->'amount') = 'number' THEN (data->>'amount')::float8 END AS amount, jsonb_typeof(data->'amount') = 'string' AS other FROM events WHERE project_id = $1 AND ts >= $2 AND ts < $2::timestamptz + interval '1 hour'",
        [p.projectId, b.hour],
      );
      assert.equal(b.rows, sql.rows.length);
      const cols = await db().query(
        "SELECT name, body FROM analytics_block_columns WHERE project_id = $1 AND hour = $2",
        [p.projectId, b.hour],
      );
      const col = (name: string) => decodeBlock(cols.rows.find((c) => c.name === name).body).columns.get(name)!;
      const values = (name: string) => {
        const c = col(name);
        return c.kind === "s"
          ? [...c.codes].map((x) => (x === 0 ? null : c.dict[x - 1]))
          : [...c.values].map((v) => (Number.isNaN(v) ? null : v));
      };
      // Same multiset of rows (blocks keep no order): compare sorted row tuples.
      const blockRows = values("type")
        .map((type, i) =>
          JSON.stringify([type, values("user_id")[i], values("data.plan")[i], values("data.amount")[i]]),
        )
        .sort();
      const sqlRows = sql.rows.map((r) => JSON.stringify([r.type, r.user_id, r.plan, r.amount])).sort();
      assert.deepEqual(blockRows, sqlRows);
      assert.equal(col("data.amount").other, sql.rows.filter((r) => r.other).length);
      assert.equal(col("data.plan").other, 0);
    }
  });

  it("a block is refused while the hour's rollups lag its events, and built once they are applied", async () => {
    await eventsOf(t.app).derived.stop(); // deltas of new events stay pending until a reader settles
    await ingest(t.rest, p.key, events(30, 1));
    const hour = T0 + 2 * H;
    assert.equal(await buildBlock(db(), p.projectId, hour, new Date()), false);
    await eventsOf(t.app).derived.settle(p.projectId);
    assert.equal(await buildBlock(db(), p.projectId, hour, new Date()), true);
    const r = await db().query(
      "SELECT b.rows, (SELECT count(*)::int FROM events WHERE project_id = $1 AND ts >= $2 AND ts < $2::timestamptz + interval '1 hour') AS n FROM analytics_blocks b WHERE project_id = $1 AND hour = $2",
      [p.projectId, new Date(hour)],
    );
    assert.equal(r.rows[0].rows, r.rows[0].n);
  });
});

describe("the block worker", () => {
  it("builds ended hours in the background, and queries then answer from blocks", async () => {
    const w = await startTestApp({
      RATE_LIMIT_EVENTS_PER_MINUTE: "100000",
      ANALYTICS_SLOT_INTERVAL_MS: "0",
      ANALYTICS_BLOCK_INTERVAL_MS: "100",
      ANALYTICS_BLOCK_SEAL_MS: "0",
    });
    try {
      const q = await project(w.rest);
      await ingest(w.rest, q.key, events(300));
      const deadline = Date.now() + 15_000;
      let n = 0;
      while (
        Date.now() < deadline &&
        (n = (
          await w.app.deps.db.query("SELECT count(*)::int AS n FROM analytics_blocks WHERE project_id = $1", [
            q.projectId,
          ])
        ).rows[0].n) < 5
      ) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(n, 5);
      const used = async () =>
        (await metricOf(w.app, "vigil_analytics_block_queries_total").get()).values.find(
          (v) => v.labels.outcome === "blocks",
        )?.value ?? 0;
      const before = await used();
      const r = await w.rest.post(
        `/v1/projects/${q.projectId}/analytics/group`,
        { time: { start: new Date(T0).toISOString(), end: new Date(T0 + 5 * H).toISOString() }, groupBy: ["userId"] },
        { key: q.key },
      );
      assert.equal(r.status, 200, r.text);
      assert.equal(
        r.body.data.groups.reduce((a: number, g: { count: number }) => a + g.count, 0),
        300,
      );
      assert.equal((await used()) - before, 1);
    } finally {
      await w.close();
    }
  });
});
