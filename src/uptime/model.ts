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
  /** A run that started and has not ended this long after its start is `timed_out` (a failure); null: no limit. */
  maxRuntimeMs?: number | null;
  /** The start of the oldest run still running; absent or null: none. */
  runningSince?: number | null;
  /** Failed runs tolerated in a row: the monitor goes down at the (N+1)-th (default 0). */
  failureTolerance?: number;
  /** Failed runs since the last success. */
  consecutiveFailures?: number;
  /** A maintenance window naming it is in progress: no deadline, heartbeats change nothing (as paused). */
  inMaintenance?: boolean;
  /** The end of its last maintenance window: the deadline counts from it, as from a resume. */
  maintenanceEndedAt?: number | null;
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
 * In maintenance: none; after it, counted from no earlier than the window's end (maintenanceEndedAt).
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
    | "inMaintenance"
    | "maintenanceEndedAt"
  >,
): number | null {
  if (m.lastHeartbeatAt === null || m.inMaintenance) return null;
  const resumed = m.status === "unknown" && m.resumedAt !== null ? m.resumedAt : null;
  if (m.status !== "up" && resumed === null) return null;
  // After a maintenance window the deadline counts from its end, as from a resume.
  const floor = Math.max(resumed ?? -Infinity, m.maintenanceEndedAt ?? -Infinity);
  if (!m.schedule) return Math.max(m.lastHeartbeatAt, floor) + m.expectedIntervalMs + m.gracePeriodMs;
  const lastRun = m.lastSuccessStartAt ?? m.lastHeartbeatAt;
  const next = nextRunAfter(m.schedule, Math.max(lastRun, floor));
  return next === null ? null : next + m.gracePeriodMs;
}

/**
 * When a run that is still running times out: the oldest running run's start + maxRuntimeMs, or null
 * (no limit, nothing running, or paused: a paused monitor is not watched).
 */
function runTimeoutOf(
  m: Pick<MonitorState, "status" | "maxRuntimeMs" | "runningSince" | "inMaintenance">,
): number | null {
  if (unwatched(m) || m.maxRuntimeMs == null || m.runningSince == null) return null;
  return m.runningSince + m.maxRuntimeMs;
}

/** Paused or in maintenance: no deadline or timeout applies, a heartbeat or failure changes no status. */
function unwatched(m: Pick<MonitorState, "status" | "inMaintenance">): boolean {
  return m.status === "paused" || m.inMaintenance === true;
}

/**
 * The monitor's next due time: the earlier of its deadline and its running run's timeout. This is
 * `deadlineAt` (monitors.deadline_at): the time both runners wake for, so a timeout is found like a
 * deadline, with no second rule.
 */
export function dueAt(m: MonitorState): number | null {
  const d = deadlineOf(m);
  const t = runTimeoutOf(m);
  if (d === null) return t;
  return t === null ? d : Math.min(d, t);
}

export type DeadlineVerdict =
  /** Missed its deadline: goes down with an incident that started at `since` (the deadline itself). */
  | { overdue: true; since: number }
  /** A running run timed out at `runTimeout` (start + maxRuntimeMs): apply applyRunTimeouts, then decide again. */
  | { overdue: false; runTimeout: number }
  /** Not (yet) due: check again at `nextCheckAt`, or never when null (nothing applies). */
  | { overdue: false; runTimeout: null; nextCheckAt: number | null };

/** THE decision: is this monitor overdue at `now` (since when), or has a run timed out, or when to look again. */
export function evaluateDeadline(m: MonitorState, now: number): DeadlineVerdict {
  const deadline = deadlineOf(m);
  const timeout = runTimeoutOf(m);
  if (deadline !== null && deadline <= now && (timeout === null || deadline <= timeout))
    return { overdue: true, since: deadline };
  if (timeout !== null && timeout <= now) return { overdue: false, runTimeout: timeout };
  return { overdue: false, runTimeout: null, nextCheckAt: dueAt(m) };
}

/** The state after a missed deadline (the caller opens the incident at `since`). */
export function markDown(m: MonitorState): MonitorState {
  const next: MonitorState = { ...m, status: "down", upSince: null };
  next.deadlineAt = dueAt(next);
  return next;
}

export interface HeartbeatInput {
  at: number;
  status: HeartbeatStatus;
  expectedIntervalMs?: number;
  gracePeriodMs?: number;
  /** A schedule given with the heartbeat (null clears it); an interval given clears the schedule. */
  schedule?: Schedule | null;
  /** The start of the run this heartbeat ends (a success counts the schedule from it); absent: none. */
  startedAt?: number | null;
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
 * down at once. While paused or in maintenance a heartbeat is recorded and changes no status; no
 * deadline applies (an incident already open stays open).
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
    ...applySettings(m, hb),
    lastHeartbeatAt: Math.max(hb.at, m.lastHeartbeatAt ?? hb.at),
    firstHeartbeatAt: m.firstHeartbeatAt ?? hb.at,
  };
  let next: MonitorState;
  if (unwatched(m)) {
    next = base;
    if (hb.status === "up") next.lastSuccessStartAt = hb.startedAt ?? null;
  } else if (hb.status === "up") {
    next = {
      ...base,
      status: "up",
      upSince: m.status === "up" ? m.upSince : hb.at,
      lastSuccessStartAt: hb.startedAt ?? null,
      consecutiveFailures: 0,
    };
    if (m.status === "down") resolveIncidentAt = hb.at;
  } else {
    const f = applyFailure(base, hb.at);
    next = f.next;
    if (f.openIncidentAt !== null) openIncidentAt = f.openIncidentAt;
  }
  next.deadlineAt = dueAt(next);
  // statusChanged: the status differs from what the monitor really was (down after a missed deadline).
  return { next, statusChanged: next.status !== m.status, openIncidentAt, resolveIncidentAt };
}

/**
 * A failed run (a `down` heartbeat, a `fail` or non-zero `exit` signal, a run timed out) at `at`:
 * one more consecutive failure; the monitor goes down (incident from `at`) once they pass its
 * failureTolerance, else its status stays. Paused: counted, nothing else.
 */
export function applyFailure(m: MonitorState, at: number): { next: MonitorState; openIncidentAt: number | null } {
  const failures = (m.consecutiveFailures ?? 0) + 1;
  const counted: MonitorState = { ...m, consecutiveFailures: failures };
  if (unwatched(m) || failures <= (m.failureTolerance ?? 0)) {
    counted.deadlineAt = dueAt(counted);
    return { next: counted, openIncidentAt: null };
  }
  const next: MonitorState = { ...counted, status: "down", upSince: null };
  next.deadlineAt = dueAt(next);
  return { next, openIncidentAt: m.status === "down" ? null : at };
}

/** A run still running: its record id, the client's runId (null: none given) and its start. */
export interface OpenRun {
  id: string;
  runId: string | null;
  startedAt: number;
}

/**
 * The running run an end signal closes: the one with the same runId; without a runId, the latest
 * started of those that have none (a job run by cron ends the run it started last). -1: none (the
 * end is a run of its own, without a start).
 */
export function pairRun(open: readonly OpenRun[], runId: string | null): number {
  let best = -1;
  open.forEach((r, i) => {
    if (r.runId !== runId) return;
    if (best === -1 || r.startedAt >= open[best].startedAt) best = i;
  });
  return best;
}

/** The start of the oldest run in the list, or null when none is running. */
export function runningSinceOf(open: readonly OpenRun[]): number | null {
  return open.length ? Math.min(...open.map((r) => r.startedAt)) : null;
}

/** A start signal: a new running run; the status and the deadline's base do not move (only the timeout). */
export function applyRunStart(prev: MonitorState, open: readonly OpenRun[], run: OpenRun): MonitorState {
  const next: MonitorState = { ...prev, runningSince: runningSinceOf([...open, run]) };
  next.deadlineAt = dueAt(next);
  return next;
}

/** A run timed out: a failure at `start + maxRuntimeMs`, in start order. */
export interface RunTimeout {
  run: OpenRun;
  at: number;
  /** This timeout took the monitor down (its incident starts at `at`). */
  tookDown: boolean;
}

/**
 * Every running run whose start + maxRuntimeMs is at or before `now` times out, oldest first, each a
 * failure at its own timeout (applyFailure). Returns the state after them, the runs still running and
 * the timeouts. A monitor without maxRuntimeMs, or paused, times nothing out.
 */
export function applyRunTimeouts(
  prev: MonitorState,
  open: readonly OpenRun[],
  now: number,
): { next: MonitorState; open: OpenRun[]; timeouts: RunTimeout[] } {
  const max = prev.maxRuntimeMs;
  if (max == null || unwatched(prev)) return { next: prev, open: [...open], timeouts: [] };
  const expired = open.filter((r) => r.startedAt + max <= now).sort((a, b) => a.startedAt - b.startedAt);
  if (!expired.length) return { next: prev, open: [...open], timeouts: [] };
  const left = open.filter((r) => !expired.includes(r));
  let m: MonitorState = { ...prev, runningSince: runningSinceOf(left) };
  const timeouts: RunTimeout[] = [];
  for (const run of expired) {
    const f = applyFailure(m, run.startedAt + max);
    m = f.next;
    timeouts.push({ run, at: run.startedAt + max, tookDown: f.openIncidentAt !== null });
  }
  m.deadlineAt = dueAt(m);
  return { next: m, open: left, timeouts };
}

/** A run's outcome from its end signal: `exit/0` and the plain heartbeat succeed, `fail` and other codes fail. */
export function runOutcome(signal: { kind: "success" | "fail" } | { kind: "exit"; code: number }): "up" | "down" {
  if (signal.kind === "exit") return signal.code === 0 ? "up" : "down";
  return signal.kind === "success" ? "up" : "down";
}

/** The description of an incident a run opened: it names the run and its exit code (decisions.md). */
export function runIncidentDescription(
  run: { id: string; runId: string | null },
  how: { kind: "failed"; exitCode: number | null } | { kind: "timed_out"; maxRuntimeMs: number },
): string {
  const name = run.runId !== null ? `Run "${run.runId}" (${run.id})` : `Run ${run.id}`;
  if (how.kind === "timed_out") return `${name} timed out: still running ${how.maxRuntimeMs} ms after its start.`;
  return how.exitCode === null ? `${name} failed.` : `${name} failed with exit code ${how.exitCode}.`;
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
  next.deadlineAt = dueAt(next);
  return next;
}

/**
 * Interval, schedule, grace, maxRuntimeMs or failureTolerance changed: the due time moves with them.
 * A monitor has a schedule or an interval (decisions.md): a schedule given clears the interval's use,
 * an interval given clears the schedule (null clears it too).
 */
export function applySettings(
  m: MonitorState,
  s: {
    expectedIntervalMs?: number;
    gracePeriodMs?: number;
    schedule?: Schedule | null;
    maxRuntimeMs?: number | null;
    failureTolerance?: number;
  },
): MonitorState {
  const next: MonitorState = {
    ...m,
    expectedIntervalMs: s.expectedIntervalMs ?? m.expectedIntervalMs,
    gracePeriodMs: s.gracePeriodMs ?? m.gracePeriodMs,
  };
  if (s.schedule !== undefined) next.schedule = s.schedule;
  else if (s.expectedIntervalMs !== undefined) next.schedule = null;
  if (s.maxRuntimeMs !== undefined) next.maxRuntimeMs = s.maxRuntimeMs;
  if (s.failureTolerance !== undefined) next.failureTolerance = s.failureTolerance;
  next.deadlineAt = dueAt(next);
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

// Manual incidents (decisions.md "Status communication"; docs/uptime.md "Manual incidents").

/** A manual incident's impact; a monitor incident is `major` (a monitor it names is down). */
export const INCIDENT_IMPACTS = ["minor", "major", "critical"] as const;
export type IncidentImpact = (typeof INCIDENT_IMPACTS)[number];

/** A manual incident's workflow, in order; `resolved` ends it. */
export const INCIDENT_STAGES = ["investigating", "identified", "monitoring", "resolved"] as const;
export type IncidentStage = (typeof INCIDENT_STAGES)[number];

/**
 * An update's effect on a manual incident at `current`: the stage it moves to. Any move between the
 * open stages is allowed (a fix that did not hold goes back to identified or investigating), and to
 * `resolved` from any of them; a resolved incident stays resolved (`reopen`: refused, open a new one),
 * though an update without a status (or with `resolved`) still adds a note to it.
 */
export function nextStage(current: IncidentStage, requested: IncidentStage | undefined): IncidentStage | "reopen" {
  if (requested === undefined) return current;
  if (current === "resolved" && requested !== "resolved") return "reopen";
  return requested;
}
