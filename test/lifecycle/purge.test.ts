// Deleting a project really removes its data (docs/lifecycle.md "Deleting a project"): the request
// deletes the project row and queues it; the sweeper (src/lifecycle/purge.ts) then removes every row
// the project owned, in every table with a project_id column (found here in information_schema, so a
// table the sweeper forgot fails this test) and its metrics' points and rollups, while another
// project's rows, ingest and reads are untouched; kill -9 mid-purge and a restart finish it.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import pg from "pg";
import { GENEROUS_LIMITS, metricOf } from "../helpers/app.js";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { useApp } from "../helpers/use.js";
import { PURGE_LOCK } from "../../src/lifecycle/purge.js";
import { ownedTables } from "../../src/lifecycle/purge-store.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
let db: pg.Client;
const { t } = useApp(
  {
    ...GENEROUS_LIMITS,
    PURGE_INTERVAL_MS: "100",
    PURGE_BATCH_ROWS: "500",
    WEBHOOK_ALLOW_PRIVATE: "true",
    // No slot pass: the other project's rows must not change on their own between two counts.
    ANALYTICS_SLOT_INTERVAL_MS: "0",
  },
  {},
  async () => {
    db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
  },
);
after(() => db?.end());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const q = (name: string) => pg.escapeIdentifier(name);

/** Rows of the project in every table that has a project_id column, plus those reached through its metrics and monitors. */
async function ownedRows(
  c: pg.Client,
  projectId: string,
  through: { metricIds: number[]; monitorIds: string[] },
): Promise<Record<string, number>> {
  const tables = await c.query<{ table_name: string }>(
    `SELECT c.table_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND c.column_name = 'project_id' AND t.table_type = 'BASE TABLE'
      ORDER BY c.table_name`,
  );
  const out: Record<string, number> = {};
  for (const { table_name } of tables.rows) {
    const r = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${q(table_name)} WHERE project_id = $1`, [
      projectId,
    ]);
    out[table_name] = r.rows[0].n;
  }
  for (const [table, column, ids] of [
    ["metric_points", "metric_id", through.metricIds],
    ["metric_rollups", "metric_id", through.metricIds],
    ["heartbeats", "monitor_id", through.monitorIds],
    ["heartbeat_rollups", "monitor_id", through.monitorIds],
  ] as const) {
    const r = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${q(table)} WHERE ${q(column)}::text = ANY($1::text[])`,
      [ids.map(String)],
    );
    out[`${table} (via ${column})`] = r.rows[0].n;
  }
  return out;
}

async function idsThrough(c: pg.Client, projectId: string) {
  const m = await c.query<{ id: number }>("SELECT id FROM metrics WHERE project_id = $1", [projectId]);
  const mon = await c.query<{ id: string }>("SELECT id FROM monitors WHERE project_id = $1", [projectId]);
  return { metricIds: m.rows.map((r) => r.id), monitorIds: mon.rows.map((r) => r.id) };
}

const nonZero = (rows: Record<string, number>) =>
  Object.fromEntries(Object.entries(rows).filter(([, n]) => n > 0)) as Record<string, number>;

/** Data in as many tables as the API reaches, plus a column block and a registry slot written directly. */
async function seed(p: ProjectFixture, tag: string): Promise<void> {
  const post = async (path: string, body: unknown, auth: { key?: string; cookie?: string }, want: number[]) => {
    const r = await t.rest.post(path, body, auth);
    assert.ok(want.includes(r.status), `${path} ${r.status} ${r.text}`);
    return r;
  };
  const monitor = await post(`/v1/projects/${p.projectId}/heartbeats/api-${tag}`, {}, { key: p.key }, [200]);
  await post(
    `/v1/projects/${p.projectId}/webhooks`,
    { name: "w", type: "http", url: "http://127.0.0.1:9/hook", events: ["page"] },
    { cookie: p.owner.cookie },
    [201],
  );
  await post(
    `/v1/projects/${p.projectId}/pages`,
    {
      slug: `purge-${tag}-${randomUUID().slice(0, 8)}`,
      title: "Status",
      monitors: [{ monitorId: monitor.body.data.monitor.id }],
    },
    { cookie: p.owner.cookie },
    [201],
  );
  await post(
    "/v1/events/batch",
    {
      events: Array.from({ length: 60 }, (_, i) => ({
        id: randomUUID(),
        type: "page",
        userId: `${tag}-u${i % 5}`,
        groupId: `${tag}-g`,
        source: "web",
        data: { marker: `${tag}-marker`, n: i },
      })),
    },
    { key: p.key },
    [200, 202],
  );
  await post("/v1/events", { type: "$group", groupId: `${tag}-g`, data: { name: tag } }, { key: p.key }, [202]);
  for (const [type, value] of [
    ["measurement", 5],
    ["measurement", 7],
    ["increment", 2],
  ] as const)
    await post(`/v1/projects/${p.projectId}/metrics`, { type, name: `m-${type}`, value }, { key: p.key }, [201]);
  await post(
    `/v1/projects/${p.projectId}/identify`,
    { externalId: `${tag}-u0`, properties: { plan: "pro" } },
    { cookie: p.owner.cookie },
    [200, 201],
  );
  // Reads settle the derived rows (users, groups, rollups, user-hours).
  const users = await t.rest.get(`/v1/projects/${p.projectId}/users`, { key: p.key });
  assert.equal(users.status, 200, users.text);
  const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000);
  await db.query(
    "INSERT INTO analytics_blocks (project_id, hour, rows, keys, built_at) VALUES ($1, $2, 1, '{}', now()) ON CONFLICT DO NOTHING",
    [p.projectId, hour],
  );
  await db.query(
    "INSERT INTO analytics_block_columns (project_id, hour, name, body) VALUES ($1, $2, 'ts', '\\x00') ON CONFLICT DO NOTHING",
    [p.projectId, hour],
  );
  await db.query(
    "INSERT INTO analytics_properties (project_id, key, kind, slot, state, assigned_at) VALUES ($1, 'marker', 's', 1, 'backfilling', now()) ON CONFLICT DO NOTHING",
    [p.projectId],
  );
}

async function waitFor(what: string, ms: number, cond: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const pendingPurge = async (c: pg.Client, id: string) =>
  (await c.query("SELECT 1 FROM deleted_projects WHERE id = $1", [id])).rowCount === 1;

describe("deleting a project", () => {
  it("sweeps the tables with a project_id column, not those emptied by the delete's own cascade", async () => {
    const names = (await ownedTables(db)).map((x) => x.name);
    for (const table of [
      "events",
      "users",
      "groups",
      "metrics",
      "analytics_rollups",
      "analytics_blocks",
      "analytics_block_columns",
      "analytics_properties",
      "analytics_registry_versions",
      "event_user_hours",
      "ingest_ids",
      "ingest_deltas",
      // A manual incident has no monitor (migration 9011): incidents and their updates no longer
      // reach projects through a cascade on NOT NULL columns, so they are swept by project_id.
      "incidents",
      "incident_updates",
    ])
      assert.ok(names.includes(table), `${table} is not swept: ${names.join(", ")}`);
    for (const table of [
      "api_keys",
      "project_members",
      "sources",
      "monitors",
      "incident_monitors",
      "webhooks",
      "webhook_deliveries",
      "pages",
      "page_monitors",
    ])
      assert.ok(!names.includes(table), `${table} went with the project row, yet is swept`);
  });

  it("removes every row it owned in every table, keeps another project's, and its key fails at once", async () => {
    const gone = await project(t.rest);
    const kept = await project(t.rest);
    await seed(gone, "gone");
    await seed(kept, "kept");
    // A pending projection (the projector may apply it before the delete; the scan after must find none either way).
    await db.query("INSERT INTO ingest_deltas (project_id, deltas) VALUES ($1, '{}')", [gone.projectId]);
    // A table added later, with no primary key and no foreign key: found in the catalog all the same.
    await db.query("CREATE TABLE purge_probe (project_id text NOT NULL, note text)");
    await db.query("INSERT INTO purge_probe SELECT p, 'x' FROM unnest($1::text[]) p, generate_series(1, 3)", [
      [gone.projectId, kept.projectId],
    ]);

    const goneIds = await idsThrough(db, gone.projectId);
    const keptIds = await idsThrough(db, kept.projectId);
    const before = nonZero(await ownedRows(db, gone.projectId, goneIds));
    // The scan really sees the data it must then find gone.
    for (const table of [
      "events",
      "users",
      "groups",
      "sources",
      "metrics",
      "metric_points (via metric_id)",
      "metric_rollups (via metric_id)",
      "analytics_rollups",
      "analytics_blocks",
      "analytics_block_columns",
      "analytics_properties",
      "event_user_hours",
      "ingest_ids",
      "monitors",
      "heartbeats (via monitor_id)",
      "webhooks",
      "pages",
      "page_monitors",
      "purge_probe",
      "api_keys",
      "project_members",
    ])
      assert.ok(before[table] > 0, `no ${table} row before the delete: ${JSON.stringify(before)}`);
    // The other project's rows, once nothing changes them any more (webhook deliveries are expanded in the background).
    let keptBefore = await ownedRows(db, kept.projectId, keptIds);
    await waitFor("the other project's rows to settle", 10_000, async () => {
      await sleep(300);
      const again = await ownedRows(db, kept.projectId, keptIds);
      const same = JSON.stringify(again) === JSON.stringify(keptBefore);
      keptBefore = again;
      return same;
    });

    const total = async (name: string) => (await metricOf(t.app, name).get()).values.reduce((n, v) => n + v.value, 0);
    const rowsBefore = await total("vigil_purge_rows_deleted_total");
    const finishedBefore = await total("vigil_purge_projects_finished_total");
    const del = await t.rest.del(`/v1/projects/${gone.projectId}`, { cookie: gone.owner.cookie });
    assert.equal(del.status, 204, del.text);
    // At once: the key is refused, the project is not found.
    const ingest = await t.rest.post("/v1/events", { type: "late" }, { key: gone.key });
    assert.equal(ingest.status, 401, ingest.text);
    const read = await t.rest.get(`/v1/projects/${gone.projectId}`, { cookie: gone.owner.cookie });
    assert.equal(read.status, 404, read.text);

    await waitFor("the purge to finish", 20_000, async () => !(await pendingPurge(db, gone.projectId)));
    assert.deepEqual(nonZero(await ownedRows(db, gone.projectId, goneIds)), {});
    // The metrics count what the sweep removed (the cascade took the rest in the request). Not ingest_deltas:
    // the projector consumes those rows on its own, so the count taken before may exceed what the sweep found.
    const swept = ["events", "users", "groups", "metrics", "event_user_hours", "ingest_ids"];
    const least = swept.reduce((n, table) => n + before[table], 0);
    assert.ok((await total("vigil_purge_rows_deleted_total")) - rowsBefore >= least);
    assert.equal((await total("vigil_purge_projects_finished_total")) - finishedBefore, 1);
    assert.deepEqual(await ownedRows(db, kept.projectId, keptIds), keptBefore);
    // The other project still answers over the API.
    const list = await t.rest.get(`/v1/projects/${kept.projectId}/events?limit=100`, { key: kept.key });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.data.length, keptBefore.events);
  });

  it("purges what projects deleted before the migration left behind (its backfill)", async () => {
    const ghost = `prj_ghost${randomUUID().slice(0, 8)}`;
    const day = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000);
    await db.query(
      "INSERT INTO analytics_rollups (project_id, grain, bucket, type, count) VALUES ($1, 2, $2, 'x', 1)",
      [ghost, day],
    );
    await db.query("INSERT INTO event_user_hours (project_id, user_id, hour, minutes) VALUES ($1, 'u', $2, 1)", [
      ghost,
      day,
    ]);
    // The migration's last statement, run again now that there is something for it to find.
    const sql = await readFile(path.join(root, "src/storage/migrations/8002_project_purge.sql"), "utf8");
    await db.query(sql.slice(sql.indexOf("INSERT INTO deleted_projects")));
    assert.equal(await pendingPurge(db, ghost), true);
    await waitFor("the ghost's purge", 20_000, async () => !(await pendingPurge(db, ghost)));
    assert.deepEqual(nonZero(await ownedRows(db, ghost, { metricIds: [], monitorIds: [] })), {});
  });

  it("sweeps on one node at a time: while another session holds the sweeper's lock, nothing is purged", async () => {
    const p = await project(t.rest);
    assert.equal((await t.rest.post("/v1/events", { type: "locked", userId: "u1" }, { key: p.key })).status, 202);
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock($1)", [PURGE_LOCK]);
      assert.equal((await t.rest.del(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie })).status, 204);
      await sleep(1_000); // ten sweeper intervals
      const rows = await db.query("SELECT 1 FROM events WHERE project_id = $1", [p.projectId]);
      assert.equal(rows.rowCount, 1, "a sweep ran without the lock");
      assert.equal(await pendingPurge(db, p.projectId), true);
      await holder.query("SELECT pg_advisory_unlock($1)", [PURGE_LOCK]);
      await waitFor(
        "the purge to finish once the lock is free",
        20_000,
        async () => !(await pendingPurge(db, p.projectId)),
      );
      assert.equal((await db.query("SELECT 1 FROM events WHERE project_id = $1", [p.projectId])).rowCount, 0);
    } finally {
      await holder.end();
    }
  });

  it("a project whose purge fails does not hold up the others", async () => {
    const stuck = await project(t.rest);
    const next = await project(t.rest);
    for (const p of [stuck, next])
      assert.equal((await t.rest.post("/v1/events", { type: "x" }, { key: p.key })).status, 202);
    // A row the sweeper cannot delete: a restricting foreign key from a table it does not sweep.
    await db.query("CREATE TABLE purge_guard (project_id text NOT NULL, id int PRIMARY KEY)");
    await db.query("CREATE TABLE purge_guard_ref (guard int NOT NULL REFERENCES purge_guard ON DELETE RESTRICT)");
    await db.query("INSERT INTO purge_guard VALUES ($1, 1)", [stuck.projectId]);
    await db.query("INSERT INTO purge_guard_ref VALUES (1)");
    try {
      assert.equal((await t.rest.del(`/v1/projects/${stuck.projectId}`, { cookie: stuck.owner.cookie })).status, 204);
      assert.equal((await t.rest.del(`/v1/projects/${next.projectId}`, { cookie: next.owner.cookie })).status, 204);
      await waitFor("the second project's purge", 20_000, async () => !(await pendingPurge(db, next.projectId)));
      assert.equal(await pendingPurge(db, stuck.projectId), true);
    } finally {
      await db.query("DROP TABLE purge_guard_ref");
    }
    await waitFor(
      "the first project's purge, once unblocked",
      20_000,
      async () => !(await pendingPurge(db, stuck.projectId)),
    );
    assert.equal((await db.query("SELECT 1 FROM purge_guard")).rowCount, 0);
  });

  it("keeps another project's ingest and reads working during a large purge", async () => {
    const big = await project(t.rest);
    const other = await project(t.rest);
    // One event through the API creates this week's partition; the bulk goes in directly.
    assert.equal((await t.rest.post("/v1/events", { type: "bulk" }, { key: big.key })).status, 202);
    const ROWS = 150_000;
    await db.query(
      "INSERT INTO events (project_id, ts, id, type, user_id, data) SELECT $1, (SELECT max(ts) FROM events WHERE project_id = $1), gen_random_uuid(), 'bulk', 'u' || (g % 100), jsonb_build_object('g', g) FROM generate_series(1, $2) g",
      [big.projectId, ROWS],
    );
    const del = await t.rest.del(`/v1/projects/${big.projectId}`, { cookie: big.owner.cookie });
    assert.equal(del.status, 204, del.text);

    let accepted = 0;
    let sawPurging = 0;
    for (let i = 0; (await pendingPurge(db, big.projectId)) && i < 2_000; i++) {
      const left = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [
        big.projectId,
      ]);
      if (left.rows[0].n > 0 && left.rows[0].n < ROWS) sawPurging++;
      const w = await t.rest.post("/v1/events", { type: "during", data: { i } }, { key: other.key });
      assert.equal(w.status, 202, w.text);
      const r = await t.rest.get(`/v1/projects/${other.projectId}/events?limit=5`, { key: other.key });
      assert.equal(r.status, 200, r.text);
      accepted++;
    }
    assert.equal(await pendingPurge(db, big.projectId), false, "the purge did not finish");
    // The writes and reads really ran while the purge was half done.
    assert.ok(sawPurging >= 3, `only ${sawPurging} rounds ran during the purge`);
    // Not a timed assertion (speed is the benches' job): the rounds above completed while the purge
    // was half done, each writing and reading the other project.
    const stored = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [
      other.projectId,
    ]);
    assert.equal(stored.rows[0].n, accepted);
    const left = await db.query("SELECT 1 FROM events WHERE project_id = $1 LIMIT 1", [big.projectId]);
    assert.equal(left.rowCount, 0);
  });
});

// kill -9 of a real Vigil in the middle of a purge, then a restart on the same database.
const nodes: Node[] = [];
after(async () => {
  for (const n of nodes) await n.kill("SIGKILL");
});

describe("a purge across kill -9", () => {
  it("is finished by the restarted node", async () => {
    const databaseUrl = await createTestDatabase();
    const env = {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: "",
      PURGE_INTERVAL_MS: "100",
      PURGE_BATCH_ROWS: "200",
      ...GENEROUS_LIMITS,
    };
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    try {
      let node = await startNode(env);
      nodes.push(node);
      const { rest } = node;
      const p = await project(rest);
      assert.equal((await rest.post("/v1/events", { type: "bulk", userId: "u1" }, { key: p.key })).status, 202);
      const ROWS = 100_000;
      await c.query(
        "INSERT INTO events (project_id, ts, id, type) SELECT $1, (SELECT max(ts) FROM events WHERE project_id = $1), gen_random_uuid(), 'bulk' FROM generate_series(1, $2) g",
        [p.projectId, ROWS],
      );
      const count = async () =>
        (await c.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [p.projectId]))
          .rows[0].n;
      assert.equal((await rest.del(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie })).status, 204);
      // Kill it once the purge has begun, well before it can end.
      await waitFor("the purge to begin", 20_000, async () => (await count()) < ROWS);
      await node.kill("SIGKILL");
      // A statement the node sent before it died still runs to its end (a batch's DELETE and COMMIT
      // already in PostgreSQL's hands); its backends exit once they find the socket closed. Count
      // after they are gone.
      await waitFor(
        "the killed node's connections to close",
        20_000,
        async () =>
          (
            await c.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
            )
          ).rows[0].n === 0,
      );
      const leftAtKill = await count();
      assert.ok(leftAtKill > 0, "the purge ended before the kill: nothing left to resume");
      assert.equal(await pendingPurge(c, p.projectId), true);
      await sleep(300);
      assert.equal(await count(), leftAtKill, "rows still vanish with no Vigil running");

      node = await startNode(env, node.port);
      nodes.push(node);
      await waitFor(
        "the restarted node to finish the purge",
        60_000,
        async () => !(await pendingPurge(c, p.projectId)),
      );
      assert.equal(await count(), 0);
      const scan = await ownedRows(c, p.projectId, { metricIds: [], monitorIds: [] });
      assert.deepEqual(nonZero(scan), {});
      await node.kill("SIGKILL");
    } finally {
      await c.end();
    }
  });
});
