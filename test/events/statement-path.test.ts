import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assignSlots } from "../../src/analytics/assign.js";
import { metricOf } from "../helpers/app.js";
import { useProject } from "../helpers/use.js";

// Small groups whose hooks can answer from their caches are written by one guarded statement
// (GroupCommitIngestor.writeStatement); everything else by the transaction. Both must store the same.

const { t, p } = useProject({ WEBHOOK_ALLOW_PRIVATE: "true" });

async function commits(): Promise<{ statement: number; transaction: number }> {
  const values = (await metricOf(t.app, "vigil_ingest_commits_total").get()).values;
  const n = (path: string) => values.find((v) => v.labels.path === path)?.value ?? 0;
  return { statement: n("statement"), transaction: n("transaction") };
}

async function send(body: object): Promise<string> {
  const r = await t.rest.post("/v1/events", body, { key: p.key });
  assert.equal(r.status, 202, r.text);
  return r.body.data.id;
}

const stored = async (id: string) =>
  (
    await t.app.deps.db.query("SELECT source_id, n1, s1, data FROM events WHERE project_id = $1 AND id = $2", [
      p.projectId,
      id,
    ])
  ).rows[0];

describe("the one-statement ingest path", () => {
  it("writes a small group in one statement once partitions, sources and registry are cached", async () => {
    await send({ type: "warm", source: "web", data: { amount: 1, plan: "free" } }); // caches partition, source, registry
    const before = await commits();
    const id = await send({ type: "again", source: "web", data: { amount: 2, plan: "pro" } });
    const after = await commits();
    assert.equal(after.statement - before.statement, 1, JSON.stringify({ before, after }));
    assert.equal(after.transaction, before.transaction);
    const row = await stored(id);
    assert.ok(row.source_id, "source resolved from the cache");
    assert.deepEqual(row.data, { amount: 2, plan: "pro" });
    const u = await t.rest.get("/v1/projects/self/users", { key: p.key });
    assert.equal(u.status, 200);
  });

  it("falls back to the transaction when the registry moved since it was cached, and fills the new slots", async () => {
    for (let i = 0; i < 5; i++) await send({ type: "seed", data: { amount: i, plan: "pro" } });
    const assigned = await assignSlots(t.app.deps.db, p.projectId, new Date(), { sample: 1000, minShare: 0.01 });
    assert.ok(assigned.includes("amount") && assigned.includes("plan"), JSON.stringify(assigned));
    const before = await commits();
    const id = await send({ type: "after-assign", data: { amount: 42, plan: "team" } });
    const after = await commits();
    assert.equal(after.transaction - before.transaction, 1, "the guard refused the stale registry");
    const row = await stored(id);
    assert.equal(row.n1, 42);
    assert.equal(row.s1, "team");
    // and the next group, with the registry cached again, takes the statement with the slots filled
    const id2 = await send({ type: "after-assign", data: { amount: 7, plan: "free" } });
    const later = await commits();
    assert.equal(later.statement - after.statement, 1);
    const row2 = await stored(id2);
    assert.equal(row2.n1, 7);
    assert.equal(row2.s1, "free");
  });

  it("takes the transaction for metric events and for events a webhook watches", async () => {
    const m0 = await commits();
    const inc = await t.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "increment", name: "jobs", value: 1 },
      { key: p.key },
    );
    assert.equal(inc.status, 201, inc.text);
    const m1 = await commits();
    assert.equal(m1.transaction - m0.transaction, 1, "metric events take the transaction (their hook writes points)");
    const points = await t.app.deps.db.query(
      "SELECT count(*)::int AS n FROM metric_points p JOIN metrics m ON m.id = p.metric_id WHERE m.project_id = $1 AND m.name = 'jobs'",
      [p.projectId],
    );
    assert.equal(points.rows[0].n, 1);
    const hook = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { url: "http://127.0.0.1:9/hook", events: ["watched"] },
      { cookie: p.owner.cookie },
    );
    assert.ok(hook.status === 201 || hook.status === 200, hook.text);
    await send({ type: "unwatched" }); // refreshes the subscription cache
    const before = await commits();
    await send({ type: "watched" });
    const after = await commits();
    assert.equal(after.transaction - before.transaction, 1);
    const outbox = await t.app.deps.db.query("SELECT count(*)::int AS n FROM webhook_outbox WHERE project_id = $1", [
      p.projectId,
    ]);
    const deliveries = await t.app.deps.db.query(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1",
      [p.projectId],
    );
    assert.ok(outbox.rows[0].n + deliveries.rows[0].n >= 1, "the watched event was handed to the webhook");
  });
});
