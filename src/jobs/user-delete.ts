import type { PoolClient } from "pg";
import { minuteRanges } from "../events/user-hours.js";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../shared/time.js";
import { LEVELS, bucketStart } from "../metrics/model.js";

// Deleting a user's data (the `user.delete` job, run by runner.ts; docs/lifecycle.md "## Deleting a
// person"). Each batch is one short transaction on the job's connection and is idempotent: it
// deletes the events of a few of the user's hours (found through event_user_hours, the user's access
// path) together with everything derived from them, then those hours' event_user_hours rows. A batch
// that dies rolls back whole; the next run finds the same hours again.

/** Hours of the user taken per batch (one transaction). */
const HOURS_PER_BATCH = 24;
/** Minute ranges deleted by one statement (two parameters each). */
const RANGES_PER_STATEMENT = 200;

/** A deleted event, as far as derived data needs it. */
interface DeletedEvent {
  ts: Date;
  id: string;
  type: string;
  group_id: string | null;
}

/** Counts to subtract from analytics_rollups per (grain, bucket ms, type), grains 0/1/2 = minute/hour/day. Pure. */
function rollupDecrements(events: { ts: Date; type: string }[]): [number, number, string, number][] {
  const acc = new Map<string, [number, number, string, number]>();
  const add = (grain: number, bucket: number, type: string) => {
    const k = `${grain}|${bucket}|${type}`;
    const a = acc.get(k);
    if (a) a[3]++;
    else acc.set(k, [grain, bucket, type, 1]);
  };
  for (const e of events) {
    const ms = e.ts.getTime();
    add(0, Math.floor(ms / MINUTE_MS) * MINUTE_MS, e.type);
    add(1, Math.floor(ms / HOUR_MS) * HOUR_MS, e.type);
    add(2, Math.floor(ms / DAY_MS) * DAY_MS, e.type);
  }
  // Key order: concurrent writers lock rollup rows in one order.
  return [...acc.values()].sort((a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0));
}

/** Events removed per group (groups.event_count), and the groups whose `$group` data must be merged again. Pure. */
function groupChanges(events: DeletedEvent[]): { counts: Map<string, number>; remerge: Set<string> } {
  const counts = new Map<string, number>();
  const remerge = new Set<string>();
  for (const e of events) {
    if (e.group_id === null) continue;
    counts.set(e.group_id, (counts.get(e.group_id) ?? 0) + 1);
    if (e.type === "$group") remerge.add(e.group_id);
  }
  return { counts, remerge };
}

/**
 * One batch: up to HOURS_PER_BATCH of the user's hours (oldest first) with their events and derived
 * rows. Runs in the caller's transaction. Returns how many events it deleted and whether any hour
 * was left to do (false: the user has no hour left).
 */
export async function deleteUserBatch(
  c: PoolClient,
  projectId: string,
  externalId: string,
): Promise<{ events: number; more: boolean }> {
  // Locked: the projector's upserts of these rows wait for this transaction.
  const hours = await c.query<{ hour: Date; minutes: string }>(
    `SELECT hour, minutes::text FROM event_user_hours WHERE project_id = $1 AND user_id = $2
     ORDER BY hour LIMIT $3 FOR UPDATE`,
    [projectId, externalId, HOURS_PER_BATCH],
  );
  if (!hours.rows.length) return { events: 0, more: false };

  // The events of the hours' marked minute ranges, through the primary key (project_id, ts, id): up
  // to RANGES_PER_STATEMENT ranges in one statement (a BitmapOr of index ranges, pruned to their
  // partitions), not one round trip per range: a user active in many minutes has many ranges.
  const ranges = hours.rows.flatMap((h) => minuteRanges(h.hour.getTime(), BigInt(h.minutes)));
  const deleted: DeletedEvent[] = [];
  for (let i = 0; i < ranges.length; i += RANGES_PER_STATEMENT) {
    const part = ranges.slice(i, i + RANGES_PER_STATEMENT);
    const arms = part.map((_, j) => `(ts >= $${3 + 2 * j} AND ts < $${4 + 2 * j})`).join(" OR ");
    const r = await c.query<DeletedEvent>(
      `DELETE FROM events WHERE project_id = $1 AND user_id = $2 AND (${arms})
       RETURNING ts, id::text, type, group_id`,
      [
        projectId,
        externalId,
        ...part.flatMap(([from, to]) => [new Date(from).toISOString(), new Date(to).toISOString()]),
      ],
    );
    // One push per row: a spread of a statement's rows (a day of a busy user) can overflow the stack.
    for (const row of r.rows) deleted.push(row);
  }
  const hourList = hours.rows.map((h) => h.hour.toISOString());

  if (deleted.length) {
    await decrementRollups(c, projectId, deleted);
    await deleteMetricPoints(c, projectId, deleted);
    await c.query(
      `DELETE FROM webhook_deliveries WHERE project_id = $1 AND event_ts IS NOT NULL
       AND (event_ts, event_id) IN (SELECT * FROM unnest($2::timestamptz[], $3::text[]))`,
      [projectId, deleted.map((e) => e.ts.toISOString()), deleted.map((e) => e.id)],
    );
    await updateGroups(c, projectId, deleted);
  }
  // The column blocks of the touched hours no longer match their events: gone, rebuilt by the builder.
  await c.query("DELETE FROM analytics_blocks WHERE project_id = $1 AND hour = ANY($2::timestamptz[])", [
    projectId,
    hourList,
  ]);
  await c.query(
    "DELETE FROM event_user_hours WHERE project_id = $1 AND user_id = $2 AND hour = ANY($3::timestamptz[])",
    [projectId, externalId, hourList],
  );
  return { events: deleted.length, more: true };
}

async function decrementRollups(c: PoolClient, projectId: string, deleted: DeletedEvent[]): Promise<void> {
  const rows = rollupDecrements(deleted);
  const params = [
    projectId,
    rows.map((r) => r[0]),
    rows.map((r) => new Date(r[1])),
    rows.map((r) => r[2]),
    rows.map((r) => r[3]),
  ];
  const keys = "SELECT * FROM unnest($2::smallint[], $3::timestamptz[], $4::text[], $5::bigint[]) AS x(g, b, t, n)";
  await c.query(
    `UPDATE analytics_rollups r SET count = r.count - d.n FROM (${keys}) d
     WHERE r.project_id = $1 AND r.grain = d.g AND r.bucket = d.b AND r.type = d.t`,
    params,
  );
  // A bucket left without events has no row (as if it never had any).
  await c.query(
    `DELETE FROM analytics_rollups r USING (${keys}) d
     WHERE r.project_id = $1 AND r.grain = d.g AND r.bucket = d.b AND r.type = d.t AND r.count <= 0`,
    params,
  );
}

/** Points of the deleted $measure/$increment/$decrement events, then the touched rollup buckets and registry rows recomputed. */
async function deleteMetricPoints(c: PoolClient, projectId: string, deleted: DeletedEvent[]): Promise<void> {
  const metricEvents = deleted.filter(
    (e) => e.type === "$measure" || e.type === "$increment" || e.type === "$decrement",
  );
  if (!metricEvents.length) return;
  const gone = await c.query<{ metric_id: string; ts: Date; op: number }>(
    `DELETE FROM metric_points WHERE metric_id IN (SELECT id FROM metrics WHERE project_id = $1)
     AND (ts, event_id) IN (SELECT * FROM unnest($2::timestamptz[], $3::uuid[]))
     RETURNING metric_id::text, ts, op`,
    [projectId, metricEvents.map((e) => e.ts.toISOString()), metricEvents.map((e) => e.id)],
  );
  if (!gone.rows.length) return;
  // Every (metric, level, bucket, op) a deleted point counted in: recomputed from the points left.
  const keys = new Map<string, [string, number, number, number, number]>();
  for (const p of gone.rows) {
    for (const { level, width } of LEVELS) {
      const b = bucketStart(p.ts.getTime(), width);
      keys.set(`${p.metric_id}|${level}|${b}|${p.op}`, [p.metric_id, level, b, b + width, p.op]);
    }
  }
  const k = [...keys.values()].sort(
    (a, b) => Number(BigInt(a[0]) - BigInt(b[0])) || a[1] - b[1] || a[2] - b[2] || a[4] - b[4],
  );
  const params = [
    k.map((x) => x[0]),
    k.map((x) => x[1]),
    k.map((x) => new Date(x[2]).toISOString()),
    k.map((x) => new Date(x[3]).toISOString()),
    k.map((x) => x[4]),
  ];
  const keyRows =
    "SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::timestamptz[], $4::timestamptz[], $5::smallint[]) AS x(m, l, b, e, op)";
  await c.query(
    `DELETE FROM metric_rollups r USING (${keyRows}) k WHERE r.metric_id = k.m AND r.level = k.l AND r.bucket = k.b AND r.op = k.op`,
    params,
  );
  await c.query(
    `INSERT INTO metric_rollups (metric_id, level, bucket, op, n, sum, min, max)
     SELECT k.m, k.l, k.b, k.op, count(*), sum(p.v), min(p.v), max(p.v)
     FROM (${keyRows}) k JOIN metric_points p ON p.metric_id = k.m AND p.ts >= k.b AND p.ts < k.e AND p.op = k.op
     GROUP BY k.m, k.l, k.b, k.op`,
    params,
  );
  // The registry's running total (counters) and latest value (measurements) from the points left.
  await c.query(
    `UPDATE metrics m SET
       total = CASE WHEN m.type = 'counter' THEN COALESCE((SELECT sum(v) FROM metric_points p WHERE p.metric_id = m.id), 0) ELSE m.total END,
       last_value = CASE WHEN m.type = 'measurement'
         THEN (SELECT v FROM metric_points p WHERE p.metric_id = m.id ORDER BY ts DESC, event_id DESC LIMIT 1) ELSE m.last_value END,
       last_ts = (SELECT max(ts) FROM metric_points p WHERE p.metric_id = m.id)
     WHERE m.id = ANY($1::bigint[])`,
    [[...new Set(gone.rows.map((p) => p.metric_id))]],
  );
}

async function updateGroups(c: PoolClient, projectId: string, deleted: DeletedEvent[]): Promise<void> {
  const { counts, remerge } = groupChanges(deleted);
  if (!counts.size) return;
  const ids = [...counts.keys()].sort();
  // A group left without events is removed (its id came from the deleted events).
  await c.query(
    `UPDATE groups g SET event_count = g.event_count - x.n FROM unnest($2::text[], $3::bigint[]) AS x(id, n)
     WHERE g.project_id = $1 AND g.group_id = x.id`,
    [projectId, ids, ids.map((id) => counts.get(id))],
  );
  await c.query("DELETE FROM groups WHERE project_id = $1 AND group_id = ANY($2::text[]) AND event_count <= 0", [
    projectId,
    ids,
  ]);
  // Properties merged from the deleted `$group` events: merged again from the group's remaining ones.
  for (const id of [...remerge].sort()) {
    await c.query(
      `UPDATE groups g SET properties = COALESCE((
         SELECT jsonb_object_agg(k, v ORDER BY o) FROM (
           SELECT DISTINCT ON (kv.key) kv.key AS k, kv.value AS v, e.created_at AS o
           FROM events e, jsonb_each(e.data) kv
           WHERE e.project_id = $1 AND e.type = '$group' AND e.group_id = $2
           ORDER BY kv.key, e.created_at DESC, e.ts DESC, e.id DESC
         ) last), '{}'::jsonb)
       WHERE g.project_id = $1 AND g.group_id = $2`,
      [projectId, id],
    );
  }
}

/** The end of a deletion: the user record (after every hour is done). */
export async function deleteUserRecord(
  c: PoolClient,
  projectId: string,
  userId: string,
  externalId: string,
): Promise<void> {
  await c.query("DELETE FROM users WHERE project_id = $1 AND (id = $2 OR external_id = $3)", [
    projectId,
    userId,
    externalId,
  ]);
}
