// The monitor state machine as pure functions of (state, input, now). Both deadline runners (the
// embedded scheduler and the Temporal activity) and the heartbeat path decide through these; the
// database applies each decision with a compare-and-set on (status, deadline_at).

import { nextRunAfter, type Schedule } from "./schedule.js";

export type MonitorStatus = "unknown" | "up" | "down" | "paused";
export type HeartbeatStatus = "up" | "down";

/** What the decisions need to know about a monitor (times in epoch milliseconds). */
export interface MonitorState {
  status: MonitorStatus;
  expectedIntervalMs: number;
  gracePeriodMs: number;
  lastHeartbeatAt: number | null;
  firstHeartbeatAt: number | null;
  resumedAt: number | null;
  upSince: number | null;
  deadlineAt: number | null;
  /** A scheduled monitor's cron schedule (then `expectedIntervalMs` is not used); absent or null: none. */
  schedule?: Schedule | null;
  /** When the last successful run started (its start signal); absent or null: it arrived without one. */
  lastSuccessStartAt?: number | null;
}

/**
 * The deadline that applies to a monitor, or null when none does.
 * - up: lastHeartbeatAt + expectedIntervalMs + gracePeriodMs.
 * - unknown after a resume, for a monitor that has heartbeats: counted from the later of the last
 *   heartbeat and the resume. A monitor that never received a heartbeat stays unknown: no deadline.
 * - down, paused: none (a down monitor waits for a heartbeat; a paused one is not watched).
 * A scheduled monitor counts from the start of its last successful run (a success without a start:
 * its arrival, lastHeartbeatAt), or from the resume: the first scheduled time after that, plus
 * gracePeriodMs (decisions.md: "Cron jobs and ping keys"); no deadline if the schedule never runs.
 */
export function deadlineOf(
  m: Pick<
    MonitorState,
    | "status"
    | "expectedIntervalMs"
    | "gracePeriodMs"
    | "lastHeartbeatAt"
    | "resumedAt"
    | "schedule"
    | "lastSuccessStartAt"
  >,
): number | null {
  if (m.lastHeartbeatAt === null) return null;
  const resumed = m.status === "unknown" && m.resumedAt !== null ? m.resumedAt : null;
  if (m.status !== "up" && resumed === null) return null;
  if (!m.schedule)
    return (
      (resumed === null ? m.lastHeartbeatAt : Math.max(m.lastHeartbeatAt, resumed)) +
      m.expectedIntervalMs +
      m.gracePeriodMs
    );
  const lastRun = m.lastSuccessStartAt ?? m.lastHeartbeatAt;
  const next = nextRunAfter(m.schedule, resumed === null ? lastRun : Math.max(lastRun, resumed));
  return next === null ? null : next + m.gracePeriodMs;
}

export type DeadlineVerdict =
  /** Missed its deadline: goes down with an incident that started at `since` (the deadline itself). */
  | { overdue: true; since: number }
  /** Not (yet) overdue: check again at `nextCheckAt`, or never when null (no deadline applies). */
  | { overdue: false; nextCheckAt: number | null };

/** THE decision: is this monitor overdue at `now`, and since when. */
export function evaluateDeadline(m: MonitorState, now: number): DeadlineVerdict {
  const deadline = deadlineOf(m);
  if (deadline === null) return { overdue: false, nextCheckAt: null };
  if (deadline <= now) return { overdue: true, since: deadline };
  return { overdue: false, nextCheckAt: deadline };
}

/** The state after a missed deadline (the caller opens the incident at `since`). */
export function markDown(m: MonitorState): MonitorState {
  return { ...m, status: "down", upSince: null, deadlineAt: null };
}

export interface HeartbeatInput {
  at: number;
  status: HeartbeatStatus;
  expectedIntervalMs?: number;
  gracePeriodMs?: number;
}

export interface HeartbeatOutcome {
  next: MonitorState;
  statusChanged: boolean;
  /** Open an incident starting at this time (a `down` heartbeat on a monitor that was not down). */
  openIncidentAt: number | null;
  /** Resolve the open incident at this time (an `up` heartbeat on a down monitor). */
  resolveIncidentAt: number | null;
}

/**
 * A heartbeat: an `up` one brings the monitor up (resolving a down period), a `down` one takes it
 * down at once. While paused a heartbeat is recorded and changes no status; no deadline applies.
 */
export function applyHeartbeat(prev: MonitorState, hb: HeartbeatInput): HeartbeatOutcome {
  let openIncidentAt: number | null = null;
  let resolveIncidentAt: number | null = null;
  // A heartbeat that arrives after a deadline no runner has acted on yet: the monitor was down from
  // the deadline on, whichever node wins the race (an incident [deadline, now] when it comes back).
  const verdict = evaluateDeadline(prev, hb.at);
  const m = verdict.overdue ? markDown(prev) : prev;
  if (verdict.overdue) openIncidentAt = verdict.since;
  const base: MonitorState = {
    ...m,
    expectedIntervalMs: hb.expectedIntervalMs ?? m.expectedIntervalMs,
    gracePeriodMs: hb.gracePeriodMs ?? m.gracePeriodMs,
    lastHeartbeatAt: Math.max(hb.at, m.lastHeartbeatAt ?? hb.at),
    firstHeartbeatAt: m.firstHeartbeatAt ?? hb.at,
  };
  let next: MonitorState;
  if (m.status === "paused") {
    next = base;
  } else if (hb.status === "up") {
    next = { ...base, status: "up", upSince: m.status === "up" ? m.upSince : hb.at };
    if (m.status === "down") resolveIncidentAt = hb.at;
  } else {
    next = { ...base, status: "down", upSince: null };
    if (m.status !== "down") openIncidentAt = hb.at;
  }
  next.deadlineAt = deadlineOf(next);
  // statusChanged: the status differs from what the monitor really was (down after a missed deadline).
  return { next, statusChanged: next.status !== m.status, openIncidentAt, resolveIncidentAt };
}

/**
 * Pausing: no deadline; an open incident is resolved (without notification) at `now`. A pause that
 * comes after a deadline no runner has acted on yet gets the same result as if the runner had won
 * the race: the incident [deadline, now] (opened, then resolved by the pause).
 */
export function applyPause(
  m: MonitorState,
  now: number,
): { next: MonitorState; openIncidentAt: number | null; resolveIncidentAt: number | null } {
  const verdict = evaluateDeadline(m, now);
  const next: MonitorState = { ...m, status: "paused", upSince: null, deadlineAt: null };
  if (verdict.overdue) return { next, openIncidentAt: verdict.since, resolveIncidentAt: now };
  return { next, openIncidentAt: null, resolveIncidentAt: m.status === "down" ? now : null };
}

/** Resuming gives `unknown`; the deadline counts from the later of the last heartbeat and the resume. */
export function applyResume(m: MonitorState, now: number): MonitorState {
  const next: MonitorState = { ...m, status: "unknown", upSince: null, resumedAt: now };
  next.deadlineAt = deadlineOf(next);
  return next;
}

/** Interval, schedule (null clears it) or grace changed: the deadline moves with them. */
export function applySettings(
  m: MonitorState,
  s: { expectedIntervalMs?: number; gracePeriodMs?: number; schedule?: Schedule | null },
): MonitorState {
  const next: MonitorState = {
    ...m,
    expectedIntervalMs: s.expectedIntervalMs ?? m.expectedIntervalMs,
    gracePeriodMs: s.gracePeriodMs ?? m.gracePeriodMs,
  };
  if (s.schedule !== undefined) next.schedule = s.schedule;
  next.deadlineAt = deadlineOf(next);
  return next;
}

/** Milliseconds since the current up period began; 0 when not up. */
export function timeUp(m: Pick<MonitorState, "status" | "upSince">, now: number): number {
  return m.status === "up" && m.upSince !== null ? Math.max(0, now - m.upSince) : 0;
}

/** Whether other nodes' timers must learn of this change (a new or earlier deadline). */
export function needsWake(before: number | null, after: number | null): boolean {
  return after !== null && (before === null || after < before);
}

/** A slug from a name: lowercase ASCII letters, digits and dashes. */
export function slugify(name: string): string {
  const s = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 80)
    .replace(/-+$/, "");
  return s || "monitor";
}

export const SLUG_RE = /^[a-z0-9](?:[a-z0-9._-]{0,98}[a-z0-9])?$/;
