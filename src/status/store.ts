import { timesOf, type MaintenanceRow } from "../uptime/maintenance-model.js";
import type { MaintenanceFacts } from "./model.js";
import type { Queryable } from "../storage/db.js";
import type { IncidentImpact, IncidentStage } from "../uptime/model.js";
import type { MonitorRow } from "../uptime/store.js";

// The reads of a public status page (tables of migrations 4000, 4003 and 7000): the page by its
// slug, its monitors in display order, their recent incidents and the updates posted on them.
// Every read is bounded: a page lists at most what page_monitors holds for it, and incidents are
// limited by the caller.

export interface PageRow {
  id: string;
  title: string;
  description: string | null;
  published: boolean;
  updated_at: Date;
}

/** A monitor as a page lists it: the monitor's row and the page entry's name and section. */
export interface PageMonitorRow extends MonitorRow {
  page_name: string | null;
  page_section: string | null;
}

export interface PageIncidentRow {
  id: string;
  /** Null for a manual incident. */
  monitor_id: string | null;
  kind: "monitor" | "manual";
  impact: IncidentImpact | null;
  stage: IncidentStage | null;
  /** A manual incident's monitors among the page's; a monitor incident's own. */
  monitor_ids: string[];
  started_at: Date;
  ended_at: Date | null;
  title: string | null;
  description: string | null;
}

export interface IncidentUpdateRow {
  incident_id: string;
  message: string;
  created_at: Date;
  status: IncidentStage | null;
}

export async function pageBySlug(q: Queryable, slug: string): Promise<PageRow | undefined> {
  const r = await q.query<PageRow>("SELECT id, title, description, published, updated_at FROM pages WHERE slug = $1", [
    slug,
  ]);
  return r.rows[0];
}

/** The page's monitors in display order (monitors of another project cannot be listed: 7000_pages.sql). */
export async function pageMonitors(q: Queryable, pageId: string): Promise<PageMonitorRow[]> {
  const r = await q.query<PageMonitorRow>(
    `SELECT m.*, pm.name AS page_name, pm.section AS page_section
       FROM page_monitors pm JOIN monitors m ON m.id = pm.monitor_id AND m.project_id = pm.project_id
      WHERE pm.page_id = $1
      ORDER BY pm.position, pm.monitor_id`,
    [pageId],
  );
  return r.rows;
}

/**
 * Incidents of the monitors (opened by one of them, or manual ones naming one: migration 9011) that
 * are open or started since `since`, newest first, at most `limit`.
 */
export async function recentIncidents(
  q: Queryable,
  monitorIds: string[],
  since: Date,
  limit: number,
): Promise<PageIncidentRow[]> {
  if (monitorIds.length === 0) return [];
  const r = await q.query<PageIncidentRow>(
    `SELECT i.id, i.monitor_id, i.kind, i.impact, i.stage, i.started_at, i.ended_at, i.title, i.description,
            CASE WHEN i.kind = 'manual'
              THEN ARRAY(SELECT im.monitor_id FROM incident_monitors im
                          WHERE im.incident_id = i.id AND im.monitor_id = ANY($1::text[]) ORDER BY im.monitor_id)
              ELSE ARRAY[i.monitor_id] END AS monitor_ids
       FROM incidents i
      WHERE (i.monitor_id = ANY($1::text[])
             OR i.id IN (SELECT incident_id FROM incident_monitors WHERE monitor_id = ANY($1::text[])))
        AND (i.ended_at IS NULL OR i.started_at >= $2)
      ORDER BY i.started_at DESC, i.id DESC LIMIT $3`,
    [monitorIds, since, limit],
  );
  return r.rows;
}

/** The updates posted on the incidents, oldest first. */
export async function incidentUpdates(q: Queryable, incidentIds: string[]): Promise<IncidentUpdateRow[]> {
  if (incidentIds.length === 0) return [];
  const r = await q.query<IncidentUpdateRow>(
    `SELECT incident_id, message, created_at, status FROM incident_updates
      WHERE incident_id = ANY($1::text[]) ORDER BY created_at, id`,
    [incidentIds],
  );
  return r.rows;
}

/** The maintenance windows naming any of the monitors that are in progress or have an occurrence left. */
export async function pageMaintenances(q: Queryable, monitorIds: string[]): Promise<MaintenanceFacts[]> {
  if (!monitorIds.length) return [];
  const r = await q.query<MaintenanceRow & { monitor_ids: string[] }>(
    `SELECT w.*, array_agg(mm.monitor_id ORDER BY mm.monitor_id) AS monitor_ids
       FROM maintenances w JOIN maintenance_monitors mm ON mm.maintenance_id = w.id
      WHERE w.id IN (SELECT maintenance_id FROM maintenance_monitors WHERE monitor_id = ANY($1::text[]))
        AND w.occ_start IS NOT NULL
      GROUP BY w.id`,
    [monitorIds],
  );
  return r.rows.map((w) => ({
    title: w.title,
    description: w.description,
    active: w.active,
    occStart: w.occ_start,
    occEnd: w.occ_end,
    times: timesOf(w),
    monitorIds: w.monitor_ids,
  }));
}
