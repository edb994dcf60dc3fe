import { DAY_MS, WEEK_MS } from "../shared/time.js";

// Retention decisions (pure; tested directly): which period is in force for a project, its cutoff, and
// whether a whole weekly partition of events may be dropped.

export type RetentionSource = "project" | "default" | "none";

export interface RetentionSettings {
  /** RETENTION_DAYS (already capped by the maximum); undefined: keep forever. */
  defaultDays?: number;
  /** RETENTION_MAX_DAYS: the most a project may set; a project's own value above it is capped. */
  maxDays: number;
}

/** The days in force: the project's own (capped by the maximum), else the operator's default, else none. */
export function retentionInForce(
  projectDays: number | null | undefined,
  s: RetentionSettings,
): { days?: number; source: RetentionSource } {
  if (projectDays != null) return { days: Math.min(projectDays, s.maxDays), source: "project" };
  if (s.defaultDays !== undefined) return { days: Math.min(s.defaultDays, s.maxDays), source: "default" };
  return { source: "none" };
}

/**
 * Records strictly older than this are expired: the start of the UTC day of (now - days). Whole days
 * expire, so every minute, hour and day bucket before it is expired whole.
 */
export function cutoffOf(nowMs: number, days: number): number {
  const t = nowMs - days * DAY_MS;
  return Math.floor(t / DAY_MS) * DAY_MS;
}

/**
 * A week's partition [weekStart, weekStart + 7 days) may be dropped when every project with rows in it
 * has a cutoff at or past the week's end. A project with no retention (cutoff undefined) keeps it; a
 * project that no longer exists (deleted: its rows are garbage) does not hold it.
 */
export function partitionDroppable(
  weekStartMs: number,
  projectsInWeek: readonly string[],
  cutoffs: ReadonlyMap<string, number | undefined>,
  exists: (projectId: string) => boolean,
): boolean {
  const end = weekStartMs + WEEK_MS;
  return projectsInWeek.every((p) => {
    if (!exists(p)) return true;
    const c = cutoffs.get(p);
    return c !== undefined && c >= end;
  });
}

/** The week start (ms) of a partition named events_pYYYYMMDD; undefined for any other name. */
export function partitionWeek(name: string): number | undefined {
  const m = /^events_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  if (!m) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isFinite(ms) ? ms : undefined;
}

/** What a project message shows under `retention`. */
export function retentionView(
  projectDays: number | null | undefined,
  s: RetentionSettings & { intervalMs: number },
  nowMs: number,
  lastRunAt: Date | undefined,
): { days?: number; source: RetentionSource; cutoff?: string; lastRunAt?: string; nextRunAt?: string } {
  const { days, source } = retentionInForce(projectDays, s);
  const next = lastRunAt ? Math.max(lastRunAt.getTime() + s.intervalMs, nowMs) : nowMs + s.intervalMs;
  return {
    days,
    source,
    cutoff: days === undefined ? undefined : new Date(cutoffOf(nowMs, days)).toISOString(),
    lastRunAt: lastRunAt?.toISOString(),
    nextRunAt: days === undefined ? undefined : new Date(next).toISOString(),
  };
}
