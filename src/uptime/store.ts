import type { Queryable } from "../storage/db.js";
import { timeUp, type MonitorState, type MonitorStatus } from "./model.js";

// Rows of the uptime tables and their API shapes.

export interface MonitorRow {
  id: string;
  project_id: string;
  slug: string;
  name: string;
  type: string;
  status: MonitorStatus;
  expected_interval_ms: number;
  grace_period_ms: number;
  metadata: Record<string, unknown>;
  tags: Record<string, unknown>;
  last_heartbeat_at: Date | null;
  first_heartbeat_at: Date | null;
  deadline_at: Date | null;
  up_since: Date | null;
  resumed_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** Bumped by a trigger on every UPDATE (migration 4002): the heartbeat fast path's compare-and-set. */
  version: number;
}

export interface IncidentRow {
  id: string;
  monitor_id: string;
  project_id: string;
  started_at: Date;
  ended_at: Date | null;
  duration_ms: number | null;
  title: string | null;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface HeartbeatRow {
  id: string;
  at: Date;
  status: string;
  latency_ms: number | null;
  metadata: Record<string, unknown>;
}

const ms = (d: Date | null) => (d ? d.getTime() : null);
const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

export function stateOf(r: MonitorRow): MonitorState {
  return {
    status: r.status,
    expectedIntervalMs: r.expected_interval_ms,
    gracePeriodMs: r.grace_period_ms,
    lastHeartbeatAt: ms(r.last_heartbeat_at),
    firstHeartbeatAt: ms(r.first_heartbeat_at),
    resumedAt: ms(r.resumed_at),
    upSince: ms(r.up_since),
    deadlineAt: ms(r.deadline_at),
  };
}

/** The row with a new state applied (for answering without a re-read). */
export function withState(r: MonitorRow, s: MonitorState, now: Date): MonitorRow {
  const d = (v: number | null) => (v === null ? null : new Date(v));
  return {
    ...r,
    status: s.status,
    expected_interval_ms: s.expectedIntervalMs,
    grace_period_ms: s.gracePeriodMs,
    last_heartbeat_at: d(s.lastHeartbeatAt),
    first_heartbeat_at: d(s.firstHeartbeatAt),
    resumed_at: d(s.resumedAt),
    up_since: d(s.upSince),
    deadline_at: d(s.deadlineAt),
    updated_at: now,
  };
}

/** Column values of a state, in the order of STATE_COLUMNS. */
export function stateValues(s: MonitorState): unknown[] {
  const d = (v: number | null) => (v === null ? null : new Date(v));
  return [s.status, s.expectedIntervalMs, s.gracePeriodMs, d(s.lastHeartbeatAt), d(s.firstHeartbeatAt), d(s.resumedAt), d(s.upSince), d(s.deadlineAt)];
}

/** Compare-and-set of a monitor's state: applies only if status and deadline are still as read. */
export async function casState(c: Queryable, r: MonitorRow, next: MonitorState, now: Date): Promise<MonitorRow | undefined> {
  const res = await c.query<MonitorRow>(
    `UPDATE monitors SET status = $3, expected_interval_ms = $4, grace_period_ms = $5, last_heartbeat_at = $6, first_heartbeat_at = $7,
            resumed_at = $8, up_since = $9, deadline_at = $10, updated_at = $11
      WHERE id = $1 AND status = $2 AND deadline_at IS NOT DISTINCT FROM $12 RETURNING *`,
    [r.id, r.status, ...stateValues(next), now, r.deadline_at],
  );
  return res.rows[0];
}

export function toMonitor(r: MonitorRow, now: Date) {
  return {
    id: r.id,
    projectId: r.project_id,
    name: r.name,
    slug: r.slug,
    type: r.type,
    status: r.status,
    expectedIntervalMs: r.expected_interval_ms,
    gracePeriodMs: r.grace_period_ms,
    timeUp: timeUp(stateOf(r), now.getTime()),
    metadata: r.metadata,
    tags: r.tags,
    lastHeartbeatAt: iso(r.last_heartbeat_at),
    deadlineAt: iso(r.deadline_at),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export function toIncident(r: IncidentRow) {
  return {
    id: r.id,
    monitorId: r.monitor_id,
    status: r.ended_at ? "resolved" : "open",
    startedAt: r.started_at.toISOString(),
    endedAt: iso(r.ended_at),
    durationMs: r.duration_ms ?? undefined,
    title: r.title ?? undefined,
    description: r.description ?? undefined,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export function toHeartbeat(r: HeartbeatRow) {
  return { id: r.id, at: r.at.toISOString(), metadata: r.metadata, status: r.status, latencyMs: r.latency_ms ?? undefined };
}

export async function monitorById(c: Queryable, projectId: string, id: string, lock = false): Promise<MonitorRow | undefined> {
  const r = await c.query<MonitorRow>(`SELECT * FROM monitors WHERE id = $1 AND project_id = $2${lock ? " FOR UPDATE" : ""}`, [id, projectId]);
  return r.rows[0];
}
