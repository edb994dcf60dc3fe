import { assertNever } from "../shared/never.js";

// Jobs: pure decisions (statuses, transitions, the table of kinds). src/jobs/runner.ts runs them.

const JOB_STATUSES = ["pending", "running", "succeeded", "failed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export function isFinished(status: JobStatus): boolean {
  return status === "succeeded" || status === "failed";
}

/**
 * The kinds of job and what each carries in `params`. A new kind added here is a compile error in
 * every exhaustive switch over JobKind (the runner's, the validation below) until it is handled.
 */
export interface JobParamsByKind {
  /** Deleting a user and their data: the user record's id and its externalId (events' userId). */
  "user.delete": { userId: string; externalId: string };
  /** Re-queueing a webhook's abandoned deliveries created in [since, until) (ISO times; webhooks/recover.ts). */
  "webhook.recover": { webhookId: string; since: string; until: string };
}
export type JobKind = keyof JobParamsByKind;
const JOB_KINDS: readonly JobKind[] = ["user.delete", "webhook.recover"];

export function isJobKind(kind: string): kind is JobKind {
  return (JOB_KINDS as readonly string[]).includes(kind);
}

/** A job's params as stored (jsonb), checked against its kind; undefined when they do not fit. */
export function parseParams<K extends JobKind>(kind: K, params: unknown): JobParamsByKind[K] | undefined;
export function parseParams(kind: JobKind, params: unknown): JobParamsByKind[JobKind] | undefined {
  if (typeof params !== "object" || params === null) return undefined;
  const p = params as Record<string, unknown>;
  switch (kind) {
    case "user.delete":
      return typeof p.userId === "string" && typeof p.externalId === "string"
        ? { userId: p.userId, externalId: p.externalId }
        : undefined;
    case "webhook.recover":
      return typeof p.webhookId === "string" && typeof p.since === "string" && typeof p.until === "string"
        ? { webhookId: p.webhookId, since: p.since, until: p.until }
        : undefined;
    default:
      return assertNever(kind, "job kind");
  }
}

/** A failure that retrying cannot fix: the job is marked failed with this message (words, no data). */
export class JobFailure extends Error {}
