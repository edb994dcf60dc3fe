import type { JsonObject } from "@bufbuild/protobuf";
import type { Queryable } from "../storage/db.js";
import type { IncidentImpact, IncidentStage, MonitorState, MonitorStatus } from "./model.js";
import type { Schedule } from "./schedule.js";

// Rows of the uptime tables and the SQL of the service's reads and small writes (messages.ts maps
// rows to the API's shapes; monitors.ts, heartbeat-sql.ts, incidents.ts and detect.ts hold the SQL of
// the state changes, each next to the decision it applies).

export interface MonitorRow {
  id: string;
  project_id: string;
  slug: string;
  name: string;
  type: string;
  status: MonitorStatus;
  expected_interval_ms: number;
  grace_period_ms: number;
  metadata: JsonObject;
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
  /** A scheduled monitor: both set (migration 9004); else both null. */
  schedule_cron: string | null;
  schedule_timezone: string | null;
  max_runtime_ms: number | null;
  failure_tolerance: number;
  consecutive_failures: number;
  last_success_start_at: Date | null;
  running_since: Date | null;
  /** `alert`: the monitor of an alert (src/alerts/), whose status its evaluations set; heartbeats to it are a 409. */
  owned_by: "alert" | null;
  /** An active maintenance window names it (migration 9012; maintenance.ts keeps it). */
  in_maintenance: boolean;
  /** The end of its last maintenance window (the deadline counts from it). */
  maintenance_ended_at: Date | null;
}

/** A stored run (migration 9004). */
export interface RunRow {
  id: string;
  monitor_id: string;
  run_id: string | null;
  started_at: Date | null;
  ended_at: Date | null;
  outcome: "running" | "succeeded" | "failed" | "timed_out";
  exit_code: number | null;
  output: string | null;
  created_at: Date;
}

export interface IncidentRow {
  id: string;
  /** The monitor that opened it; null for a manual incident (its monitors: incident_monitors, migration 9011). */
  monitor_id: string | null;
  project_id: string;
  started_at: Date;
  ended_at: Date | null;
  duration_ms: number | null;
  title: string | null;
  description: string | null;
  created_at: Date;
  updated_at: Date;
  kind: "monitor" | "manual";
  /** A manual incident's; null on a monitor incident. */
  impact: IncidentImpact | null;
  /** A manual incident's workflow status; null on a monitor incident. */
  stage: IncidentStage | null;
}

export interface IncidentUpdateRow {
  id: string;
  incident_id: string;
  project_id: string;
  message: string;
  created_at: Date;
  /** The manual incident's stage after this update; null on a monitor incident's. */
  status: IncidentStage | null;
}

export interface HeartbeatRow {
  id: string;
  at: Date;
  status: string;
  latency_ms: number | null;
  metadata: JsonObject;
}

const ms = (d: Date | null) => (d ? d.getTime() : null);

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
    schedule: scheduleOf(r),
    lastSuccessStartAt: ms(r.last_success_start_at),
    maxRuntimeMs: r.max_runtime_ms === null ? null : Number(r.max_runtime_ms),
    runningSince: ms(r.running_since),
    failureTolerance: r.failure_tolerance,
    consecutiveFailures: r.consecutive_failures,
    inMaintenance: r.in_maintenance,
    maintenanceEndedAt: ms(r.maintenance_ended_at),
  };
}

/** The monitor's schedule, or null for an interval monitor. */
export function scheduleOf(r: Pick<MonitorRow, "schedule_cron" | "schedule_timezone">): Schedule | null {
  return r.schedule_cron !== null && r.schedule_timezone !== null
    ? { cron: r.schedule_cron, timezone: r.schedule_timezone }
    : null;
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
    schedule_cron: s.schedule?.cron ?? null,
    schedule_timezone: s.schedule?.timezone ?? null,
    max_runtime_ms: s.maxRuntimeMs ?? null,
    failure_tolerance: s.failureTolerance ?? 0,
    consecutive_failures: s.consecutiveFailures ?? 0,
    last_success_start_at: d(s.lastSuccessStartAt ?? null),
    running_since: d(s.runningSince ?? null),
    updated_at: now,
  };
}

/** The columns a state is written to, in the order of stateValues(). */
const STATE_COLUMNS = [
  "status",
  "expected_interval_ms",
  "grace_period_ms",
  "last_heartbeat_at",
  "first_heartbeat_at",
  "resumed_at",
  "up_since",
  "deadline_at",
  "schedule_cron",
  "schedule_timezone",
  "max_runtime_ms",
  "failure_tolerance",
  "consecutive_failures",
  "last_success_start_at",
  "running_since",
] as const;

/** Column values of a state, in the order of STATE_COLUMNS. */
export function stateValues(s: MonitorState): unknown[] {
  const d = (v: number | null | undefined) => (v == null ? null : new Date(v));
  return [
    s.status,
    s.expectedIntervalMs,
    s.gracePeriodMs,
    d(s.lastHeartbeatAt),
    d(s.firstHeartbeatAt),
    d(s.resumedAt),
    d(s.upSince),
    d(s.deadlineAt),
    s.schedule?.cron ?? null,
    s.schedule?.timezone ?? null,
    s.maxRuntimeMs ?? null,
    s.failureTolerance ?? 0,
    s.consecutiveFailures ?? 0,
    d(s.lastSuccessStartAt),
    d(s.runningSince),
  ];
}

/** `UPDATE monitors SET <every state column> = $<first>...`: the SET list for stateValues() from `$first`. */
export function stateSets(first: number): string {
  return STATE_COLUMNS.map((c, i) => `${c} = $${first + i}`).join(", ");
}

export async function monitorById(
  c: Queryable,
  projectId: string,
  id: string,
  lock = false,
): Promise<MonitorRow | undefined> {
  const r = await c.query<MonitorRow>(
    `SELECT * FROM monitors WHERE id = $1 AND project_id = $2${lock ? " FOR UPDATE" : ""}`,
    [id, projectId],
  );
  return r.rows[0];
}

/** Every monitor of the project, oldest first (the overview). */
/** Monitors by (project, slug), keyed `${projectId}\u0000${slug}`; missing ones are absent. */
export async function monitorsBySlug(
  q: Queryable,
  keys: { projectId: string; slug: string }[],
): Promise<Map<string, MonitorRow>> {
  const r = await q.query<MonitorRow>(
    `SELECT m.* FROM monitors m JOIN unnest($1::text[], $2::text[]) AS k(project_id, slug)
       ON m.project_id = k.project_id AND m.slug = k.slug`,
    [keys.map((k) => k.projectId), keys.map((k) => k.slug)],
  );
  return new Map(r.rows.map((row) => [`${row.project_id}\u0000${row.slug}`, row]));
}

export async function monitorsOfProject(q: Queryable, projectId: string): Promise<MonitorRow[]> {
  return (
    await q.query<MonitorRow>("SELECT * FROM monitors WHERE project_id = $1 ORDER BY created_at, id", [projectId])
  ).rows;
}

/** Raw heartbeats of a monitor, newest first, within optional bounds. */
export async function listHeartbeats(
  q: Queryable,
  monitorId: string,
  w: { from?: Date; to?: Date; limit: number },
): Promise<HeartbeatRow[]> {
  const r = await q.query<HeartbeatRow>(
    `SELECT id, at, status, latency_ms, metadata FROM heartbeats WHERE monitor_id = $1 AND ($2::timestamptz IS NULL OR at >= $2) AND ($3::timestamptz IS NULL OR at <= $3)
      ORDER BY at DESC, id DESC LIMIT $4`,
    [monitorId, w.from ?? null, w.to ?? null, w.limit],
  );
  return r.rows;
}

/** A monitor's incidents (those it opened and the manual ones naming it), newest first. */
export async function listIncidents(q: Queryable, monitorId: string, limit: number): Promise<IncidentRow[]> {
  return (
    await q.query<IncidentRow>(
      `SELECT * FROM incidents
        WHERE monitor_id = $1 OR id IN (SELECT incident_id FROM incident_monitors WHERE monitor_id = $1)
        ORDER BY started_at DESC, id DESC LIMIT $2`,
      [monitorId, limit],
    )
  ).rows;
}

/** A project's incidents of both kinds, newest first. */
export async function listProjectIncidents(q: Queryable, projectId: string, limit: number): Promise<IncidentRow[]> {
  return (
    await q.query<IncidentRow>(
      "SELECT * FROM incidents WHERE project_id = $1 ORDER BY started_at DESC, id DESC LIMIT $2",
      [projectId, limit],
    )
  ).rows;
}

export async function incidentById(q: Queryable, projectId: string, id: string): Promise<IncidentRow | undefined> {
  return (await q.query<IncidentRow>("SELECT * FROM incidents WHERE id = $1 AND project_id = $2", [id, projectId]))
    .rows[0];
}

/** What an incident's record shows beside its row: its monitors' ids and its updates (oldest first). */
export interface IncidentDetails {
  monitorIds: string[];
  updates: IncidentUpdateRow[];
}

/** The details of each incident (two reads, whatever the count). */
export async function incidentDetails(
  q: Queryable,
  rows: readonly IncidentRow[],
): Promise<Map<string, IncidentDetails>> {
  const out = new Map<string, IncidentDetails>(
    rows.map((r) => [r.id, { monitorIds: r.monitor_id ? [r.monitor_id] : [], updates: [] }]),
  );
  if (!rows.length) return out;
  const ids = rows.map((r) => r.id);
  const manual = rows.filter((r) => r.kind === "manual").map((r) => r.id);
  const [links, updates] = await Promise.all([
    manual.length
      ? q.query<{ incident_id: string; monitor_id: string }>(
          "SELECT incident_id, monitor_id FROM incident_monitors WHERE incident_id = ANY($1::text[]) ORDER BY monitor_id",
          [manual],
        )
      : { rows: [] },
    q.query<IncidentUpdateRow>(
      "SELECT * FROM incident_updates WHERE incident_id = ANY($1::text[]) ORDER BY created_at, id",
      [ids],
    ),
  ]);
  for (const l of links.rows) out.get(l.incident_id)?.monitorIds.push(l.monitor_id);
  for (const u of updates.rows) out.get(u.incident_id)?.updates.push(u);
  return out;
}

/** Sets the given title and description (an empty string clears it); undefined when no such incident in the project. */
export async function patchIncident(
  q: Queryable,
  projectId: string,
  id: string,
  patch: { title?: string; description?: string },
  now: Date,
): Promise<IncidentRow | undefined> {
  const r = await q.query<IncidentRow>(
    `UPDATE incidents SET title = CASE WHEN $3::boolean THEN NULLIF($4, '') ELSE title END,
            description = CASE WHEN $5::boolean THEN NULLIF($6, '') ELSE description END, updated_at = $7
      WHERE id = $1 AND project_id = $2 RETURNING *`,
    [
      id,
      projectId,
      patch.title !== undefined,
      patch.title ?? null,
      patch.description !== undefined,
      patch.description ?? null,
      now,
    ],
  );
  return r.rows[0];
}

/** The most updates one incident holds (a status page shows them all, oldest first). */
export const MAX_INCIDENT_UPDATES = 100;

/**
 * Adds an update to an incident the caller holds locked (`lockIncident`), in its transaction: null at
 * MAX_INCIDENT_UPDATES. `created_at` is `now`, or just after the incident's latest update when that
 * is later (a clock step back, two updates in one microsecond), so that oldest-first is always the
 * order they were posted in.
 */
export async function insertIncidentUpdate(
  c: Queryable,
  u: { id: string; projectId: string; incidentId: string; message: string; status: IncidentStage | null; now: Date },
): Promise<IncidentUpdateRow | null> {
  const r = await c.query<IncidentUpdateRow>(
    `INSERT INTO incident_updates (id, incident_id, project_id, message, status, created_at)
     SELECT $1, $2, $3, $4, $7, GREATEST($5::timestamptz, max(created_at) + interval '1 microsecond')
       FROM incident_updates WHERE incident_id = $2
     HAVING count(*) < $6
     RETURNING *`,
    [u.id, u.incidentId, u.projectId, u.message, u.now, MAX_INCIDENT_UPDATES, u.status],
  );
  return r.rows[0] ?? null;
}

/** The incident of the project, locked against other updates until the transaction ends. */
export async function lockIncident(c: Queryable, projectId: string, id: string): Promise<IncidentRow | undefined> {
  const r = await c.query<IncidentRow>("SELECT * FROM incidents WHERE id = $1 AND project_id = $2 FOR NO KEY UPDATE", [
    id,
    projectId,
  ]);
  return r.rows[0];
}

/** An incident's updates, oldest first; undefined when the project has no such incident. */
export async function listIncidentUpdates(
  q: Queryable,
  projectId: string,
  incidentId: string,
): Promise<IncidentUpdateRow[] | undefined> {
  const r = await q.query<IncidentUpdateRow>(
    "SELECT * FROM incident_updates WHERE incident_id = $1 AND project_id = $2 ORDER BY created_at, id",
    [incidentId, projectId],
  );
  if (r.rows.length) return r.rows;
  const inc = await q.query("SELECT 1 FROM incidents WHERE id = $1 AND project_id = $2", [incidentId, projectId]);
  return inc.rowCount ? [] : undefined;
}
