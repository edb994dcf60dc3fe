import type pg from "pg";
import type { Deps } from "../platform/deps.js";
import type { Feature } from "../shared/feature.js";
import { startPeriodic, type Periodic } from "../shared/periodic.js";
import { PurgeMetrics } from "./purge-metrics.js";
import * as store from "./purge-store.js";

// The purge sweeper (docs/lifecycle.md "Deleting a project"). DELETE /v1/projects/:id removes the
// project row and queues its id in deleted_projects (src/projects/store.ts); every PURGE_INTERVAL_MS
// one worker node (a session advisory lock: PostgreSQL releases it the moment that node dies) removes
// every row the project still owns: in every table with a project_id column (found in the catalog,
// so a new table is covered too), and the points and rollups of its metrics. Each batch is one
// short statement of at most PURGE_BATCH_ROWS rows: other tenants' writes never wait long behind it,
// and a kill -9 loses at most the batch in flight (a restart goes on where the rows say).
//
// The project's row in deleted_projects goes last, once a whole sweep found nothing AND no
// transaction older than that sweep is still running: a write whose credentials were checked before
// the delete may commit after it (users, groups, metrics have no foreign key to the project any
// more), and the sweep that follows it catches its rows.

export const PURGE_LOCK = 0x76_69_67_19; // pg advisory lock id of the purge sweeper ("vig" 0x19)

/** Tables emptied first (in this order): pending projections would re-create derived rows. */
const FIRST = ["ingest_deltas", "events"];
/** Emptied last: metrics after their points and rollups. */
const LAST = ["metrics"];

interface PurgeOptions {
  batchRows: number;
  stopped: () => boolean;
  metrics?: PurgeMetrics;
}

/**
 * Removes one batch after another of the project's rows until none is left (or `stopped`); returns
 * the number of rows deleted.
 */
async function sweepProject(c: store.Queryable, projectId: string, opts: PurgeOptions): Promise<number> {
  const tables = order(await store.ownedTables(c));
  let deleted = 0;
  const drain = async (batch: () => Promise<number>) => {
    for (;;) {
      if (opts.stopped()) return;
      const n = await batch();
      deleted += n;
      opts.metrics?.rows.inc(n);
      if (n < opts.batchRows) return;
    }
  };
  for (const t of tables) {
    if (LAST.includes(t.name)) await drain(() => store.deleteMetricChildrenBatch(c, projectId, opts.batchRows));
    for (const leaf of t.leaves) await drain(() => store.deleteBatch(c, leaf, projectId, opts.batchRows));
  }
  return deleted;
}

function order(tables: store.OwnedTable[]): store.OwnedTable[] {
  const rank = (name: string) =>
    FIRST.includes(name) ? FIRST.indexOf(name) - FIRST.length : LAST.includes(name) ? 1 + LAST.indexOf(name) : 0;
  return [...tables].sort((a, b) => rank(a.name) - rank(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * One pass over every deleted project, on one connection holding the sweeper's lock (another node
 * already sweeping: nothing to do). Returns the ids whose purge finished.
 */
async function purgePass(db: Pick<pg.Pool, "connect">, opts: PurgeOptions, log?: Deps["log"]): Promise<string[]> {
  const c = await db.connect();
  const finished: string[] = [];
  let unlockFailed: Error | undefined;
  try {
    const got = await c.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1) AS ok", [PURGE_LOCK]);
    if (!got.rows[0]?.ok) return finished;
    try {
      const pending = await store.deletedProjects(c);
      opts.metrics?.pending.set(pending.length);
      for (const p of pending) {
        if (opts.stopped()) break;
        await store.markSwept(c, p.id);
        const started = await store.dbNow(c);
        let deleted: number;
        try {
          deleted = await sweepProject(c, p.id, opts);
        } catch (err) {
          // One project's failure (a table added with a restricting foreign key, say) must not stop
          // the others' purge; it is tried again on the next pass.
          log?.error({ err, projectId: p.id }, "deleted project: purge failed");
          continue;
        }
        if (opts.stopped()) break;
        if (deleted > 0) log?.info({ projectId: p.id, deleted }, "deleted project: rows purged");
        // A clean sweep after every older write ended: nothing of the project can appear any more.
        if (deleted === 0 && (await store.writersBeforeEnded(c, started))) {
          await store.forgetDeletedProject(c, p.id);
          finished.push(p.id);
          opts.metrics?.finished.inc();
          opts.metrics?.pending.dec();
          log?.info({ projectId: p.id, deletedAt: p.deleted_at }, "deleted project: purge finished");
        }
      }
    } finally {
      // A connection that cannot unlock is destroyed (its session, and so the lock, ends with it).
      unlockFailed = await c.query("SELECT pg_advisory_unlock($1)", [PURGE_LOCK]).then(
        () => undefined,
        (err: Error) => err,
      );
    }
  } finally {
    c.release(unlockFailed);
  }
  return finished;
}

/** The sweeper as a feature: no RPC, background work on worker nodes. */
export function createPurgeFeature(deps: Pick<Deps, "db" | "log" | "config" | "telemetry" | "background">): Feature {
  const { db, log, config } = deps;
  const metrics = new PurgeMetrics(deps.telemetry.registry);
  let loop: Periodic | undefined;
  return {
    name: "purge",
    services: [],
    async start() {
      loop = startPeriodic(deps.background, "project purge", config.purge.intervalMs, async (stopped) => {
        await purgePass(db, { batchRows: config.purge.batchRows, stopped, metrics }, log);
      });
    },
    async stop() {
      await loop?.stop();
    },
  };
}
