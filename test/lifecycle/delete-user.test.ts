import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import pg from "pg";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { errorBody, memberOf, project, type ProjectFixture } from "../helpers/fixtures.js";
import type { RestClient } from "../helpers/rest.js";
import { useProject } from "../helpers/use.js";
import { grpcError, loadVigil, unary } from "../clients/grpc-js-util.js";

// DELETE /v1/projects/:projectId/users/:userId (decisions.md "### Data lifecycle"): a durable job
// that removes the user, their events and every trace of them in derived data. docs/lifecycle.md.

let db: pg.Pool;
const { t, p } = useProject(
  {
    WEBHOOK_ALLOW_PRIVATE: "true",
    ANALYTICS_BLOCK_INTERVAL_MS: "100",
    ANALYTICS_BLOCK_SEAL_MS: "0",
    DERIVED_DELAY_MS: "10",
    RATE_LIMIT_WRITES_PER_MINUTE: "100000",
  },
  {},
  () => {
    db = new pg.Pool({ connectionString: t.databaseUrl, max: 3 });
  },
);

after(() => db?.end());

const H = 3_600_000;
const T0 = Date.parse("2024-05-06T00:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString();
const tag = () => randomBytes(5).toString("hex");

async function ingest(rest: RestClient, key: string, events: object[]) {
  for (let i = 0; i < events.length; i += 500) {
    const r = await rest.post("/v1/events/batch", { events: events.slice(i, i + 500) }, { key });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.rejected, 0, r.text);
  }
}

/** Events of one user over `hours` hours: pages, clicks, group events, most carrying `marker`. */
function userEvents(userId: string, marker: string, hours: number, groupOnly: string) {
  const out: object[] = [{ type: "$identify", userId, data: { note: marker }, timestamp: iso(T0) }];
  for (let h = 0; h < hours; h++) {
    const ts = T0 + h * H + ((h * 7) % 60) * 60_000 + 1000;
    out.push(
      { type: "page", userId, groupId: "g-shared", data: { path: `/p/${marker}`, n: h }, timestamp: iso(ts) },
      { type: "page", userId, data: { path: "/home" }, timestamp: iso(ts + 61_000) },
      { type: "click", userId, data: { n: h, label: marker }, timestamp: iso(ts + 2000) },
    );
  }
  out.push(
    {
      type: "$group",
      userId,
      groupId: "g-shared",
      data: { mk: marker, plan: "victim", [`from_${marker}`]: 1 },
      timestamp: iso(T0 + 5000),
    },
    // A type and a group only this user has: their rollup rows and group row must go.
    { type: `only-${groupOnly}`, userId, groupId: groupOnly, data: { m: marker }, timestamp: iso(T0 + 6000) },
  );
  return out;
}

async function pollJob(rest: RestClient, projectId: string, jobId: string, cookie: string, until: (j: any) => boolean) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await rest.get(`/v1/projects/${projectId}/jobs/${jobId}`, { cookie });
    assert.equal(r.status, 200, r.text);
    if (until(r.body.data)) return r.body.data;
    if (Date.now() > deadline) throw new Error(`job not there in time: ${r.text}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Every table and column of the database (information_schema) holding `needle`, as "table.column". */
async function whereFound(q: pg.Pool, needle: string): Promise<string[]> {
  const cols = await q.query<{ table_name: string; column_name: string; data_type: string }>(
    `SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
     JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
     WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'`,
  );
  assert.ok(cols.rows.length > 50, "the scan sees the schema");
  const found: string[] = [];
  for (const c of cols.rows) {
    const col = `"${c.column_name}"`;
    const cond =
      c.data_type === "bytea" ? `position(convert_to($1, 'UTF8') in ${col}) > 0` : `strpos(${col}::text, $1) > 0`;
    const r = await q.query(`SELECT 1 FROM "${c.table_name}" WHERE ${cond} LIMIT 1`, [needle]);
    if (r.rows.length) found.push(`${c.table_name}.${c.column_name}`);
  }
  return found;
}

async function count(projectId: string, cookie: string, body: object) {
  const r = await t.rest.post(`/v1/projects/${projectId}/analytics/count`, body, { cookie });
  assert.equal(r.status, 200, r.text);
  return r.body.data.count as number;
}

async function hourly(projectId: string, cookie: string) {
  const r = await t.rest.post(
    `/v1/projects/${projectId}/analytics/timeseries`,
    { time: { start: iso(T0), end: iso(T0 + 48 * H) }, interval: "hour" },
    { cookie },
  );
  assert.equal(r.status, 200, r.text);
  return r.text;
}

/** Derived rows recomputed from what they derive from: they must equal what is stored. */
async function derivedConsistent(projectId: string) {
  const rollups = await db.query(
    `SELECT grain, bucket, type, count FROM analytics_rollups WHERE project_id = $1
     EXCEPT SELECT g.grain, date_trunc(g.unit, e.ts, 'UTC'), e.type, count(*) FROM events e
       CROSS JOIN (VALUES (0::smallint, 'minute'), (1::smallint, 'hour'), (2::smallint, 'day')) AS g(grain, unit)
       WHERE e.project_id = $1 GROUP BY 1, 2, 3`,
    [projectId],
  );
  assert.deepEqual(rollups.rows, [], "every rollup row equals the count of its events");
  const empty = await db.query("SELECT 1 FROM analytics_rollups WHERE project_id = $1 AND count <= 0", [projectId]);
  assert.deepEqual(empty.rows, [], "no empty rollup rows");
  const rollupCount = await db.query("SELECT count(*)::int AS n FROM analytics_rollups WHERE project_id = $1", [
    projectId,
  ]);
  const expected = await db.query(
    "SELECT count(DISTINCT (date_trunc('minute', ts), type))::int AS n FROM events WHERE project_id = $1",
    [projectId],
  );
  assert.equal(
    rollupCount.rows[0].n,
    expected.rows[0].n + (await distinct(projectId, "hour")) + (await distinct(projectId, "day")),
  );
  const metricRollups = await db.query(
    `SELECT r.metric_id, r.level, r.bucket, r.op, r.n, r.sum FROM metric_rollups r JOIN metrics m ON m.id = r.metric_id WHERE m.project_id = $1
     EXCEPT SELECT p.metric_id, l.level, date_trunc(l.unit, p.ts, 'UTC'), p.op, count(*), sum(p.v)
       FROM metric_points p JOIN metrics m ON m.id = p.metric_id
       CROSS JOIN (VALUES (1::smallint, 'minute'), (2::smallint, 'hour'), (3::smallint, 'day')) AS l(level, unit)
       WHERE m.project_id = $1 GROUP BY 1, 2, 3, 4`,
    [projectId],
  );
  assert.deepEqual(metricRollups.rows, [], "every metric rollup equals its points");
  const groups = await db.query(
    `SELECT g.group_id, g.event_count, (SELECT count(*) FROM events e WHERE e.project_id = $1 AND e.group_id = g.group_id) AS n
     FROM groups g WHERE g.project_id = $1`,
    [projectId],
  );
  for (const g of groups.rows) assert.equal(g.event_count, g.n, `group ${g.group_id}`);
}
async function distinct(projectId: string, unit: string) {
  const r = await db.query(
    `SELECT count(DISTINCT (date_trunc('${unit}', ts, 'UTC'), type))::int AS n FROM events WHERE project_id = $1`,
    [projectId],
  );
  return r.rows[0].n as number;
}

describe("deleting a user", () => {
  it("answers 202 with a job that removes the user, their events and every trace of them", async () => {
    const victim = `victim-${tag()}`;
    const marker = `MARK${tag()}`;
    const other = `other-${tag()}`;
    const otherOnly = `gonly-${tag()}`;
    const cookie = p.owner.cookie;
    const hook = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { url: "http://127.0.0.1:9/hook", events: ["page"] },
      { cookie },
    );
    assert.equal(hook.status, 201, hook.text);
    const mine = userEvents(victim, marker, 30, otherOnly);
    const theirs = userEvents(other, "keep", 30, "g-theirs");
    await ingest(t.rest, p.key, [...mine, ...theirs]);

    const all = { time: { start: iso(T0 - H), end: iso(T0 + 48 * H) } };
    const total = mine.length + theirs.length;
    await new Promise((r) => setTimeout(r, 300)); // blocks built for the (past) hours
    assert.equal(await count(p.projectId, cookie, all), total);
    const otherBefore = await t.rest.get(`/v1/projects/${p.projectId}/users/${other}`, { cookie });
    const otherEvents = await t.rest.get(`/v1/projects/${p.projectId}/events?userId=${other}&limit=100`, { cookie });
    const victimRecord = await t.rest.get(`/v1/projects/${p.projectId}/users/${victim}`, { cookie });
    assert.equal(victimRecord.body.data.eventCount, mine.length);
    const victimId = victimRecord.body.data.id as string;
    // The webhook's deliveries of the victim's pages exist before.
    const deadline = Date.now() + 10_000;
    const pages = [...mine, ...theirs].filter((e: any) => e.type === "page").length;
    const deliveries = async () =>
      (await db.query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1", [p.projectId])).rows[0]
        .n as number;
    while ((await deliveries()) < pages) {
      assert.ok(Date.now() < deadline, "deliveries expanded");
      await new Promise((r) => setTimeout(r, 50));
    }
    const before = await whereFound(db, victim);
    assert.ok(before.includes("analytics_block_columns.body"), `the scan finds the victim in blocks: ${before}`);
    assert.ok((await whereFound(db, marker)).includes("events.data"), "the scan finds the marker before");

    // Deleted by the record's id (the externalId works as well: the gRPC test below).
    const del = await t.rest.del(`/v1/projects/${p.projectId}/users/${victimId}`, { cookie });
    assert.equal(del.status, 202, del.text);
    assert.match(del.body.data.jobId, /^job_/);
    assert.ok(["pending", "running", "succeeded"].includes(del.body.data.status));
    assert.equal(del.body.data.kind, "user.delete");
    const job = await pollJob(t.rest, p.projectId, del.body.data.jobId, cookie, (j) => j.status === "succeeded");
    assert.equal(job.eventsDeleted, mine.length);
    assert.ok(job.finishedAt && job.startedAt && job.createdAt);

    // Read routes and analytics answers: exactly the victim's events fewer.
    assert.equal((await t.rest.get(`/v1/projects/${p.projectId}/users/${victim}`, { cookie })).status, 404);
    assert.equal((await t.rest.get(`/v1/projects/${p.projectId}/users/${victimId}`, { cookie })).status, 404);
    const list = await t.rest.get(`/v1/projects/${p.projectId}/events?userId=${victim}`, { cookie });
    assert.deepEqual(list.body.data, []);
    assert.equal(await count(p.projectId, cookie, all), theirs.length);
    const users = await t.rest.get(`/v1/projects/${p.projectId}/users`, { cookie });
    assert.deepEqual(
      users.body.data.map((u: any) => u.externalId),
      [other],
    );
    // Other users untouched.
    assert.deepEqual(
      (await t.rest.get(`/v1/projects/${p.projectId}/users/${other}`, { cookie })).body,
      otherBefore.body,
    );
    assert.deepEqual(
      (await t.rest.get(`/v1/projects/${p.projectId}/events?userId=${other}&limit=100`, { cookie })).body,
      otherEvents.body,
    );
    await derivedConsistent(p.projectId);
    // The victim's event deliveries went with their events; the other user's stay.
    assert.equal(await deliveries(), pages / 2);
    const dangling = await db.query(
      `SELECT 1 FROM webhook_deliveries d WHERE d.project_id = $1 AND NOT EXISTS
         (SELECT 1 FROM events e WHERE e.project_id = d.project_id AND e.ts = d.event_ts AND e.id::text = d.event_id)`,
      [p.projectId],
    );
    assert.deepEqual(dangling.rows, []);

    // Nowhere any more: not the user's id, externalId or the marker from their events' data.
    assert.deepEqual(await whereFound(db, victim), []);
    assert.deepEqual(await whereFound(db, victimId), []);
    assert.deepEqual(await whereFound(db, marker), []);
    assert.deepEqual(await whereFound(db, otherOnly), []);
    // Blocks of the touched hours come back (rebuilt) and agree with the rollups.
    const hourlyNow = await hourly(p.projectId, cookie);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await hourly(p.projectId, cookie), hourlyNow);
    const blocks = await db.query("SELECT count(*)::int AS n FROM analytics_blocks WHERE project_id = $1", [
      p.projectId,
    ]);
    assert.ok(blocks.rows[0].n > 0, "blocks rebuilt");
    assert.deepEqual(await whereFound(db, marker), []);
  });

  it("is a 404 for an unknown user, another project's user or job; a member is refused with 403", async () => {
    const q = await project(t.rest);
    await ingest(t.rest, q.key, [{ type: "x", userId: "theirs" }]);
    const cookie = p.owner.cookie;
    for (const id of ["nobody", "theirs", "__proto__", "constructor", "x".repeat(300), "%00"]) {
      const r = await t.rest.del(`/v1/projects/${p.projectId}/users/${encodeURIComponent(id)}`, { cookie });
      assert.equal(r.status, 404, `${id}: ${r.text}`);
      errorBody(r);
    }
    const theirs = await t.rest.del(`/v1/projects/${q.projectId}/users/theirs`, { cookie: q.owner.cookie });
    assert.equal(theirs.status, 202, theirs.text);
    const jobId = theirs.body.data.jobId;
    const cross = await t.rest.get(`/v1/projects/${p.projectId}/jobs/${jobId}`, { cookie });
    assert.equal(cross.status, 404, cross.text);
    assert.ok(!cross.text.includes(q.projectId));
    assert.equal((await t.rest.get(`/v1/projects/${p.projectId}/jobs/job_nope`, { cookie })).status, 404);
    // Not a member of that project: 404 (decisions.md), as for any of its routes.
    assert.equal((await t.rest.get(`/v1/projects/${q.projectId}/jobs/${jobId}`, { cookie })).status, 404);

    const m = await memberOf(t.rest, q);
    assert.equal((await t.rest.del(`/v1/projects/${q.projectId}/users/theirs`, { cookie: m.cookie })).status, 403);
    assert.equal((await t.rest.get(`/v1/projects/${q.projectId}/jobs/${jobId}`, { cookie: m.cookie })).status, 403);
    // An API key reads data but does not delete people.
    assert.equal((await t.rest.del(`/v1/projects/${q.projectId}/users/theirs`, { key: q.key })).status, 403);
    await pollJob(t.rest, q.projectId, jobId, q.owner.cookie, (j) => j.status === "succeeded");
  });

  it("works over gRPC (@grpc/grpc-js): DeleteUser, then GetJob until it succeeded", async () => {
    const services = loadVigil();
    const identity = new services.IdentityService(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure());
    const jobs = new services.JobsService(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure());
    try {
      const u = `grpc-${tag()}`;
      await ingest(t.rest, p.key, [
        { type: "a", userId: u, timestamp: iso(T0 + 3 * H) },
        { type: "b", userId: u, timestamp: iso(T0 + 50 * H) },
      ]);
      const meta = { cookie: p.owner.cookie };
      const d = await unary(identity, "deleteUser")({ projectId: p.projectId, userId: u }, meta);
      assert.match(d.res.data.jobId, /^job_/);
      let job: any;
      for (let i = 0; i < 400; i++) {
        job = (await unary(jobs, "getJob")({ projectId: p.projectId, jobId: d.res.data.jobId }, meta)).res.data;
        if (job.status === "succeeded") break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(job.status, "succeeded");
      assert.equal(job.eventsDeleted, 2);
      const e = await grpcError(
        unary(jobs, "getJob")({ projectId: p.projectId, jobId: "job_xxxxxxxxxxxxxxxxxxxx" }, meta),
      );
      assert.equal(e.code, grpc.status.NOT_FOUND);
      const e2 = await grpcError(unary(identity, "deleteUser")({ projectId: p.projectId, userId: u }, meta));
      assert.equal(e2.code, grpc.status.NOT_FOUND);
    } finally {
      identity.close();
      jobs.close();
    }
  });
});

describe("durability", () => {
  const nodes: Node[] = [];
  after(async () => {
    for (const n of nodes) await n.kill("SIGKILL");
  });

  it("a kill -9 of the node running the job, then a restart, finishes it", async () => {
    const env = { DATABASE_URL: await createTestDatabase(), PG_POOL_SIZE: "4", DERIVED_DELAY_MS: "10" };
    const first = await startNode(env);
    nodes.push(first);
    const f: ProjectFixture = await project(first.rest);
    const victim = `victim-${tag()}`;
    const hours = 60;
    await ingest(
      first.rest,
      f.key,
      Array.from({ length: hours }, (_, h) => ({ type: "page", userId: victim, timestamp: iso(T0 + h * H) })).concat([
        { type: "page", userId: "stays", timestamp: iso(T0) },
      ]),
    );
    const q = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
    try {
      // The victim's user-hours settled; the test holds the newest one locked, so the job commits
      // its first batches (24 hours each) and then waits on the third.
      let lock: pg.PoolClient | undefined;
      const deadline = Date.now() + 10_000;
      for (;;) {
        const n = await q.query("SELECT count(*)::int AS n FROM event_user_hours WHERE user_id = $1", [victim]);
        if (n.rows[0].n === hours) break;
        assert.ok(Date.now() < deadline, "user-hours settled");
        await new Promise((r) => setTimeout(r, 50));
      }
      lock = await q.connect();
      await lock.query("BEGIN");
      await lock.query("SELECT 1 FROM event_user_hours WHERE user_id = $1 AND hour = $2 FOR UPDATE", [
        victim,
        iso(T0 + (hours - 1) * H),
      ]);
      const del = await first.rest.del(`/v1/projects/${f.projectId}/users/${victim}`, { cookie: f.owner.cookie });
      assert.equal(del.status, 202, del.text);
      const jobId = del.body.data.jobId;
      const mid = await pollJob(first.rest, f.projectId, jobId, f.owner.cookie, (j) => j.eventsDeleted >= 48);
      assert.equal(mid.status, "running");
      assert.equal(mid.eventsDeleted, 48);
      await first.kill("SIGKILL");
      await lock.query("ROLLBACK");
      lock.release();
      const stuck = await q.query("SELECT status, events_deleted FROM jobs WHERE id = $1", [jobId]);
      assert.deepEqual(stuck.rows[0], { status: "running", events_deleted: 48 });

      const second = await startNode(env);
      nodes.push(second);
      const done = await pollJob(second.rest, f.projectId, jobId, f.owner.cookie, (j) => j.status === "succeeded");
      assert.equal(done.eventsDeleted, hours);
      const left = await q.query("SELECT count(*)::int AS n FROM events WHERE user_id = $1", [victim]);
      assert.equal(left.rows[0].n, 0);
      assert.equal(
        (await second.rest.get(`/v1/projects/${f.projectId}/users/${victim}`, { cookie: f.owner.cookie })).status,
        404,
      );
      assert.equal(
        (await second.rest.get(`/v1/projects/${f.projectId}/users/stays`, { cookie: f.owner.cookie })).body.data
          .eventCount,
        1,
      );
      assert.deepEqual(await whereFound(q, victim), []);
    } finally {
      await q.end();
    }
  });
});
