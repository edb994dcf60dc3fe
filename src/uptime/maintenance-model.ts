import { nextRunAfter, type Schedule } from "./schedule.js";

// The pure part of maintenance windows (docs/uptime.md "Maintenance windows"): a window's times, its
// occurrences and its status, read by the uptime feature (maintenance.ts, messages.ts) and the
// status pages alike, without the store.

export interface WindowTimes {
  startsAt: number | null;
  endsAt: number | null;
  schedule: (Schedule & { durationMs: number }) | null;
}

export interface Occurrence {
  start: number;
  end: number;
}

/**
 * The occurrence in progress at `t` (start <= t < end) or else the next one, or null when none is
 * left. Recurring: starts are the cron's runs (nextRunAfter: the DST rules of cron monitors); an
 * occurrence is in progress when it started within durationMs before `t`.
 */
export function occurrenceAt(w: WindowTimes, t: number): Occurrence | null {
  if (w.schedule === null) {
    if (w.startsAt === null || w.endsAt === null || w.endsAt <= t) return null;
    return { start: w.startsAt, end: w.endsAt };
  }
  const d = w.schedule.durationMs;
  const start = nextRunAfter(w.schedule, t - d);
  return start === null ? null : { start, end: start + d };
}

/** The occurrences starting in [from, to), at most `limit`, in order (a page's upcoming list). */
export function occurrencesBetween(w: WindowTimes, from: number, to: number, limit: number): Occurrence[] {
  const out: Occurrence[] = [];
  let o = occurrenceAt(w, from);
  while (o !== null && o.start < to && out.length < limit) {
    if (o.start >= from) out.push(o);
    o = w.schedule === null ? null : occurrenceAt(w, o.start + w.schedule.durationMs);
  }
  return out;
}

export type MaintenanceStatus = "scheduled" | "in_progress" | "completed";

export interface MaintenanceRow {
  id: string;
  project_id: string;
  title: string;
  description: string;
  starts_at: Date | null;
  ends_at: Date | null;
  cron: string | null;
  timezone: string | null;
  duration_ms: string | number | null;
  occ_start: Date | null;
  occ_end: Date | null;
  active: boolean;
  due_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export function timesOf(r: MaintenanceRow): WindowTimes {
  return {
    startsAt: r.starts_at?.getTime() ?? null,
    endsAt: r.ends_at?.getTime() ?? null,
    schedule:
      r.cron !== null && r.timezone !== null
        ? { cron: r.cron, timezone: r.timezone, durationMs: Number(r.duration_ms) }
        : null,
  };
}

export function statusOf(r: Pick<MaintenanceRow, "active" | "occ_start">): MaintenanceStatus {
  return r.active ? "in_progress" : r.occ_start === null ? "completed" : "scheduled";
}
