import type { DerivedRecords } from "../events/pipeline.js";
import type { Deps } from "../platform/deps.js";
import type { Feature } from "../shared/feature.js";
import { dutyCycle, startPeriodic, type Periodic } from "../shared/periodic.js";
import { DAY_MS, HOUR_MS, WEEK_MS } from "../shared/time.js";
import { cutoffOf, partitionDroppable, partitionWeek, retentionInForce } from "./model.js";
import * as store from "./store.js";

// The retention pass (docs/lifecycle.md "Retention"): every RETENTION_INTERVAL_MS, on one node at a time
// (a session advisory lock on a connection held for the pass: PostgreSQL frees it the moment the process
// dies), for every project with a retention in force:
// 1. whole weekly partitions of events are dropped when every project with rows in them has a cutoff past
//    their end (checked under an exclusive lock, so no row arrives between the check and the drop);
// 2. what remains older than each project's cutoff is deleted in bounded batches (short transactions):
//    event webhook deliveries, events, metric points, heartbeats, ended runs, then the derived analytics rows
//    (rollups at every grain, column blocks, user-hours). Derived deltas are settled first, so a pending
//    delta cannot bring an expired bucket back. The batches keep to RETENTION_DUTY_CYCLE of the wall
//    time (resting in between), so a large trim does not take ingest's share of the database;
// 3. raw heartbeats older than UPTIME_RAW_RETENTION_DAYS (+1 h) are deleted for every project, paced the same;
// 4. each monitor's ended runs beyond its newest UPTIME_MAX_RUNS_PER_MONITOR are deleted, paced the same.
// Every step deletes by "older than the cutoff" only: a pass cut short (kill -9) is finished by the next.

const LOCK = "SELECT pg_try_advisory_lock(hashtextextended('vigil:retention', 0)) AS ok";
const UNLOCK = "SELECT pg_advisory_unlock(hashtextextended('vigil:retention', 0))";
/** How long a partition drop waits for ingest's locks before leaving the week to the batched trim. */
const DROP_LOCK_TIMEOUT_MS = 2_000;

type PassDeps = Pick<Deps, "db" | "log" | "clock" | "config">;

export interface PassResult {
  /** False when another node held the lock or the pass was stopped before the end. */
  completed: boolean;
  droppedPartitions: number;
  deleted: number;
}

/** One pass (exported for tests and the benchmark). */
export async function runRetentionPass(
  deps: PassDeps,
  derived: DerivedRecords,
  stopped: () => boolean = () => false,
): Promise<PassResult> {
  const { db } = deps;
  const result: PassResult = { completed: false, droppedPartitions: 0, deleted: 0 };
  const held = await db.connect();
  let locked = false;
  try {
    locked = (await held.query<{ ok: boolean }>(LOCK)).rows[0].ok;
    if (!locked) return result;
    await enforce(deps, derived, stopped, result);
    return result;
  } finally {
    if (locked) await held.query(UNLOCK).catch(() => undefined);
    held.release();
  }
}

async function enforce(deps: PassDeps, derived: DerivedRecords, stopped: () => boolean, result: PassResult) {
  const { db, clock, config, log } = deps;
  const now = clock().getTime();
  const projects = await store.projectsRetention(db);
  const cutoffs = new Map<string, number | undefined>();
  for (const p of projects) {
    const { days } = retentionInForce(p.retention_days, config.retention);
    cutoffs.set(p.id, days === undefined ? undefined : cutoffOf(now, days));
  }
  // A fold, not Math.max(...spread): a spread of one argument per project overflows the call stack.
  let latest = -Infinity;
  for (const c of cutoffs.values()) if (c !== undefined && c > latest) latest = c;

  // 1. Whole partitions, oldest first; only weeks that ended before the latest cutoff can qualify.
  for (const name of await store.eventPartitions(db)) {
    if (stopped()) return;
    const week = partitionWeek(name);
    if (week === undefined || week + WEEK_MS > latest) continue;
    const inWeek = await store.projectsInPartition(db, week);
    const allow = (ps: string[]) => partitionDroppable(week, ps, cutoffs, (id) => cutoffs.has(id));
    if (!allow(inWeek)) continue;
    // Pending deltas of these projects are applied first: none may recreate a derived row afterwards.
    for (const p of inWeek) if (cutoffs.has(p)) await derived.settle(p);
    if (await store.dropPartitionIf(db, week, DROP_LOCK_TIMEOUT_MS, allow)) {
      result.droppedPartitions++;
      log.info({ partition: name }, "retention: dropped an expired events partition");
    }
  }

  // 2. Batched trims per project.
  const weeks = (await store.eventPartitions(db)).map(partitionWeek).filter((w): w is number => w !== undefined);
  const paced = dutyCycle(config.retention.dutyCycle, stopped);
  for (const [projectId, cutoff] of cutoffs) {
    if (cutoff === undefined) continue;
    await derived.settle(projectId);
    const batch = config.retention.batchRows; // rows per delete statement (RETENTION_BATCH_ROWS)
    for (const what of store.TRIM_ORDER) {
      // Events one partition at a time (those that start before the cutoff), the rest table by table.
      const steps =
        what === "events"
          ? weeks
              .filter((w) => w < cutoff)
              .map((w) => () => store.trimEventsBatch(db, w, projectId, new Date(cutoff), batch))
          : [() => store.trimBatch(db, what, projectId, new Date(cutoff), batch)];
      for (const step of steps) {
        for (;;) {
          if (stopped()) return;
          const n = await paced(step);
          result.deleted += n;
          if (n < batch) break;
        }
      }
    }
  }

  // 3. Raw heartbeats past UPTIME_RAW_RETENTION_DAYS (plus an hour), of every project whatever its
  //    retention: older windows read the hourly rollups (docs/uptime.md). The one loop deleting them.
  const rawCutoff = new Date(now - config.uptime.rawRetentionDays * DAY_MS - HOUR_MS);
  for (;;) {
    if (stopped()) return;
    const n = await paced(() => store.trimRawHeartbeats(db, rawCutoff, config.retention.batchRows));
    result.deleted += n;
    if (n < config.retention.batchRows) break;
  }

  // 4. Runs of cron jobs beyond the newest UPTIME_MAX_RUNS_PER_MONITOR of each monitor (never a running
  //    one), whatever the project's retention: the run list stays bounded (docs/uptime.md "Runs").
  for (;;) {
    if (stopped()) return;
    const n = await paced(() => store.trimRunsOverCap(db, config.uptime.maxRunsPerMonitor, config.retention.batchRows));
    result.deleted += n;
    if (n < config.retention.batchRows) break;
  }
  await store.recordRun(db, clock());
  result.completed = true;
}

/** The feature: the pass on worker nodes (ROLE=all or worker). */
export function createRetentionFeature(deps: PassDeps & Pick<Deps, "background">, derived: DerivedRecords): Feature {
  let loop: Periodic | undefined;
  return {
    name: "retention",
    services: [],
    async start() {
      loop = startPeriodic(deps.background, "retention pass", deps.config.retention.intervalMs, async (stopped) => {
        const r = await runRetentionPass(deps, derived, stopped);
        if (r.deleted || r.droppedPartitions) deps.log.info(r, "retention pass");
      });
    },
    async stop() {
      await loop?.stop();
    },
  };
}
