import type { Logger } from "pino";
import { backgroundTx, type Db } from "../storage/db.js";
import { slotColumn } from "./sql.js";
import { WEEK_MS } from "../shared/time.js";

// Slot assignment and backfill (see the protocol in registry.ts). Driven by the worker loop and by
// the benchmark loader; both use these same functions. Background work: its statements are not
// bound by STATEMENT_TIMEOUT_MS (backgroundTx).

export interface AssignOptions {
  /** Latest events sampled to rank keys by use. */
  sample: number;
  /** A key must appear in at least this share of the sample to get a slot. */
  minShare: number;
}

const DEFAULT_ASSIGN: AssignOptions = { sample: 20_000, minShare: 0.01 };

/** Ranks the project's top-level data keys by use in its latest events and assigns free slots. */
export async function assignSlots(
  db: Db,
  projectId: string,
  now: Date,
  opts: AssignOptions = DEFAULT_ASSIGN,
): Promise<string[]> {
  const usage = await backgroundTx(db, (c) =>
    c.query<{ key: string; n: number; s: number; total: number }>(
      `SELECT kv.key, count(*) FILTER (WHERE jsonb_typeof(kv.value) = 'number')::int AS n,
            count(*) FILTER (WHERE jsonb_typeof(kv.value) = 'string')::int AS s,
            (SELECT count(*) FROM (SELECT 1 FROM events WHERE project_id = $1 ORDER BY ts DESC LIMIT $2) t)::int AS total
     FROM (SELECT data FROM events WHERE project_id = $1 ORDER BY ts DESC LIMIT $2) e, jsonb_each(e.data) AS kv
     GROUP BY kv.key`,
      [projectId, opts.sample],
    ),
  );
  const assigned: string[] = [];
  await backgroundTx(db, async (c) => {
    await c.query("INSERT INTO analytics_registry_versions (project_id) VALUES ($1) ON CONFLICT DO NOTHING", [
      projectId,
    ]);
    // Serializes assigners of one project (several workers).
    await c.query("SELECT version FROM analytics_registry_versions WHERE project_id = $1 FOR UPDATE", [projectId]);
    const taken = await c.query<{ key: string; kind: string; slot: number }>(
      "SELECT key, kind, slot FROM analytics_properties WHERE project_id = $1",
      [projectId],
    );
    const keys = new Set(taken.rows.map((r) => r.key));
    const free = { n: [1, 2, 3, 4, 5, 6, 7, 8], s: [1, 2, 3, 4, 5, 6, 7, 8] };
    for (const r of taken.rows) free[r.kind as "n" | "s"] = free[r.kind as "n" | "s"].filter((x) => x !== r.slot);
    const ranked = usage.rows
      .map((u) => ({
        key: u.key,
        kind: (u.n >= u.s ? "n" : "s") as "n" | "s",
        uses: Math.max(u.n, u.s),
        total: u.total,
      }))
      .filter((u) => u.uses > 0 && u.uses >= u.total * opts.minShare && !keys.has(u.key))
      .sort((a, b) => b.uses - a.uses || (a.key < b.key ? -1 : 1));
    for (const u of ranked) {
      const slot = free[u.kind].shift();
      if (slot === undefined) continue;
      await c.query(
        "INSERT INTO analytics_properties (project_id, key, kind, slot, assigned_at) VALUES ($1, $2, $3, $4, $5)",
        [projectId, u.key, u.kind, slot, now],
      );
      assigned.push(u.key);
    }
    if (assigned.length)
      await c.query("UPDATE analytics_registry_versions SET version = version + 1 WHERE project_id = $1", [projectId]);
  });
  return assigned;
}

/**
 * Waits until every client transaction of this database that was open when called has ended.
 * Only client backends can be ingest transactions; autovacuum workers (which hold a virtual xid for
 * as long as they vacuum a large partition) and other background processes are not waited for.
 */
export async function waitForOpenTransactions(db: Db, timeoutMs: number): Promise<boolean> {
  const open = await db.query<{ vxid: string }>(
    `SELECT l.virtualxid AS vxid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'virtualxid' AND l.granted AND a.datname = current_database() AND l.pid <> pg_backend_pid()
       AND a.backend_type = 'client backend'`,
  );
  const ids = open.rows.map((r) => r.vxid);
  const deadline = Date.now() + timeoutMs;
  while (ids.length) {
    const r = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'virtualxid' AND granted AND virtualxid = ANY($1::text[])",
      [ids],
    );
    if (r.rows[0].n === 0) return true;
    if (Date.now() > deadline) return false;
    await new Promise((res) => setTimeout(res, 20));
  }
  return true;
}

/**
 * Fills every 'backfilling' slot of the project on its stored events (one week of events per
 * statement) and marks them active. Returns the keys activated.
 */
export async function backfillSlots(db: Db, projectId: string, now: Date, log?: Logger): Promise<string[]> {
  const pending = await db.query<{ key: string; kind: "n" | "s"; slot: number }>(
    "SELECT key, kind, slot FROM analytics_properties WHERE project_id = $1 AND state = 'backfilling' ORDER BY kind, slot",
    [projectId],
  );
  if (pending.rows.length === 0) return [];
  if (!(await waitForOpenTransactions(db, 60_000))) {
    log?.warn({ projectId }, "slot backfill postponed: transactions still open");
    return [];
  }
  const params: unknown[] = [projectId];
  const sets: string[] = [];
  const differs: string[] = [];
  for (const p of pending.rows) {
    const col = slotColumn(`${p.kind}${p.slot}`);
    const k = `$${params.push(p.key)}::text`;
    const expr =
      p.kind === "n"
        ? `CASE WHEN jsonb_typeof(data -> ${k}) = 'number' THEN (data ->> ${k})::float8 END`
        : `CASE WHEN jsonb_typeof(data -> ${k}) = 'string' THEN data ->> ${k} END`;
    sets.push(`${col} = ${expr}`);
    differs.push(`${col} IS DISTINCT FROM ${expr}`);
  }
  const range = await db.query<{ lo: Date | null; hi: Date | null }>(
    "SELECT min(ts) AS lo, max(ts) AS hi FROM events WHERE project_id = $1",
    [projectId],
  );
  const { lo, hi } = range.rows[0];
  if (lo && hi) {
    const a = params.push(0),
      b = params.push(0);
    const sql = `UPDATE events SET ${sets.join(", ")} WHERE project_id = $1 AND ts >= $${a} AND ts < $${b} AND (${differs.join(" OR ")})`;
    for (let t = lo.getTime(); t <= hi.getTime(); t += WEEK_MS) {
      params[a - 1] = new Date(t);
      params[b - 1] = new Date(Math.min(t + WEEK_MS, hi.getTime() + 1));
      await backgroundTx(db, (c) => c.query(sql, params));
    }
  }
  await db.query(
    "UPDATE analytics_properties SET state = 'active', active_at = $3 WHERE project_id = $1 AND key = ANY($2::text[]) AND state = 'backfilling'",
    [projectId, pending.rows.map((p) => p.key), now],
  );
  return pending.rows.map((p) => p.key);
}
