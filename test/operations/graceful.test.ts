// SIGTERM under load: the node stops accepting, answers what is in flight, and everything it
// answered 202 is stored; nothing in flight is cut off mid-request.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { sessionCookie } from "../helpers/rest.js";

let node: Node;
let databaseUrl: string;
let key: string;

before(async () => {
  databaseUrl = await createTestDatabase();
  node = await startNode({
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_EVENTS_PER_MINUTE: "1000000",
    RATE_LIMIT_BATCHES_PER_MINUTE: "1000000",
  });
  const s = await node.rest.post("/v1/auth/signup", { email: "drain@example.com", password: "long enough" });
  const cookie = sessionCookie(s);
  const p = await node.rest.post("/v1/projects", { name: "drain", platform: "node" }, { cookie });
  const k = await node.rest.post(
    `/v1/projects/${p.body.data.id}/api-keys`,
    { name: "k", environment: "production" },
    { cookie },
  );
  key = k.body.data.secret;
});
after(() => node.kill("SIGKILL"));

describe("graceful shutdown", () => {
  it("drains in-flight requests on SIGTERM and keeps every acknowledged event", async () => {
    const acked: string[] = [];
    const outcomes = { answered: 0, refusedAfterClose: 0 };
    let stop = false;
    const loops = Array.from({ length: 16 }, async (_, l) => {
      for (let i = 0; !stop; i++) {
        try {
          const r = await node.rest.post(
            "/v1/events/batch",
            { events: Array.from({ length: 20 }, (_, j) => ({ type: "drain", data: { l, i, j } })) },
            { key },
          );
          outcomes.answered++;
          assert.ok(r.status === 202 || r.status === 503, `unexpected ${r.status}: ${r.text}`);
          if (r.status === 202) acked.push(...r.body.data.events.map((e: any) => e.id));
        } catch {
          // After the listener closed, new connections are refused: that is the drain working.
          outcomes.refusedAfterClose++;
          return;
        }
      }
    });
    while (acked.length < 400) await new Promise((r) => setTimeout(r, 20));
    const code = await node.kill("SIGTERM");
    stop = true;
    await Promise.all(loops);
    assert.equal(code, 0, `exit code ${code}: ${node.stderr()}`);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const r = await db.query<{ id: string }>(
        "SELECT id::text FROM events WHERE type = 'drain' AND id = ANY($1::uuid[])",
        [acked],
      );
      assert.equal(
        r.rowCount,
        acked.length,
        `${acked.length - (r.rowCount ?? 0)} acknowledged events missing after SIGTERM`,
      );
    } finally {
      await db.end();
    }
  });
});
