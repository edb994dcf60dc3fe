import type { PoolClient } from "pg";
import type { DerivedRecords } from "../events/pipeline.js";
import { deleteUserBatch, deleteUserRecord } from "./user-delete.js";
import { recoverBatch } from "./webhook-recover.js";
import type { Deps } from "../platform/deps.js";
import { txOn } from "../storage/db.js";
import { assertNever } from "../shared/never.js";
import { startPeriodic, type Periodic } from "../shared/periodic.js";
import { JobFailure, isFinished, isJobKind, parseParams, type JobParamsByKind } from "./model.js";
import {
  addEventsDeleted,
  jobById,
  markFailed,
  markRunning,
  markSucceeded,
  openJobs,
  tryLockJob,
  unlockJob,
  type JobRow,
} from "./store.js";

// The job runner (worker role): every POLL_MS it looks at the unfinished jobs, oldest first, and runs
// each one it can lock. The lock is a session advisory lock on the job's id, held by the connection
// that runs the job: while a runner lives, no other node runs that job; when its process dies
// (kill -9 included) PostgreSQL drops the connection and the lock with it, and the next pass of any
// node resumes the job where its committed batches left it. Every step of a job is idempotent.
// A database error leaves the job open (tried again on the next pass); a JobFailure fails it.

const POLL_MS = 250;
const OPEN_JOBS_PER_PASS = 20;
/** webhook.recover: deliveries re-queued per transaction, and at most per recovery. */
const RECOVER_BATCH = 500;
const RECOVER_MAX = 10_000;

export interface JobRunner {
  start(): void;
  stop(): Promise<void>;
}

export function createJobRunner(
  deps: Pick<Deps, "db" | "log" | "clock" | "background">,
  derived: DerivedRecords,
): JobRunner {
  const { db, log, clock } = deps;
  let loop: Periodic | undefined;

  /**
   * One transaction on the job's own connection (the one holding its lock); no statement timeout.
   * A failed ROLLBACK needs no flag here: the error goes on up to `attempt`, which destroys the connection.
   */
  function inTx<T>(c: PoolClient, fn: () => Promise<T>): Promise<T> {
    return txOn(
      c,
      async () => {
        await c.query("SET LOCAL statement_timeout = 0");
        return fn();
      },
      () => undefined,
    );
  }

  /** user.delete: the user's hours in batches, then the user record. False when stopped before the end. */
  async function deleteUser(
    c: PoolClient,
    job: JobRow,
    p: JobParamsByKind["user.delete"],
    stopped: () => boolean,
  ): Promise<boolean> {
    for (;;) {
      if (stopped()) return false;
      // Events accepted before this batch have their derived rows (user-hours, rollups) applied first.
      await derived.settle(job.project_id);
      const done = await inTx(c, async () => {
        const b = await deleteUserBatch(c, job.project_id, p.externalId);
        await addEventsDeleted(c, job.id, b.events);
        if (b.more) return false;
        // No hour left: the record goes, and the job succeeds (its params cleared) in the same transaction.
        await deleteUserRecord(c, job.project_id, p.userId, p.externalId);
        await markSucceeded(c, job.id, clock());
        return true;
      });
      if (done) return true;
    }
  }

  /**
   * webhook.recover: the abandoned deliveries in batches, each re-queued with one more attempt
   * (webhook-recover.ts); only those abandoned before the job was made, so one that
   * fails again is not taken twice, and a resumed job goes on where it stopped.
   */
  async function recoverDeliveries(
    c: PoolClient,
    job: JobRow,
    p: JobParamsByKind["webhook.recover"],
    stopped: () => boolean,
  ): Promise<boolean> {
    let left = RECOVER_MAX - job.events_deleted;
    for (;;) {
      if (stopped()) return false;
      const done = await inTx(c, async () => {
        const n = left > 0 ? await recoverBatch(c, p, job.created_at, Math.min(RECOVER_BATCH, left), clock()) : 0;
        // The count so far (shown as the job's eventsDeleted: deliveries re-queued).
        await addEventsDeleted(c, job.id, n);
        left -= n;
        if (n === RECOVER_BATCH && left > 0) return false;
        await markSucceeded(c, job.id, clock());
        return true;
      });
      if (done) return true;
    }
  }

  /** Runs a locked, unfinished job to its end; false when the node is stopping. Exhaustive over kinds. */
  async function run(c: PoolClient, job: JobRow, stopped: () => boolean): Promise<boolean> {
    const kind = job.kind;
    if (!isJobKind(kind)) throw new JobFailure("this node does not know the job's kind");
    switch (kind) {
      case "user.delete": {
        const p = parseParams(kind, job.params);
        if (!p) throw new JobFailure("the job's parameters are invalid");
        return deleteUser(c, job, p, stopped);
      }
      case "webhook.recover": {
        const p = parseParams(kind, job.params);
        if (!p) throw new JobFailure("the job's parameters are invalid");
        return recoverDeliveries(c, job, p, stopped);
      }
      default:
        return assertNever(kind, "job kind");
    }
  }

  async function attempt(jobId: string, stopped: () => boolean): Promise<void> {
    const c = await db.connect();
    let broken = false;
    try {
      if (!(await tryLockJob(c, jobId))) return; // another runner has it
      try {
        const job = await jobById(c, jobId);
        if (!job || isFinished(job.status)) return;
        await markRunning(c, job.id, clock());
        try {
          await run(c, job, stopped);
        } catch (err) {
          if (!(err instanceof JobFailure)) throw err;
          await markFailed(c, job.id, err.message, clock());
          log.warn({ jobId: job.id, kind: job.kind, reason: err.message }, "job failed");
        }
      } finally {
        await unlockJob(c, jobId).catch(() => (broken = true));
      }
    } catch (err) {
      broken = true;
      log.warn({ err, jobId }, "job interrupted; it resumes on a later pass");
    } finally {
      c.release(broken);
    }
  }

  return {
    start() {
      loop = startPeriodic(deps.background, "jobs", POLL_MS, async (stopped) => {
        for (const j of await openJobs(db, OPEN_JOBS_PER_PASS)) {
          if (stopped()) return;
          await attempt(j.id, stopped);
        }
      });
    },
    async stop() {
      await loop?.stop();
    },
  };
}
