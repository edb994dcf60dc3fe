import type { JsonValue } from "@bufbuild/protobuf";
import type { PoolClient } from "pg";
import type { Queryable } from "../storage/db.js";
import type { MonitorRow } from "../uptime/store.js";
import type { AlertState, Evaluation, EvaluationState, ResolveCondition } from "./model.js";
import type { Operator } from "./model.js";

// The alert tables (migration 9005_alerts.sql) and their SQL. An alert's name and slug are its
// monitor's (joined on every read); its evaluation state is one jsonb value (EvaluationState).

export interface AlertRow {
  id: string;
  project_id: string;
  monitor_id: string;
  name: string;
  slug: string;
  monitor_status: string;
  monitor_resumed_at: Date | null;
  query: JsonValue;
  condition: { operator: Operator; value: number };
  window_ms: number;
  every_ms: number;
  for_ms: number;
  resolve: ResolveCondition | null;
  no_data: "ok" | "alerting" | "keep";
  min_samples: number;
  evaluation_offset_ms: number;
  state: EvaluationState;
  next_at: Date;
  created_at: Date;
  updated_at: Date;
}

/** The newest evaluations kept per alert. */
const MAX_EVALUATIONS = 1000;

const SELECT = `SELECT a.*, m.name, m.slug, m.status AS monitor_status, m.resumed_at AS monitor_resumed_at,
       to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
  FROM alerts a JOIN monitors m ON m.id = a.monitor_id`;

/** The alert count of a project ($1), for the per-project cap (shared/project-cap.ts). */
export const COUNT_SQL = "SELECT count(*)::int AS n FROM alerts WHERE project_id = $1";

export interface RuleColumns {
  query: JsonValue;
  condition: { operator: Operator; value: number };
  windowMs: number;
  everyMs: number;
  forMs: number;
  resolve: ResolveCondition | null;
  noData: string;
  minSamples: number;
}

export async function insertAlert(
  c: PoolClient,
  a: RuleColumns & {
    id: string;
    projectId: string;
    monitorId: string;
    offsetMs: number;
    state: EvaluationState;
    nextAt: Date;
    now: Date;
  },
): Promise<void> {
  await c.query("UPDATE monitors SET owned_by = 'alert' WHERE id = $1", [a.monitorId]);
  await c.query(
    `INSERT INTO alerts (id, project_id, monitor_id, query, condition, window_ms, every_ms, for_ms, resolve, no_data,
                         min_samples, evaluation_offset_ms, state, next_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)`,
    [
      a.id,
      a.projectId,
      a.monitorId,
      JSON.stringify(a.query),
      JSON.stringify(a.condition),
      a.windowMs,
      a.everyMs,
      a.forMs,
      a.resolve === null ? null : JSON.stringify(a.resolve),
      a.noData,
      a.minSamples,
      a.offsetMs,
      JSON.stringify(a.state),
      a.nextAt,
      a.now,
    ],
  );
}

export async function alertById(q: Queryable, projectId: string, id: string): Promise<AlertRow | undefined> {
  const r = await q.query<AlertRow>(`${SELECT} WHERE a.id = $1 AND a.project_id = $2`, [id, projectId]);
  return r.rows[0];
}

/** Newest first, after the cursor's (created_at, id). */
export async function listAlerts(
  q: Queryable,
  projectId: string,
  limit: number,
  after: { at: string; id: string } | undefined,
): Promise<(AlertRow & { cursor_at: string })[]> {
  const r = await q.query<AlertRow & { cursor_at: string }>(
    `${SELECT} WHERE a.project_id = $1 AND ($2::timestamptz IS NULL OR (a.created_at, a.id) < ($2::timestamptz, $3::text))
      ORDER BY a.created_at DESC, a.id DESC LIMIT $4`,
    [projectId, after?.at ?? null, after?.id ?? null, limit],
  );
  return r.rows;
}

/** Locks the alert's monitor, then the alert (the order evaluations take them in). */
export async function lockAlert(
  c: PoolClient,
  projectId: string,
  id: string,
): Promise<{ alert: AlertRow; monitor: MonitorRow } | undefined> {
  const m = await c.query<MonitorRow>(
    "SELECT m.* FROM monitors m JOIN alerts a ON a.monitor_id = m.id WHERE a.id = $1 AND a.project_id = $2 FOR UPDATE OF m",
    [id, projectId],
  );
  if (!m.rows[0]) return undefined;
  const a = await c.query<AlertRow>(`${SELECT} WHERE a.id = $1 FOR UPDATE OF a`, [id]);
  return a.rows[0] ? { alert: a.rows[0], monitor: m.rows[0] } : undefined;
}

/** Writes the rule's columns (and the next due time and state a changed rule starts from). */
export async function updateRule(
  c: PoolClient,
  id: string,
  rule: RuleColumns,
  offsetMs: number,
  state: EvaluationState,
  nextAt: Date,
  now: Date,
): Promise<void> {
  await c.query(
    `UPDATE alerts SET query = $2, condition = $3, window_ms = $4, every_ms = $5, for_ms = $6, resolve = $7, no_data = $8,
            min_samples = $9, evaluation_offset_ms = $10, state = $11, next_at = $12, updated_at = $13 WHERE id = $1`,
    [
      id,
      JSON.stringify(rule.query),
      JSON.stringify(rule.condition),
      rule.windowMs,
      rule.everyMs,
      rule.forMs,
      rule.resolve === null ? null : JSON.stringify(rule.resolve),
      rule.noData,
      rule.minSamples,
      offsetMs,
      JSON.stringify(state),
      nextAt,
      now,
    ],
  );
}

/** Deletes the alert's monitor (and with it the alert, its evaluations and incidents). False: none such. */
export async function deleteAlert(c: PoolClient, projectId: string, id: string): Promise<boolean> {
  const r = await c.query(
    "DELETE FROM monitors WHERE id = (SELECT monitor_id FROM alerts WHERE id = $1 AND project_id = $2)",
    [id, projectId],
  );
  return (r.rowCount ?? 0) > 0;
}

/**
 * Claims the evaluation (alert, at) and stores it; false when it is stored already (another node or
 * an earlier attempt made it). Keeps the newest MAX_EVALUATIONS of the alert.
 */
export async function recordEvaluation(
  c: PoolClient,
  alertId: string,
  projectId: string,
  e: Evaluation,
): Promise<boolean> {
  const r = await c.query(
    "INSERT INTO alert_evaluations (alert_id, project_id, at, value, state) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
    [alertId, projectId, new Date(e.at), e.value, e.state],
  );
  if (!r.rowCount) return false;
  await c.query(
    `DELETE FROM alert_evaluations WHERE alert_id = $1 AND at < (
       SELECT at FROM alert_evaluations WHERE alert_id = $1 ORDER BY at DESC OFFSET $2 LIMIT 1)`,
    [alertId, MAX_EVALUATIONS - 1],
  );
  return true;
}

export async function saveState(
  c: PoolClient,
  id: string,
  state: EvaluationState,
  nextAt: Date,
  now: Date,
): Promise<void> {
  await c.query("UPDATE alerts SET state = $2, next_at = $3, updated_at = $4 WHERE id = $1", [
    id,
    JSON.stringify(state),
    nextAt,
    now,
  ]);
}

/** The owned monitor's status as the alert's state gives it (up_since: when it came up). */
export async function setMonitorStatus(
  c: PoolClient,
  monitor: MonitorRow,
  status: MonitorRow["status"],
  at: Date,
  now: Date,
): Promise<MonitorRow> {
  if (monitor.status === status) return monitor;
  const upSince = status === "up" ? at : null;
  const r = await c.query<MonitorRow>(
    "UPDATE monitors SET status = $2, up_since = $3, updated_at = $4 WHERE id = $1 RETURNING *",
    [monitor.id, status, upSince, now],
  );
  return r.rows[0];
}

export async function listEvaluations(
  q: Queryable,
  alertId: string,
  limit: number,
  before: string | undefined,
): Promise<{ at: Date; value: number | null; state: AlertState }[]> {
  const r = await q.query<{ at: Date; value: number | null; state: AlertState }>(
    `SELECT at, value, state FROM alert_evaluations WHERE alert_id = $1 AND ($2::timestamptz IS NULL OR at < $2)
      ORDER BY at DESC LIMIT $3`,
    [alertId, before ?? null, limit],
  );
  return r.rows;
}

/** Alerts due before `until` (id, project, due time), earliest first. */
export async function dueAlerts(
  q: Queryable,
  until: Date,
  limit: number,
): Promise<{ id: string; project_id: string; next_at: Date }[]> {
  const r = await q.query<{ id: string; project_id: string; next_at: Date }>(
    "SELECT id, project_id, next_at FROM alerts WHERE next_at <= $1 ORDER BY next_at LIMIT $2",
    [until, limit],
  );
  return r.rows;
}
