// Deleting a project while its writes are in flight: every write answers either as accepted (it
// committed before the delete) or as a request after the delete would (401 for its API key, which
// the delete removed; 404 for a member session). Never a 5xx: a foreign-key violation or deadlock
// against the delete is not a server error.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { useApp } from "../helpers/use.js";

const { t } = useApp({ PG_POOL_SIZE: "8", ...GENEROUS_LIMITS });

type Write = (p: ProjectFixture, n: number) => Promise<{ status: number; text: string }>;

/** Every write path that inserts rows referring to the project (or to its monitors and metrics). */
const WRITES: Record<string, Write> = {
  // Known monitors (fast compare-and-set path) and new slugs (the locked path inserts a monitor).
  heartbeatKnown: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/known-${n % 4}`,
      { status: n % 7 === 0 ? "down" : "up", metadata: { n } },
      { key: p.key },
    ),
  heartbeatNew: (p, n) => t.rest.post(`/v1/projects/${p.projectId}/heartbeats/new-${n}`, {}, { key: p.key }),
  // A registered metric (points and rollups) and new names (the registry insert).
  metricKnown: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "measurement", name: "latency", value: n },
      { key: p.key },
    ),
  metricNew: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "increment", name: `count-${n}`, value: 1 },
      { key: p.key },
    ),
  metricBatch: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/metrics/batch`,
      {
        metrics: Array.from({ length: 20 }, (_, i) => ({
          type: "measurement",
          name: i % 2 ? "latency" : `batch-${n}-${i}`,
          value: i,
        })),
      },
      { key: p.key },
    ),
  // Events with new sources (a sources insert) and users (derived rows).
  event: (p, n) =>
    t.rest.post("/v1/events", { type: "race", source: `src-${n}`, userId: `u-${n % 5}` }, { key: p.key }),
  eventBatch: (p, n) =>
    t.rest.post(
      "/v1/events/batch",
      {
        events: Array.from({ length: 10 }, (_, i) => ({
          type: "$group",
          groupId: `g-${n}-${i}`,
          source: `bs-${n % 3}`,
          data: { i },
        })),
      },
      { key: p.key },
    ),
  identify: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/identify`,
      { externalId: `id-${n}`, properties: { n } },
      { cookie: p.owner.cookie },
    ),
};

async function round(kinds: string[]): Promise<Map<number, number>> {
  const p = await project(t.rest);
  // Warm the paths: known monitors and a registered metric.
  for (let i = 0; i < 4; i++) assert.equal((await WRITES.heartbeatKnown(p, i)).status, 200);
  assert.equal((await WRITES.metricKnown(p, 0)).status, 201);

  const statuses = new Map<number, number>();
  const failures: string[] = [];
  let deletedAt = 0;
  let counter = 0;
  const worker = async (kind: string) => {
    // Keep writing until well after the delete has answered.
    while (deletedAt === 0 || Date.now() - deletedAt < 150) {
      const r = await WRITES[kind](p, counter++);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status >= 500 || ![200, 201, 202, 401, 404].includes(r.status))
        failures.push(`${kind} ${r.status} ${r.text}`);
    }
  };
  const workers = kinds.flatMap((k) => [worker(k), worker(k)]);
  await new Promise((r) => setTimeout(r, 150));
  const del = await t.rest.del(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
  deletedAt = Date.now();
  assert.equal(del.status, 204, del.text);
  await Promise.all(workers);
  assert.deepEqual(failures.slice(0, 5), [], `statuses ${JSON.stringify([...statuses])}`);
  return statuses;
}

describe("deleting a project under write load", () => {
  it("answers every in-flight heartbeat, metric, event and identify write without a 5xx", async () => {
    const total = new Map<number, number>();
    for (let i = 0; i < 6; i++) {
      for (const [s, n] of await round(Object.keys(WRITES))) total.set(s, (total.get(s) ?? 0) + n);
    }
    // The race really ran: writes were accepted before the delete and refused after it.
    assert.ok((total.get(401) ?? 0) > 0 && (total.get(404) ?? 0) > 0, JSON.stringify([...total]));
    assert.ok((total.get(200) ?? 0) + (total.get(201) ?? 0) + (total.get(202) ?? 0) > 50, JSON.stringify([...total]));
  });

  it("the delete takes a write's locks in the write's order: monitors first, then the project", async () => {
    // A heartbeat write locks its monitors and then inserts rows of the project (their foreign key
    // takes the project's key-share lock). Here a transaction does exactly that, by hand, around a
    // DELETE of the project: the delete must wait for the monitor without holding the project, so
    // the write's insert goes through at once. (A delete that took the project's row first held it
    // while waiting: the insert waited for the delete and the delete for the monitor, a deadlock
    // PostgreSQL broke only after deadlock_timeout, 1 s; the insert's lock_timeout fails it first.)
    const p = await project(t.rest);
    assert.equal((await WRITES.heartbeatKnown(p, 0)).status, 200);
    const c = new pg.Client({ connectionString: t.databaseUrl });
    await c.connect();
    try {
      await c.query("BEGIN");
      const locked = await c.query("SELECT id FROM monitors WHERE project_id = $1 FOR UPDATE", [p.projectId]);
      assert.equal(locked.rowCount, 1);
      const del = t.rest.del(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
      // Until the delete waits for a lock this transaction holds.
      const me = (await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0].pid;
      for (let i = 0; ; i++) {
        const r = await c.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))",
          [me],
        );
        if (r.rowCount) break;
        assert.ok(i < 500, "the delete never waited for the monitor's lock");
        await new Promise((r) => setTimeout(r, 10));
      }
      await c.query("SET LOCAL lock_timeout = '300ms'");
      await c.query(
        `INSERT INTO monitors (id, project_id, slug, name, type, status, expected_interval_ms, grace_period_ms, created_at, updated_at)
         VALUES ('mon_lockorder', $1, 'lock-order', 'lock-order', 'heartbeat', 'unknown', 60000, 30000, now(), now())`,
        [p.projectId],
      );
      await c.query("COMMIT");
      const r = await del;
      assert.equal(r.status, 204, r.text);
      const left = await c.query("SELECT count(*)::int AS n FROM monitors WHERE project_id = $1", [p.projectId]);
      assert.equal(left.rows[0].n, 0);
    } finally {
      await c.end();
    }
  });

  it("heartbeats and metrics alone, many at once, against the delete", async () => {
    for (let i = 0; i < 6; i++)
      await round(["heartbeatKnown", "heartbeatNew", "heartbeatNew", "metricNew", "metricKnown", "metricBatch"]);
  });
});
