import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { project } from "../helpers/fixtures.js";
import { useReceiver, waitFor } from "../webhooks/receiver.js";

// kill -9 mid-evaluation (issue #31 point 5; decisions.md: Alerts, "Exactly once"): two real nodes
// on one database evaluate the same alert. The test holds a SHARE lock on `incidents`, so the node
// that claims the evaluation (its alert_evaluations row inserted in the evaluation's transaction)
// stops at the incident's INSERT, and the other waits behind it on the monitor's row lock. That node
// is killed with SIGKILL (found by its connections' application_name), the lock released, and the
// killed node started again: the other node (or the restarted one) applies the evaluation, and there
// is exactly one incident, one claim row for the due time and one incident.started delivery. A claim
// that outlived its transaction (committed apart from the incident) would leave no incident at all.
// Embedded runner only (TEMPORAL_ADDRESS empty); Temporal's deadline scan runs the same evaluator.ts.

const EVERY = 10_000;
const nodes: Node[] = [];
after(async () => {
  for (const n of nodes) await n.kill("SIGKILL").catch(() => undefined);
});
const rx = useReceiver();

describe("alert evaluation and kill -9", () => {
  it("one incident and one incident.started delivery when the evaluating node dies mid-transaction", async () => {
    const databaseUrl = await createTestDatabase();
    const env = (name: string) => ({
      DATABASE_URL: `${databaseUrl}${databaseUrl.includes("?") ? "&" : "?"}application_name=${name}`,
      TEMPORAL_ADDRESS: "",
      WEBHOOK_ALLOW_PRIVATE: "true",
      WEBHOOK_BACKOFF_BASE_MS: "100",
      RATE_LIMIT_WRITES_PER_MINUTE: "100000",
    });
    const [a, b] = await Promise.all([startNode(env("vigil-a")), startNode(env("vigil-b"))]);
    nodes.push(a, b);
    const p = await project(a.rest);
    const url = rx.on("/crash", () => ({ status: 200, body: "ok" }));
    const w = await a.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: "pager", url, events: ["incident.started"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(w.status, 201, w.text);
    const e = await a.rest.post("/v1/events", { type: "signup" }, { key: p.key });
    assert.equal(e.status, 202, e.text);

    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      // Inserts into incidents wait from here on (SHARE conflicts with ROW EXCLUSIVE).
      await db.query("BEGIN");
      await db.query("LOCK TABLE incidents IN SHARE MODE");
      // Holds at the first evaluation: one signup in the window.
      const r = await a.rest.post(
        `/v1/projects/${p.projectId}/alerts`,
        {
          name: "Signups",
          query: {
            source: "events",
            filters: { field: "type", operator: "equals", value: "signup" },
            operation: "count",
          },
          condition: { operator: "gte", value: 1 },
          windowMs: 600_000,
          everyMs: EVERY,
        },
        { key: p.key },
      );
      assert.equal(r.status, 201, r.text);
      const alert = r.body.data as { id: string; monitorId: string };

      // The claiming node, stopped at the incident's INSERT (the only write to incidents here) with its
      // claim row written: the node whose connection waits for this one's lock.
      const stuck = await waitFor(
        async () => {
          const x = await db.query<{ application_name: string }>(
            `SELECT application_name FROM pg_stat_activity
              WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid)) AND application_name LIKE 'vigil-%'`,
          );
          return x.rows[0]?.application_name;
        },
        "an evaluation waiting to store its incident",
        EVERY + 10_000,
      );
      const victim = stuck === "vigil-a" ? a : b;
      await victim.kill("SIGKILL");
      await db.query("ROLLBACK");

      // Restarted while the other node applies the evaluation.
      const restarting = startNode(env(stuck), victim.port).then((n) => (nodes.push(n), n));
      const incidents = await waitFor(
        async () => {
          const x = await db.query("SELECT id FROM incidents WHERE monitor_id = $1", [alert.monitorId]);
          return x.rows.length ? x.rows : undefined;
        },
        "the incident",
        EVERY + 10_000,
      );
      await waitFor(() => rx.at("/crash").length > 0, "the delivery", 10_000);
      await restarting;
      // A duplicate (the restarted node, a retried delivery) would show up in this time.
      await new Promise((r) => setTimeout(r, 1500));
      const other = stuck === "vigil-a" ? b : a;
      const after = async () =>
        (await other.rest.get(`/v1/projects/${p.projectId}/alerts/${alert.id}`, { key: p.key })).body.data;
      const firing = await after();
      assert.equal(firing.state, "firing");
      const claims = await db.query(
        "SELECT count(*)::int AS n FROM alert_evaluations WHERE alert_id = $1 AND at = $2",
        [alert.id, firing.pendingSince],
      );
      assert.equal(claims.rows[0].n, 1, "one claim row for the firing evaluation");
      assert.equal(incidents.length, 1, "one incident");
      const again = await db.query("SELECT count(*)::int AS n FROM incidents WHERE monitor_id = $1", [alert.monitorId]);
      assert.equal(again.rows[0].n, 1, "one incident");
      const started = rx.at("/crash").filter((q) => JSON.parse(q.raw).type === "incident.started");
      assert.equal(started.length, 1, "one incident.started delivery");
    } finally {
      await db.end();
    }
  });
});
