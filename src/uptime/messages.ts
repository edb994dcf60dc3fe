import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type {
  HistoryBucketSchema,
  IncidentSchema,
  IncidentUpdateSchema,
  MaintenanceSchema,
  MonitorSchema,
  MonitorStatsSchema,
} from "../../gen/vigil/v1/uptime_pb.js";
import { statusOf, timesOf, type MaintenanceRow } from "./maintenance-model.js";
import { timeUp } from "./model.js";
import type { HeartbeatFigures } from "./stats.js";
import {
  scheduleOf,
  stateOf,
  type HeartbeatRow,
  type IncidentDetails,
  type IncidentRow,
  type IncidentUpdateRow,
  type MonitorRow,
} from "./store.js";

// Rows and figures as uptime response messages. Milliseconds and counts are int64 in the proto
// (bigint in protobuf-es); the plain-number shapes (toMonitor, toIncident) stay what webhook payloads
// carry. REST still writes them as JSON numbers (src/transcoding/json.ts).

const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

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
    schedule: scheduleOf(r) ?? undefined,
    maxRuntimeMs: r.max_runtime_ms ?? undefined,
    failureTolerance: r.failure_tolerance,
    inMaintenance: r.in_maintenance,
  };
}

/** A monitor incident's impact (docs/uptime.md "Manual incidents"). */
const MONITOR_IMPACT = "major";

/** `monitorIds`: a manual incident's monitors (incident_monitors); a monitor incident's is its own. */
export function toIncident(r: IncidentRow, monitorIds: readonly string[] = r.monitor_id ? [r.monitor_id] : []) {
  return {
    id: r.id,
    kind: r.kind,
    monitorId: r.monitor_id ?? undefined,
    monitorIds: [...monitorIds],
    impact: r.impact ?? MONITOR_IMPACT,
    status: r.stage ?? (r.ended_at ? "resolved" : "open"),
    startedAt: r.started_at.toISOString(),
    endedAt: iso(r.ended_at),
    durationMs: r.duration_ms ?? undefined,
    title: r.title ?? undefined,
    description: r.description ?? undefined,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/** An incident update as notices carry it (`update`: what subscribers and webhook receivers are told with it). */
export function toIncidentUpdate(r: IncidentUpdateRow) {
  return { id: r.id, message: r.message, status: r.status, createdAt: r.created_at.toISOString() };
}

export function toHeartbeat(r: HeartbeatRow) {
  return {
    id: r.id,
    at: r.at.toISOString(),
    metadata: r.metadata,
    status: r.status,
    latencyMs: r.latency_ms ?? undefined,
  };
}

// Whole by construction (epoch-ms differences, bigint columns, counts); rounded so a stray fraction never fails the encoding.
const big = (v: number) => BigInt(Math.round(v));

export function monitorMessage(r: MonitorRow, now: Date): MessageInitShape<typeof MonitorSchema> {
  const m = toMonitor(r, now);
  // metadata and tags are stored jsonb objects (JSON by construction).
  return {
    ...m,
    metadata: m.metadata as JsonObject,
    tags: m.tags as JsonObject,
    expectedIntervalMs: big(m.expectedIntervalMs),
    gracePeriodMs: big(m.gracePeriodMs),
    timeUp: big(m.timeUp),
    maxRuntimeMs: m.maxRuntimeMs === undefined ? undefined : big(m.maxRuntimeMs),
  };
}

/** `d`: the incident's monitors and updates (store.incidentDetails). */
export function incidentMessage(r: IncidentRow, d: IncidentDetails): MessageInitShape<typeof IncidentSchema> {
  const i = toIncident(r, d.monitorIds);
  return {
    ...i,
    durationMs: i.durationMs === undefined ? undefined : big(i.durationMs),
    updates: d.updates.map(incidentUpdateMessage),
  };
}

export function incidentUpdateMessage(r: IncidentUpdateRow): MessageInitShape<typeof IncidentUpdateSchema> {
  return {
    id: r.id,
    incidentId: r.incident_id,
    message: r.message,
    createdAt: r.created_at.toISOString(),
    status: r.status ?? undefined,
  };
}

export function statsMessage(
  t: { uptimePercentage: number | null; downtimeMs: number; incidentCount: number },
  h: HeartbeatFigures,
  m: MonitorRow,
  from: Date,
  to: Date,
): MessageInitShape<typeof MonitorStatsSchema> {
  return {
    uptimePercentage: t.uptimePercentage ?? undefined,
    downtimeMs: big(t.downtimeMs),
    incidentCount: big(t.incidentCount),
    currentStatus: m.status,
    lastHeartbeat: m.last_heartbeat_at?.toISOString(),
    totalHeartbeats: big(h.total),
    successfulHeartbeats: big(h.successful),
    failedHeartbeats: big(h.failed),
    avgLatencyMs: h.avgLatencyMs,
    minLatencyMs: h.minLatencyMs,
    maxLatencyMs: h.maxLatencyMs,
    from: from.toISOString(),
    to: to.toISOString(),
  };
}

export function bucketMessage(b: {
  start: string;
  end: string;
  status: string;
  uptimePercentage?: number;
  downtimeMs: number;
}): MessageInitShape<typeof HistoryBucketSchema> {
  return { ...b, downtimeMs: big(b.downtimeMs) };
}

/** A maintenance window as its record (`monitorIds`: maintenance_monitors). */
export function maintenanceMessage(
  r: MaintenanceRow,
  monitorIds: string[],
): MessageInitShape<typeof MaintenanceSchema> {
  const t = timesOf(r);
  return {
    id: r.id,
    title: r.title,
    description: r.description,
    monitorIds,
    startsAt: iso(r.starts_at),
    endsAt: iso(r.ends_at),
    schedule: t.schedule
      ? { cron: t.schedule.cron, timezone: t.schedule.timezone, durationMs: big(t.schedule.durationMs) }
      : undefined,
    status: statusOf(r),
    nextStartsAt: iso(r.occ_start),
    nextEndsAt: iso(r.occ_end),
    createdAt: r.created_at.toISOString(),
  };
}
