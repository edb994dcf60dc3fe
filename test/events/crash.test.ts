import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { project } from "../helpers/fixtures.js";

// 202 means durable: kill -9 the real server mid-stream, restart it on the same database, and
// find every event that was answered 202 (and the identities they created).

const nodes: Node[] = [];
after(async () => {
  for (const n of nodes) await n.kill("SIGKILL");
});

describe("crash safety", () => {
  it("keeps every event answered 202 across kill -9 and restart", async () => {
    const databaseUrl = await createTestDatabase();
    const env = {
      DATABASE_URL: databaseUrl,
      RATE_LIMIT_EVENTS_PER_MINUTE: "1000000",
      RATE_LIMIT_BATCHES_PER_MINUTE: "1000000",
      TEMPORAL_ADDRESS: "",
    };
    let node = await startNode(env);
    nodes.push(node);
    const { rest } = node;
    const p = await project(rest);

    const acked: string[] = [];
    let failures = 0;
    let stop = false;
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        try {
          if (i % 2) {
            const r = await rest.post("/v1/events", { type: "crash", userId: `u${w}`, data: { w, i } }, { key: p.key });
            if (r.status === 202) acked.push(r.body.data.id);
          } else {
            const r = await rest.post(
              "/v1/events/batch",
              {
                events: Array.from({ length: 20 }, (_, k) => ({
                  type: "crash-batch",
                  userId: `u${k % 5}`,
                  data: { w, i, k },
                })),
              },
              { key: p.key },
            );
            if (r.status === 202) acked.push(...r.body.data.events.map((e: { id: string }) => e.id));
          }
        } catch {
          failures++;
          if (stop) return;
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    };
    const workers = Array.from({ length: 12 }, (_, w) => worker(w));
    while (acked.length < 1500) await new Promise((r) => setTimeout(r, 10));
    await node.kill("SIGKILL");
    const ackedAtKill = acked.length;
    await new Promise((r) => setTimeout(r, 200));
    stop = true;
    await Promise.all(workers);
    assert.ok(failures > 0, "requests were in flight when the server died");

    // The restarted node on the same database (and port: a client would come back to it).
    node = await startNode(env, node.port);
    nodes.push(node);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const r = await db.query<{ id: string }>(
        "SELECT id::text FROM events WHERE project_id = $1 AND id = ANY($2::uuid[])",
        [p.projectId, acked],
      );
      const found = new Set(r.rows.map((x) => x.id));
      const lost = acked.filter((id) => !found.has(id));
      assert.equal(lost.length, 0, `${lost.length} of ${acked.length} acknowledged events lost`);
      assert.ok(acked.length >= ackedAtKill);
      // Identities are derived from stored events: the deltas committed with the events before the
      // kill are applied by the restarted server, and then the counts match exactly.
      for (let i = 0; i < 100; i++) {
        const pending = await db.query("SELECT count(*)::int AS n FROM ingest_deltas WHERE project_id = $1", [
          p.projectId,
        ]);
        if (pending.rows[0].n === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const u = await db.query(
        "SELECT (SELECT coalesce(sum(event_count), 0)::int FROM users WHERE project_id = $1) AS counted, (SELECT count(*)::int FROM events WHERE project_id = $1 AND user_id IS NOT NULL) AS stored",
        [p.projectId],
      );
      assert.equal(u.rows[0].counted, u.rows[0].stored);
    } finally {
      await db.end();
    }
    // and the restarted server serves them
    const sample = acked[Math.floor(acked.length / 2)];
    const got = await rest.get(`/v1/projects/self/events/${sample}`, { key: p.key });
    assert.equal(got.status, 200);
    await node.kill("SIGTERM");
  });
});
