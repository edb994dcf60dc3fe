import type { PoolClient } from "pg";
import type { UptimeMetrics } from "./metrics.js";
import { newId } from "../shared/ids.js";
import { toIncident, toIncidentUpdate, toMonitor } from "./messages.js";
import type { IncidentRow, IncidentUpdateRow, MonitorRow } from "./store.js";

// Opening and resolving incidents inside the transaction that changed the monitor's state (after its
// compare-and-set). A notification (incident.started / incident.recovered) is fired only by the
// transaction that inserts its incident_notifications row: at most once per incident and transition.

type NoticeKind = "started" | "recovered";

/**
 * An incident transition, or a maintenance window's start or end (maintenance.ts), handed to the
 * listeners inside the transaction that made it: one path for webhooks (and subscribers) to hook.
 */
export interface IncidentNotice {
  /** `incident.updated`: an update posted on an open incident (status page subscribers are told; webhooks are not). */
  type:
    "incident.started" | "incident.updated" | "incident.recovered" | "maintenance.started" | "maintenance.completed";
  projectId: string;
  /** Unique per incident and transition: used to deliver at most once. */
  dedupeKey: string;
  payload: Record<string, unknown>;
  at: Date;
}

/** Runs inside the transaction that opens or resolves an incident (wired in server/features.ts: webhooks). */
export type IncidentListener = (client: PoolClient, notice: IncidentNotice) => Promise<void>;

export interface IncidentDeps {
  /** In order, for every notice this transaction fires. */
  incidentListeners: readonly IncidentListener[];
  metrics: Pick<UptimeMetrics, "incidents">;
}

export interface OpenItem {
  monitor: MonitorRow;
  startedAt: Date;
  /** The incident's description (a failed or timed-out run names itself and its exit code); absent: none. */
  description?: string;
}

export interface ResolveItem {
  monitor: MonitorRow;
  endedAt: Date;
}

/** Opens one incident per item (none when the monitor already has an open one). */
export async function openIncidents(
  deps: IncidentDeps,
  c: PoolClient,
  items: OpenItem[],
  now: Date,
): Promise<IncidentRow[]> {
  if (!items.length) return [];
  const r = await c.query<IncidentRow>(
    `INSERT INTO incidents (id, monitor_id, project_id, started_at, description, created_at, updated_at)
     SELECT d.id, d.monitor_id, d.project_id, d.started_at, d.description, $5, $5
       FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $6::text[]) AS d(id, monitor_id, project_id, started_at, description)
     ON CONFLICT (monitor_id) WHERE ended_at IS NULL DO NOTHING
     RETURNING *`,
    [
      items.map(() => newId("inc")),
      items.map((i) => i.monitor.id),
      items.map((i) => i.monitor.project_id),
      items.map((i) => i.startedAt),
      now,
      items.map((i) => i.description ?? null),
    ],
  );
  const byMonitor = new Map(items.map((i) => [i.monitor.id, i.monitor]));
  await notify(
    deps,
    c,
    "started",
    r.rows.map((inc) => ({ incident: inc, monitor: byMonitor.get(inc.monitor_id!)! })),
    now,
  );
  deps.metrics.incidents.inc({ transition: "opened" }, r.rowCount ?? 0);
  return r.rows;
}

/** Resolves each item's open incident at endedAt (never before it started). */
export async function resolveIncidents(
  deps: IncidentDeps,
  c: PoolClient,
  items: ResolveItem[],
  now: Date,
  opts: { notify: boolean },
): Promise<IncidentRow[]> {
  if (!items.length) return [];
  const r = await c.query<IncidentRow>(
    `UPDATE incidents i
        SET ended_at = GREATEST(i.started_at, d.ended_at),
            duration_ms = round(extract(epoch FROM GREATEST(i.started_at, d.ended_at) - i.started_at) * 1000)::bigint,
            updated_at = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS d(monitor_id, ended_at)
      WHERE i.monitor_id = d.monitor_id AND i.ended_at IS NULL
      RETURNING i.*`,
    [items.map((i) => i.monitor.id), items.map((i) => i.endedAt), now],
  );
  if (opts.notify) {
    const byMonitor = new Map(items.map((i) => [i.monitor.id, i.monitor]));
    await notify(
      deps,
      c,
      "recovered",
      r.rows.map((inc) => ({ incident: inc, monitor: byMonitor.get(inc.monitor_id!)! })),
      now,
    );
  }
  deps.metrics.incidents.inc({ transition: "resolved" }, r.rowCount ?? 0);
  return r.rows;
}

async function notify(
  deps: IncidentDeps,
  c: PoolClient,
  kind: NoticeKind,
  list: { incident: IncidentRow; monitor: MonitorRow }[],
  now: Date,
): Promise<void> {
  await fire(
    deps,
    c,
    kind,
    list.map(({ incident, monitor }) => ({
      incident,
      payload: { incident: toIncident(incident), monitor: toMonitor(monitor, now) },
    })),
    now,
  );
}

/** A monitor as a manual incident's notification names it. */
export interface NoticeMonitor {
  id: string;
  name: string;
  slug: string;
}

/**
 * A manual incident's transition (src/uptime/manual.ts), in the transaction that made it: the same
 * notices as a monitor incident's, once per incident and transition, the payload naming the
 * incident (kind, impact, title, status, monitorIds), its monitors, and the update that made the
 * transition (the creation's first message, or the resolving one): what a subscriber is told.
 */
export async function notifyManual(
  deps: IncidentDeps,
  c: PoolClient,
  kind: NoticeKind,
  incident: IncidentRow,
  monitors: readonly NoticeMonitor[],
  now: Date,
  update: IncidentUpdateRow,
): Promise<void> {
  const payload = {
    incident: toIncident(
      incident,
      monitors.map((m) => m.id),
    ),
    monitors: monitors.map((m) => ({ id: m.id, name: m.name, slug: m.slug })),
    update: toIncidentUpdate(update),
  };
  await fire(deps, c, kind, [{ incident, payload }], now);
  deps.metrics.incidents.inc({ transition: kind === "started" ? "opened" : "resolved" });
}

/**
 * An update posted on an incident that it did not resolve (src/uptime/manual.ts), in the transaction
 * that stored it: one `incident.updated` notice, keyed by the update (each update is stored once).
 */
export async function notifyUpdate(
  deps: IncidentDeps,
  c: PoolClient,
  incident: IncidentRow,
  monitors: readonly NoticeMonitor[],
  update: IncidentUpdateRow,
): Promise<void> {
  const notice: IncidentNotice = {
    type: "incident.updated",
    projectId: incident.project_id,
    dedupeKey: `${incident.id}:update:${update.id}`,
    payload: {
      incident: toIncident(
        incident,
        monitors.map((m) => m.id),
      ),
      monitors: monitors.map((m) => ({ id: m.id, name: m.name, slug: m.slug })),
      update: toIncidentUpdate(update),
    },
    at: update.created_at,
  };
  for (const listener of deps.incidentListeners) await listener(c, notice);
}

async function fire(
  deps: IncidentDeps,
  c: PoolClient,
  kind: NoticeKind,
  list: { incident: IncidentRow; payload: Record<string, unknown> }[],
  now: Date,
): Promise<void> {
  if (!list.length) return;
  const ins = await c.query<{ incident_id: string }>(
    `INSERT INTO incident_notifications (incident_id, kind, created_at)
     SELECT id, $2, $3 FROM unnest($1::text[]) AS id
     ON CONFLICT DO NOTHING RETURNING incident_id`,
    [list.map((l) => l.incident.id), kind, now],
  );
  const inserted = new Set(ins.rows.map((r) => r.incident_id));
  for (const { incident, payload } of list) {
    if (!inserted.has(incident.id)) continue;
    const notice: IncidentNotice = {
      type: kind === "started" ? "incident.started" : "incident.recovered",
      projectId: incident.project_id,
      dedupeKey: `${incident.id}:${kind}`,
      payload,
      at: kind === "started" ? incident.started_at : (incident.ended_at ?? now),
    };
    for (const listener of deps.incidentListeners) await listener(c, notice);
  }
}
