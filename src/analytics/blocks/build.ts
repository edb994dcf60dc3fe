import type { Logger } from "pino";
import { tx, type Db } from "../../storage/db.js";
import { activeSlots } from "../registry.js";
import { slotColumn } from "../sql.js";
import { encodeBlock, numberColumn, stringColumn, type Column } from "./format.js";
import { HOUR_MS } from "../../shared/time.js";

// Building column blocks from stored events (background work; also called by the benchmark).
//
// A block is built in one REPEATABLE READ snapshot that reads both the hour's rollup count and the
// hour's events, and is stored only when they agree: the rollups then account for exactly the
// block's events, so a later query that finds the same rollup count knows the block is complete.

export interface BuildOptions {
  /** An hour is built once it ended at least this long ago (late events trigger a rebuild). */
  sealMs: number;
  /** A block whose hour received events since it was built is rebuilt at most this often. */
  rebuildMs: number;
}
const DEFAULT_BUILD: BuildOptions = { sealMs: 120_000, rebuildMs: 60_000 };

/** Builds (or rebuilds) the block of one project-hour. False when the snapshot did not agree or another builder had it. */
export async function buildBlock(db: Db, projectId: string, hour: number, now: Date): Promise<boolean> {
  try {
    return await buildInSnapshot(db, projectId, hour, now);
  } catch (err) {
    // The snapshot is taken by the lock statement itself, so it can predate the commit of a builder
    // that held the lock a moment before: writing over that block is then a serialization failure.
    // That builder's block is as good as ours; this one is left to a later pass.
    if ((err as { code?: string }).code === "40001") return false;
    throw err;
  }
}

function buildInSnapshot(db: Db, projectId: string, hour: number, now: Date): Promise<boolean> {
  return tx(db, async (c) => {
    await c.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    // Background work: an hour's aggregate may run longer than STATEMENT_TIMEOUT_MS.
    await c.query("SET LOCAL statement_timeout = 0");
    // Another node building the same block: leave it to that one.
    const lock = await c.query<{ ok: boolean }>(
      "SELECT pg_try_advisory_xact_lock(hashtextextended('analytics_block:' || $1 || ':' || $2::text, 0)) AS ok",
      [projectId, hour],
    );
    if (!lock.rows[0].ok) return false;
    const slots = await activeSlots(c, projectId);
    const keys: { key: string; kind: "n" | "s"; col: string }[] = [];
    for (const kind of ["s", "n"] as const)
      for (const [key, col] of slots[kind]) keys.push({ key, kind, col: slotColumn(col) });
    const params: unknown[] = [projectId, new Date(hour), new Date(hour + HOUR_MS)];
    // `other`: the key holds a non-null JSON value of the other type (its slot is NULL).
    const others = keys.map(
      (k) => `(${k.col} IS NULL AND NULLIF(data -> $${params.push(k.key)}::text, 'null'::jsonb) IS NOT NULL)`,
    );
    const sql = `SELECT (SELECT COALESCE(sum(count), 0)::int FROM analytics_rollups WHERE project_id = $1 AND grain = 1 AND bucket = $2) AS expected,
      array_agg(type) AS type, array_agg(user_id) AS user_id
      ${keys.map((k, i) => `, array_agg(${k.col}) AS c${i}, count(*) FILTER (WHERE ${others[i]})::int AS o${i}`).join("")}
      FROM events WHERE project_id = $1 AND ts >= $2 AND ts < $3`;
    const r = (await c.query(sql, params)).rows[0];
    const rows = (r.type as string[] | null)?.length ?? 0;
    // An hour with no rollup left (expired by retention, or deleted, after pendingHours listed it) gets no
    // block: an empty one would only outlive the pass that removed the hour's blocks.
    if (rows === 0 || rows !== r.expected) return false;
    const columns = new Map<string, Column>();
    columns.set("type", stringColumn(r.type ?? []));
    columns.set("user_id", stringColumn(r.user_id ?? []));
    keys.forEach((k, i) => {
      const vs = (r[`c${i}`] ?? []) as (string | number | null)[];
      columns.set(
        `data.${k.key}`,
        k.kind === "s"
          ? stringColumn(vs as (string | null)[], r[`o${i}`])
          : numberColumn(vs as (number | null)[], r[`o${i}`]),
      );
    });
    await c.query(
      `INSERT INTO analytics_blocks (project_id, hour, rows, keys, built_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (project_id, hour) DO UPDATE SET rows = EXCLUDED.rows, keys = EXCLUDED.keys, built_at = EXCLUDED.built_at`,
      [projectId, new Date(hour), rows, keys.map((k) => k.key), now],
    );
    await c.query("DELETE FROM analytics_block_columns WHERE project_id = $1 AND hour = $2", [
      projectId,
      new Date(hour),
    ]);
    const names = [...columns.keys()];
    await c.query(
      "INSERT INTO analytics_block_columns (project_id, hour, name, body) SELECT $1, $2, n, b FROM unnest($3::text[], $4::bytea[]) AS u(n, b)",
      [
        projectId,
        new Date(hour),
        names,
        names.map((n) => encodeBlock({ rows, columns: new Map([[n, columns.get(n)!]]) })),
      ],
    );
    return true;
  });
}

/**
 * Hours of a project whose block is missing, stale (the hour's rollup count differs) or lacks an
 * active slot: newest first, ended at least `sealMs` ago.
 */
export async function pendingHours(
  db: Db,
  projectId: string,
  now: Date,
  opts: BuildOptions,
  limit: number,
): Promise<number[]> {
  const r = await db.query<{ bucket: Date }>(
    `SELECT r.bucket FROM (
       SELECT bucket, sum(count)::int AS n FROM analytics_rollups
       WHERE project_id = $1 AND grain = 1 AND bucket < $2 GROUP BY bucket) r
     LEFT JOIN analytics_blocks b ON b.project_id = $1 AND b.hour = r.bucket
     WHERE b.hour IS NULL
        OR ((b.rows <> r.n OR NOT b.keys @> ARRAY(SELECT key FROM analytics_properties WHERE project_id = $1 AND state = 'active')) AND b.built_at < $3)
     ORDER BY r.bucket DESC LIMIT $4`,
    [projectId, new Date(now.getTime() - opts.sealMs - HOUR_MS), new Date(now.getTime() - opts.rebuildMs), limit],
  );
  return r.rows.map((x) => x.bucket.getTime());
}

/** Builds pending blocks of a project until none is left or `budgetMs` has passed. Returns how many were built. */
export async function buildPending(
  db: Db,
  projectId: string,
  clock: () => Date,
  opts: BuildOptions = DEFAULT_BUILD,
  budgetMs = Infinity,
  log?: Logger,
): Promise<{ built: number; done: boolean }> {
  const until = performance.now() + budgetMs;
  let built = 0;
  const skipped = new Set<number>();
  for (;;) {
    const hours = (await pendingHours(db, projectId, clock(), opts, 200 + skipped.size)).filter((h) => !skipped.has(h));
    if (hours.length === 0) return { built, done: true };
    for (const h of hours) {
      if (performance.now() > until) return { built, done: false };
      if (await buildBlock(db, projectId, h, clock())) built++;
      else {
        // Rollups behind the events (deltas not yet applied): the next pass retries.
        skipped.add(h);
        log?.debug({ projectId, hour: new Date(h).toISOString() }, "analytics block postponed");
      }
    }
  }
}
