import type { JobRow } from "./store.js";

// Rows of the jobs table as the Job message (jobs.proto).
export function toJob(r: JobRow) {
  return {
    jobId: r.id,
    status: r.status,
    kind: r.kind,
    createdAt: r.created_at.toISOString(),
    startedAt: r.started_at?.toISOString(),
    finishedAt: r.finished_at?.toISOString(),
    error: r.error ?? undefined,
    eventsDeleted: BigInt(r.events_deleted),
  };
}
