import type { PoolClient } from "pg";
import type { UptimeDeps } from "./deps.js";
import { tx } from "../storage/db.js";
import { ApiError, badRequest, conflict, notFound } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import { holdProjectCap } from "../shared/project-cap.js";
import { notifyManual, notifyUpdate, type NoticeMonitor } from "./incidents.js";
import { nextStage, type IncidentImpact, type IncidentStage } from "./model.js";
import * as store from "./store.js";
import type { IncidentRow, IncidentUpdateRow } from "./store.js";

// Manual incidents (decisions.md "Status communication"; docs/uptime.md "Manual incidents"): opened
// by a member on chosen monitors of the project, moved along their workflow by updates carrying a
// status, resolved by one. Each change commits with its notification (incidents.ts: incident.started
// on creation, incident.recovered on resolution, once each) and, for updates on either kind of
// incident, under the incident's row lock.

export interface ManualIncidentInput {
  title: string;
  description?: string;
  impact: IncidentImpact;
  monitorIds: string[];
  status: IncidentStage;
  message: string;
}

type Deps = Pick<UptimeDeps, "db" | "config" | "incidentListeners" | "metrics">;

/** The monitors of the project among `ids` (locked against deletion until commit); 404 naming the first unknown one. */
async function projectMonitors(c: PoolClient, projectId: string, ids: readonly string[]): Promise<NoticeMonitor[]> {
  const r = await c.query<NoticeMonitor>(
    "SELECT id, name, slug FROM monitors WHERE project_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR KEY SHARE",
    [projectId, ids],
  );
  const found = new Set(r.rows.map((m) => m.id));
  const missing = ids.findIndex((id) => !found.has(id));
  // Another tenant's monitor is as unknown as a made-up id (decisions.md "Errors": ids are not probed).
  if (missing >= 0)
    throw new ApiError(404, "not_found", "monitor not found", [
      { field: `monitorIds[${missing}]`, message: "no such monitor in this project" },
    ]);
  return r.rows;
}

const fullError = () =>
  conflict(`this incident has reached its limit of ${store.MAX_INCIDENT_UPDATES} updates`, [
    { field: "message", message: `at most ${store.MAX_INCIDENT_UPDATES} updates per incident` },
  ]);

/** Opens a manual incident with its first update; notifies its start (and its end when created resolved). */
export async function createManualIncident(
  deps: Deps,
  projectId: string,
  input: ManualIncidentInput,
  now: Date,
): Promise<IncidentRow> {
  return tx(deps.db, async (c) => {
    const max = deps.config.uptime.maxOpenIncidentsPerProject;
    if (input.status !== "resolved")
      await holdProjectCap(c, projectId, {
        what: "open incidents",
        max,
        countSql:
          "SELECT count(*)::int AS n FROM incidents WHERE project_id = $1 AND kind = 'manual' AND ended_at IS NULL",
        field: "status",
      });
    const monitors = await projectMonitors(c, projectId, input.monitorIds);
    const resolved = input.status === "resolved";
    const id = newId("inc");
    const row = (
      await c.query<IncidentRow>(
        `INSERT INTO incidents (id, monitor_id, project_id, kind, title, description, impact, stage, started_at,
                                ended_at, duration_ms, created_at, updated_at)
         VALUES ($1, NULL, $2, 'manual', $3, $4, $5, $6, $7, CASE WHEN $8::boolean THEN $7::timestamptz END,
                 CASE WHEN $8::boolean THEN 0 END, $7, $7)
         RETURNING *`,
        [id, projectId, input.title, input.description ?? null, input.impact, input.status, now, resolved],
      )
    ).rows[0];
    await c.query(
      `INSERT INTO incident_monitors (incident_id, monitor_id, project_id)
       SELECT $1, m, $2 FROM unnest($3::text[]) AS m`,
      [id, projectId, monitors.map((m) => m.id)],
    );
    const first = await store.insertIncidentUpdate(c, {
      id: newId("iup"),
      projectId,
      incidentId: id,
      message: input.message,
      status: input.status,
      now,
    });
    if (!first) throw fullError();
    await notifyManual(deps, c, "started", row, monitors, now, first);
    if (resolved) await notifyManual(deps, c, "recovered", row, monitors, now, first);
    return row;
  });
}

/**
 * Posts an update on an incident of the project. On a manual incident `status` moves it (nextStage;
 * `resolved` ends it and notifies); a monitor incident takes no status (it resolves with its
 * monitor: 400). 404 for no such incident, 409 past MAX_INCIDENT_UPDATES or to reopen a resolved one.
 */
export async function postIncidentUpdate(
  deps: Deps,
  projectId: string,
  incidentId: string,
  input: { message: string; status?: IncidentStage },
  now: Date,
): Promise<IncidentUpdateRow> {
  return tx(deps.db, async (c) => {
    const inc = await store.lockIncident(c, projectId, incidentId);
    if (!inc) throw notFound("incident");
    // A monitor's incident takes notes only; a manual one moves along its stages.
    let next: IncidentStage | null = null;
    if (inc.kind === "monitor" || inc.stage === null) {
      if (input.status !== undefined)
        throw badRequest("a monitor's incident has no status to set: it resolves when its monitor is up again", [
          { field: "status", message: "only on manual incidents" },
        ]);
    } else {
      const stage = nextStage(inc.stage, input.status);
      if (stage === "reopen")
        throw conflict("this incident is resolved; open a new incident instead", [
          { field: "status", message: "a resolved incident stays resolved" },
        ]);
      next = stage;
    }
    const u = await store.insertIncidentUpdate(c, {
      id: newId("iup"),
      projectId,
      incidentId,
      message: input.message,
      status: next,
      now,
    });
    if (!u) throw fullError();
    const incidentMonitors = async () =>
      (
        await c.query<NoticeMonitor>(
          `SELECT m.id, m.name, m.slug FROM monitors m
            WHERE m.id IN (SELECT monitor_id FROM incident_monitors WHERE incident_id = $1) OR m.id = $2
            ORDER BY m.id`,
          [inc.id, inc.monitor_id],
        )
      ).rows;
    let row = inc;
    if (next !== null && next !== inc.stage) {
      const resolving = next === "resolved";
      row = (
        await c.query<IncidentRow>(
          `UPDATE incidents SET stage = $2, updated_at = $3,
                  ended_at = CASE WHEN $4::boolean THEN GREATEST(started_at, $3::timestamptz) ELSE ended_at END,
                  duration_ms = CASE WHEN $4::boolean
                    THEN round(extract(epoch FROM GREATEST(started_at, $3::timestamptz) - started_at) * 1000)::bigint
                    ELSE duration_ms END
            WHERE id = $1 RETURNING *`,
          [inc.id, next, now, resolving],
        )
      ).rows[0];
      if (resolving) {
        await notifyManual(deps, c, "recovered", row, await incidentMonitors(), now, u);
        return u;
      }
    }
    // Any other update (a note, or a move to another status) is an update notice; resolving is the recovered one.
    await notifyUpdate(deps, c, row, await incidentMonitors(), u);
    return u;
  });
}
