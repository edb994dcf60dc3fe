import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { recordNotices, sleep, waitFor } from "./util.js";

// Run timeouts across nodes (issue #32): two instances on one database, each watching every
// monitor; a run that hangs is timed out once (one run ended, one failure counted, one incident, one
// notification), whichever node's runner gets there first.

const apps: TestApp[] = [];
after(async () => {
  for (const a of apps) await a.close().catch(() => undefined);
});

describe("run timeouts on two nodes", () => {
  it("each hung run is timed out exactly once", async () => {
    const a = await startTestApp();
    apps.push(a);
    const b = await startTestApp({}, { databaseUrl: a.databaseUrl });
    apps.push(b);
    const seen = [...[a, b].map((x) => recordNotices(x))];
    const p = await project(a.rest);
    const N = 10;
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      const node = i % 2 ? a : b;
      const m = await node.rest.post(
        `/v1/projects/${p.projectId}/monitors`,
        { name: `job ${i}`, slug: `job-${i}`, expectedIntervalMs: 3_600_000, maxRuntimeMs: 1000, failureTolerance: 1 },
        { key: p.key },
      );
      assert.equal(m.status, 201, m.text);
      ids.push(m.body.data.id);
      // Two hung runs each, started on alternate nodes: the second failure takes the monitor down.
      for (const n of [a, b]) {
        const r = await n.rest.post(`/v1/projects/${p.projectId}/heartbeats/job-${i}/start`, {}, { key: p.key });
        assert.equal(r.status, 200, r.text);
      }
    }
    await waitFor(
      async () => {
        const r = await a.app.deps.db.query(
          "SELECT count(*) AS n FROM monitors WHERE id = ANY($1) AND status = 'down'",
          [ids],
        );
        return r.rows[0].n === N;
      },
      15_000,
      "all down",
    );
    await sleep(300); // let a losing node finish its attempt
    const db = a.app.deps.db;
    const runs = await db.query(
      "SELECT outcome, count(*) AS n FROM monitor_runs WHERE monitor_id = ANY($1) GROUP BY outcome",
      [ids],
    );
    assert.deepEqual(runs.rows, [{ outcome: "timed_out", n: 2 * N }]);
    const counts = await db.query("SELECT consecutive_failures AS f FROM monitors WHERE id = ANY($1)", [ids]);
    assert.ok(
      counts.rows.every((r) => r.f === 2),
      `each timeout counted once: ${JSON.stringify(counts.rows)}`,
    );
    const inc = await db.query(
      "SELECT monitor_id, count(*) AS n FROM incidents WHERE monitor_id = ANY($1) GROUP BY monitor_id",
      [ids],
    );
    assert.equal(inc.rows.length, N);
    assert.ok(
      inc.rows.every((r) => r.n === 1),
      "one incident per monitor",
    );
    const started = seen.flat().filter((n) => n.type === "incident.started");
    assert.equal(started.length, N, "one incident.started per monitor across both nodes");
    for (const n of started)
      assert.match(String((n.payload as { incident: { description: string } }).incident.description), /timed out/);
  });
});
