import type { Queryable } from "../storage/db.js";
import { newId } from "../shared/ids.js";
import type { JobKind, JobParamsByKind, JobStatus } from "./model.js";

// SQL of the jobs table (migration 8001_jobs.sql).

export interface JobRow {
  id: string;
  project_id: string;
  kind: string;
  status: JobStatus;
  params: unknown;
  events_deleted: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const COLUMNS = "id, project_id, kind, status, params, events_deleted, error, created_at, started_at, finished_at";

/** Inserts a pending job (in the caller's transaction when `db` is one). */
export async function insertJob<K extends JobKind>(
  db: Queryable,
  projectId: string,
  kind: K,
  params: JobParamsByKind[K],
  now: Date,
): Promise<JobRow> {
  const r = await db.query<JobRow>(
    `INSERT INTO jobs (id, project_id, kind, params, created_at) VALUES ($1, $2, $3, $4::jsonb, $5) RETURNING ${COLUMNS}`,
    [newId("job"), projectId, kind, JSON.stringify(params), now.toISOString()],
  );
  return r.rows[0];
}

export async function getJob(db: Queryable, projectId: string, jobId: string): Promise<JobRow | undefined> {
  const r = await db.query<JobRow>(`SELECT ${COLUMNS} FROM jobs WHERE project_id = $1 AND id = $2`, [projectId, jobId]);
  return r.rows[0];
}

/** Unfinished jobs, oldest first (pending ones and running ones whose runner may have died). */
export async function openJobs(db: Queryable, limit: number): Promise<JobRow[]> {
  const r = await db.query<JobRow>(
    `SELECT ${COLUMNS} FROM jobs WHERE status IN ('pending', 'running') ORDER BY created_at, id LIMIT $1`,
    [limit],
  );
  return r.rows;
}

/** Session advisory lock of one job: held by the connection that runs it, released when it dies. */
export async function tryLockJob(db: Queryable, jobId: string): Promise<boolean> {
  const r = await db.query<{ ok: boolean }>(
    "SELECT pg_try_advisory_lock(hashtextextended('vigil:job:' || $1, 0)) AS ok",
    [jobId],
  );
  return r.rows[0].ok;
}

export async function unlockJob(db: Queryable, jobId: string): Promise<void> {
  await db.query("SELECT pg_advisory_unlock(hashtextextended('vigil:job:' || $1, 0))", [jobId]);
}

/** Re-reads a job once locked (another node may have finished it meanwhile). */
export async function jobById(db: Queryable, jobId: string): Promise<JobRow | undefined> {
  const r = await db.query<JobRow>(`SELECT ${COLUMNS} FROM jobs WHERE id = $1`, [jobId]);
  return r.rows[0];
}

export async function markRunning(db: Queryable, jobId: string, now: Date): Promise<void> {
  await db.query(
    "UPDATE jobs SET status = 'running', started_at = COALESCE(started_at, $2) WHERE id = $1 AND status IN ('pending', 'running')",
    [jobId, now.toISOString()],
  );
}

export async function addEventsDeleted(db: Queryable, jobId: string, n: number): Promise<void> {
  if (n > 0) await db.query("UPDATE jobs SET events_deleted = events_deleted + $2 WHERE id = $1", [jobId, n]);
}

/** Succeeded: params cleared (a finished deletion keeps no trace of whom it deleted). */
export async function markSucceeded(db: Queryable, jobId: string, now: Date): Promise<void> {
  await db.query(
    "UPDATE jobs SET status = 'succeeded', params = '{}'::jsonb, finished_at = $2, error = NULL WHERE id = $1 AND status = 'running'",
    [jobId, now.toISOString()],
  );
}

export async function markFailed(db: Queryable, jobId: string, error: string, now: Date): Promise<void> {
  await db.query(
    "UPDATE jobs SET status = 'failed', params = '{}'::jsonb, finished_at = $2, error = $3 WHERE id = $1 AND status IN ('pending', 'running')",
    [jobId, now.toISOString(), error],
  );
}
