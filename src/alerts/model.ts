// The alert state machine as pure functions (decisions.md: Alerts; docs/alerts.md "State machine").
// Live evaluation (each due time of each alert) and preview (a fold over stored history) decide through
// the one function `evaluate`, so a preview shows the incidents live evaluation would have opened. No
// I/O, no clock: times are epoch milliseconds handed in by the caller.
//
// Inputs of one evaluation at time t (an evaluation with data compares the value; no data follows the
// rule's `noData` policy):
//   H  the condition holds (or no data under `noData: alerting`)
//   N  the condition does not hold (or no data under `noData: ok`)
//   K  no data under `noData: keep`: changes nothing; the state reads `no_data`
//   R  (firing, with `resolve`) the resolve condition holds (no data: holds under `ok`, not under `alerting`)
//
//   phase     input                                     next       effect
//   ok        H, forMs 0                                firing     open incident, startedAt = t
//   ok        H, forMs > 0                              pending    pendingSince = t
//   ok        N                                         ok         -
//   pending   H, t - pendingSince >= forMs              firing     open incident, startedAt = pendingSince
//   pending   H, t - pendingSince < forMs               pending    -
//   pending   N                                         ok         pendingSince cleared (no incident)
//   firing    no resolve: H                             firing     -
//   firing    no resolve: N                             ok         resolve incident, endedAt = t
//   firing    R, t - resolvingSince >= resolve.forMs    ok         resolve incident, endedAt = t
//   firing    R, t - resolvingSince < resolve.forMs     firing     resolvingSince = t if it was null
//   firing    not R                                     firing     resolvingSince cleared
//   any       K                                         no_data    - (pendingSince, resolvingSince and an
//                                                                   open incident are kept; the phase goes on)
//   paused    (any)                                     paused     - (no evaluation)
//   any       t <= lastEvaluatedAt                      unchanged  - (a repeat: no evaluation)
//   any       pause at t                                paused     resolve an open incident, endedAt = t
//   paused    resume                                    ok         -
// The evaluation that resolves ends in `ok`: a new run can begin at the next evaluation, never at the
// resolving one, so incidents never touch or overlap.

import { assertNever } from "../shared/never.js";

export type AlertState = "ok" | "pending" | "firing" | "no_data" | "paused";

/** Comparison operators of `condition` and `resolve` (a table: the request schema takes its enum from it). */
export const OPERATORS = ["gt", "gte", "lt", "lte"] as const;
export type Operator = (typeof OPERATORS)[number];

/** What an evaluation without data means (`ok` is the default). */
export const NO_DATA_POLICIES = ["ok", "alerting", "keep"] as const;
type NoDataPolicy = (typeof NO_DATA_POLICIES)[number];

interface Condition {
  operator: Operator;
  value: number;
}

export interface ResolveCondition extends Condition {
  forMs: number;
}

/** The fields of an alert rule that the decisions read. */
export interface DecisionRule {
  condition: Condition;
  forMs: number;
  resolve?: ResolveCondition | null;
  noData: NoDataPolicy;
  minSamples: number;
}

/**
 * What the window `[t - windowMs, t]` answered: `value` (null when the query has none) and `samples`,
 * the observations behind it (metric points, matching events, or the ratio's denominator events).
 */
export interface Sample {
  value: number | null;
  samples: number;
}

/**
 * The state carried from one evaluation to the next (a database row: every field is JSON as it is).
 * The phase behind a `no_data` state is read from the fields: firing while `firingSince` is set,
 * pending while only `pendingSince` is, ok otherwise.
 */
export interface EvaluationState {
  state: AlertState;
  /** The last evaluation's value (null: no data, or never evaluated). */
  value: number | null;
  lastEvaluatedAt: number | null;
  /** The first evaluation of the current run of evaluations at which the condition held; the open incident's start. */
  pendingSince: number | null;
  /** The evaluation that fired (opened the incident); null when not firing. */
  firingSince: number | null;
  /** While firing with `resolve`: the first evaluation of the current run at which `resolve` held. */
  resolvingSince: number | null;
  /** Fired while its monitor was in a maintenance window: the incident opens after it (`inMaintenance()`). */
  incidentDeferred?: boolean;
}

/** One evaluation as recorded and listed (`GET .../alerts/:alertId/evaluations`, preview). */
export interface Evaluation {
  at: number;
  value: number | null;
  state: AlertState;
}

export interface EvaluationOutcome {
  next: EvaluationState;
  /** The evaluation to record; null when none was made (paused, or a time not after `lastEvaluatedAt`). */
  evaluation: Evaluation | null;
  /** Open an incident (the alert just fired). */
  openIncident: { startedAt: number } | null;
  /** Resolve the open incident (the alert just resolved). */
  resolveIncident: { endedAt: number } | null;
}

/** An alert before its first evaluation: `ok` with `lastEvaluatedAt` null. */
export const INITIAL_STATE: EvaluationState = {
  state: "ok",
  value: null,
  lastEvaluatedAt: null,
  pendingSince: null,
  firingSince: null,
  resolvingSince: null,
};

function compare(c: Condition, value: number): boolean {
  switch (c.operator) {
    case "gt":
      return value > c.value;
    case "gte":
      return value >= c.value;
    case "lt":
      return value < c.value;
    case "lte":
      return value <= c.value;
    default:
      return assertNever(c.operator, "operator");
  }
}

/** The window's value when it has data (a finite value from at least max(1, minSamples) observations), else null. */
function dataValue(rule: Pick<DecisionRule, "minSamples">, sample: Sample): number | null {
  const enough = sample.samples >= Math.max(1, rule.minSamples);
  return enough && sample.value !== null && Number.isFinite(sample.value) ? sample.value : null;
}

type Input = { kind: "keep" } | { kind: "evaluated"; holds: boolean; resolves: boolean };

function inputOf(rule: DecisionRule, value: number | null): Input {
  if (value !== null) {
    const holds = compare(rule.condition, value);
    // Without `resolve` a firing alert resolves where the condition does not hold.
    const resolves = rule.resolve ? compare(rule.resolve, value) : !holds;
    return { kind: "evaluated", holds, resolves };
  }
  switch (rule.noData) {
    case "alerting":
      return { kind: "evaluated", holds: true, resolves: false };
    case "ok":
      return { kind: "evaluated", holds: false, resolves: true };
    case "keep":
      return { kind: "keep" };
    default:
      return assertNever(rule.noData, "noData policy");
  }
}

/**
 * THE decision: the state after an evaluation at `at` of the window's `sample`, and the incident it
 * opens or resolves (the table at the top of this file).
 */
export function evaluate(rule: DecisionRule, prev: EvaluationState, sample: Sample, at: number): EvaluationOutcome {
  if (prev.state === "paused" || (prev.lastEvaluatedAt !== null && at <= prev.lastEvaluatedAt))
    return { next: prev, evaluation: null, openIncident: null, resolveIncident: null };
  const value = dataValue(rule, sample);
  const input = inputOf(rule, value);
  let next: EvaluationState = { ...prev, value, lastEvaluatedAt: at };
  let openIncident: EvaluationOutcome["openIncident"] = null;
  let resolveIncident: EvaluationOutcome["resolveIncident"] = null;
  if (input.kind === "keep") {
    next.state = "no_data";
  } else if (prev.firingSince !== null) {
    const resolvingSince = input.resolves ? (prev.resolvingSince ?? at) : null;
    const resolveForMs = rule.resolve?.forMs ?? 0;
    if (resolvingSince !== null && at - resolvingSince >= resolveForMs) {
      next = { ...next, state: "ok", pendingSince: null, firingSince: null, resolvingSince: null };
      resolveIncident = { endedAt: at };
    } else {
      next = { ...next, state: "firing", resolvingSince };
    }
  } else if (input.holds) {
    const pendingSince = prev.pendingSince ?? at;
    if (at - pendingSince >= rule.forMs) {
      next = { ...next, state: "firing", pendingSince, firingSince: at, resolvingSince: null };
      openIncident = { startedAt: pendingSince };
    } else {
      next = { ...next, state: "pending", pendingSince };
    }
  } else {
    next = { ...next, state: "ok", pendingSince: null };
  }
  return { next, evaluation: { at, value, state: next.state }, openIncident, resolveIncident };
}

/**
 * A maintenance window naming the alert's monitor (docs/uptime.md "Maintenance windows"): no incident
 * opens in it; a firing there is remembered (`incidentDeferred`), and the first evaluation after the
 * window that still finds the alert firing opens the incident, started at the window's end (the
 * time after a window counts as after a resume, as for a heartbeat monitor's deadline). Resolving
 * first drops it: nothing was opened, so nothing resolves.
 */
export function inMaintenance(
  out: EvaluationOutcome,
  monitor: { inMaintenance: boolean; maintenanceEndedAt: number | null },
): EvaluationOutcome {
  if (monitor.inMaintenance)
    return out.openIncident ? { ...out, openIncident: null, next: { ...out.next, incidentDeferred: true } } : out;
  if (!out.next.incidentDeferred) return out;
  const next = { ...out.next, incidentDeferred: false };
  if (out.next.firingSince === null) return { ...out, next, resolveIncident: null };
  if (!out.evaluation) return out; // no evaluation made (paused, or not after the last): later
  const startedAt = Math.max(out.next.firingSince, monitor.maintenanceEndedAt ?? out.evaluation.at);
  return { ...out, next, openIncident: { startedAt } };
}

/** The monitor an alert owns: `down` while firing (also when a `keep` evaluation reads no_data), `unknown` before the first evaluation. */
export function monitorStatusOf(s: EvaluationState): "unknown" | "up" | "down" | "paused" {
  if (s.state === "paused") return "paused";
  if (s.firingSince !== null) return "down";
  return s.lastEvaluatedAt === null ? "unknown" : "up";
}

/**
 * Pausing: no evaluation until resumed; an open incident is resolved at `at` (as pausing a monitor
 * does: without a notification), and the runs in progress are dropped. Idempotent.
 */
export function pause(
  prev: EvaluationState,
  at: number,
): { next: EvaluationState; resolveIncident: { endedAt: number } | null } {
  if (prev.state === "paused") return { next: prev, resolveIncident: null };
  const next: EvaluationState = {
    ...prev,
    state: "paused",
    pendingSince: null,
    firingSince: null,
    resolvingSince: null,
  };
  return { next, resolveIncident: prev.firingSince !== null ? { endedAt: at } : null };
}

/** Resuming: `ok`, and the next evaluation decides as after any `ok` one. Idempotent. */
export function resume(prev: EvaluationState): EvaluationState {
  return prev.state === "paused" ? { ...prev, state: "ok" } : prev;
}

/** The first evaluation time `offsetMs + k·everyMs` (k an integer) at or after `t`. */
export function evaluationAtOrAfter(everyMs: number, offsetMs: number, t: number): number {
  checkCadence(everyMs, offsetMs);
  return offsetMs + Math.ceil((t - offsetMs) / everyMs) * everyMs;
}

/** More evaluations than one preview may make: a larger window is a 400. */
export const MAX_PREVIEW_EVALUATIONS = 10_000;

/** How many evaluation times fall in `[start, end]` (both included). */
export function evaluationCount(everyMs: number, offsetMs: number, start: number, end: number): number {
  const first = evaluationAtOrAfter(everyMs, offsetMs, start);
  return first > end ? 0 : Math.floor((end - first) / everyMs) + 1;
}

/**
 * The evaluation times `offsetMs + k·everyMs` since the Unix epoch in `[start, end]`, oldest first, or
 * `{tooMany}` (their count) when there are more than `limit`.
 */
export function evaluationTimes(
  everyMs: number,
  offsetMs: number,
  start: number,
  end: number,
  limit = MAX_PREVIEW_EVALUATIONS,
): { times: number[] } | { tooMany: number } {
  const count = evaluationCount(everyMs, offsetMs, start, end);
  if (count > limit) return { tooMany: count };
  const first = evaluationAtOrAfter(everyMs, offsetMs, start);
  return { times: Array.from({ length: count }, (_, k) => first + k * everyMs) };
}

function checkCadence(everyMs: number, offsetMs: number): void {
  if (!Number.isSafeInteger(everyMs) || everyMs <= 0) throw new RangeError(`everyMs must be a positive integer`);
  if (!Number.isSafeInteger(offsetMs) || offsetMs < 0 || offsetMs >= everyMs)
    throw new RangeError(`offsetMs must be an integer in 0..everyMs-1`);
}

/**
 * An alert's `evaluationOffsetMs`: a stable hash of its id (FNV-1a, 64 bits, over its UTF-8 bytes)
 * into 0..everyMs-1, so that the alerts of one cadence spread over it.
 */
export function offsetFor(alertId: string, everyMs: number): number {
  checkCadence(everyMs, 0);
  let h = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(alertId)) h = ((h ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return Number(h % BigInt(everyMs));
}

export interface Incident {
  startedAt: number;
  endedAt: number | null;
}

export interface Preview {
  evaluations: Evaluation[];
  incidents: Incident[];
}

/**
 * Preview: `evaluate` folded over `times` (oldest first) from `from` (an alert before its first
 * evaluation unless given), with the window's sample at each time from `sampleAt`. Incidents oldest
 * first, `endedAt` null for one still open at the end. Also what live evaluation records, one call at a time.
 */
export function preview(
  rule: DecisionRule,
  sampleAt: (at: number) => Sample,
  times: readonly number[],
  from: EvaluationState = INITIAL_STATE,
): Preview & { state: EvaluationState } {
  const evaluations: Evaluation[] = [];
  const incidents: Incident[] = [];
  let state = from;
  for (const at of times) {
    const out = evaluate(rule, state, sampleAt(at), at);
    if (out.evaluation) evaluations.push(out.evaluation);
    if (out.resolveIncident) {
      const open = incidents.at(-1);
      if (open && open.endedAt === null) open.endedAt = out.resolveIncident.endedAt;
      // An incident opened before `from` (a fold that starts mid-way) ends here: its start is in the state.
      else incidents.push({ startedAt: state.pendingSince ?? at, endedAt: out.resolveIncident.endedAt });
    }
    state = out.next;
    if (out.openIncident) incidents.push({ startedAt: out.openIncident.startedAt, endedAt: null });
  }
  return { evaluations, incidents, state };
}

/**
 * The alert's state as its monitor's pause and resume leave it (pausing and resuming happen on the
 * monitor: decisions.md "Pausing the monitor pauses the alert"). `resumedAt` after the last evaluation
 * means a pause and a resume came in between: the runs in progress were dropped by that pause.
 */
export function withMonitor(
  s: EvaluationState,
  monitor: { status: string; resumedAt: number | null },
  at: number,
): EvaluationState {
  if (monitor.status === "paused") return pause(s, at).next;
  if (s.state === "paused") return resume(s);
  if (monitor.resumedAt !== null && (s.lastEvaluatedAt === null || monitor.resumedAt > s.lastEvaluatedAt))
    return resume(pause(s, at).next);
  return s;
}
