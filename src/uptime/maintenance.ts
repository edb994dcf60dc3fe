import type { PoolClient } from "pg";
import type { UptimeDeps } from "./deps.js";
import { forEachLimited } from "../shared/limited.js";
import { tx, type Queryable } from "../storage/db.js";
import { ApiError, conflict, notFound } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import { holdProjectCap } from "../shared/project-cap.js";
import type { IncidentNotice } from "./incidents.js";
import { dueAt, needsWake } from "./model.js";
import { stateOf, type MonitorRow } from "./store.js";
import { notifyWake, type DeadlineChange } from "./wake.js";
import type { MaintenanceInput, MaintenancePatch } from "./requests.js";
import { occurrenceAt, timesOf, type MaintenanceRow, type Occurrence, type WindowTimes } from "./maintenance-model.js";

// Maintenance windows (decisions.md "Status communication"; docs/uptime.md "Maintenance windows").
// A window is one-off (startsAt..endsAt) or recurring (a cron schedule, the rules of cron monitors:
// schedule.ts, and a duration). Its row holds its current or next occurrence and `due_at`, the next
// transition (start, or end while active): the durable timer the maintenance timer
// (maintenance-timer.ts) wakes for on every node. A transition runs in ONE transaction under the
// window's row lock and re-checks due_at, so it applies once whatever the number of nodes; the
// notice (maintenance.started / maintenance.completed, through the incident listeners: webhooks and
// subscribers) is fired only by the transaction that inserts its maintenance_occurrences claim row.
// On start the window's monitors get in_maintenance (no deadline: model.ts unwatched()); on end
// they leave it (unless another active window names them) and their deadline counts from the end.

export const MAINTENANCE_CHANNEL = "vigil_maintenance_wake";

/** The maintenance fields of a new occurrence (or none): not active, due at its start. */
function occurrenceCols(o: Occurrence | null): { occ_start: Date | null; occ_end: Date | null; due_at: Date | null } {
  return o === null
    ? { occ_start: null, occ_end: null, due_at: null }
    : { occ_start: new Date(o.start), occ_end: new Date(o.end), due_at: new Date(o.start) };
}

/**
 * Windows applied at once, each its own transaction: by the embedded maintenance timer and by a
 * Temporal deadline scan alike.
 */
export const WINDOWS_AT_ONCE = 4;

/** A window's time columns, in the order of `timeValues`. */
const TIME_COLS = "starts_at, ends_at, cron, timezone, duration_ms, occ_start, occ_end, due_at";

/** The values of TIME_COLS: the times as given, and the occurrence in progress or next at `now`. */
function timeValues(input: Pick<MaintenanceInput, "startsAt" | "endsAt" | "schedule">, now: Date) {
  const times: WindowTimes = {
    startsAt: input.startsAt?.getTime() ?? null,
    endsAt: input.endsAt?.getTime() ?? null,
    schedule: input.schedule ?? null,
  };
  const o = occurrenceCols(occurrenceAt(times, now.getTime()));
  return [
    input.startsAt ?? null,
    input.endsAt ?? null,
    input.schedule?.cron ?? null,
    input.schedule?.timezone ?? null,
    input.schedule?.durationMs ?? null,
    o.occ_start,
    o.occ_end,
    o.due_at,
  ];
}

/** Names the window's monitors (after its old ones are deleted, on update). */
async function insertMonitors(c: PoolClient, id: string, monitorIds: string[]): Promise<void> {
  await c.query(
    "INSERT INTO maintenance_monitors (maintenance_id, monitor_id) SELECT $1, m FROM unnest($2::text[]) AS m",
    [id, monitorIds],
  );
}

type Deps = Pick<UptimeDeps, "db" | "config" | "clock" | "incidentListeners" | "log">;
/** After commit: the monitors' deadlines to the deadline runner, the window's due time to the maintenance timer. */
export interface MaintenanceHooks {
  changed: (changes: DeadlineChange[]) => void;
  due: (id: string, at: number | null) => void;
}

/** The project's monitors among `ids`; 404 naming the first unknown one (another tenant's included). */
async function checkMonitors(c: PoolClient, projectId: string, ids: readonly string[]): Promise<void> {
  const r = await c.query<{ id: string }>(
    "SELECT id FROM monitors WHERE project_id = $1 AND id = ANY($2::text[]) FOR KEY SHARE",
    [projectId, ids],
  );
  const found = new Set(r.rows.map((m) => m.id));
  const missing = ids.findIndex((id) => !found.has(id));
  if (missing >= 0)
    throw new ApiError(404, "not_found", "monitor not found", [
      { field: `monitorIds[${missing}]`, message: "no such monitor in this project" },
    ]);
}

/** Announces a window's new due time to every node's maintenance timer, inside the writing transaction. */
async function announce(c: Queryable, id: string, dueAtMs: number | null): Promise<void> {
  if (dueAtMs !== null) await c.query("SELECT pg_notify($1, $2)", [MAINTENANCE_CHANNEL, `${id} ${dueAtMs}`]);
}

export async function createMaintenance(
  deps: Deps,
  hooks: MaintenanceHooks,
  projectId: string,
  input: MaintenanceInput,
): Promise<MaintenanceRow> {
  const now = deps.clock();
  const row = await tx(deps.db, async (c) => {
    await holdProjectCap(c, projectId, {
      what: "maintenance windows",
      max: deps.config.uptime.maxMaintenancesPerProject,
      countSql: "SELECT count(*)::int AS n FROM maintenances WHERE project_id = $1",
      field: "monitorIds",
    });
    await checkMonitors(c, projectId, input.monitorIds);
    const r = await c.query<MaintenanceRow>(
      `INSERT INTO maintenances (id, project_id, title, description, ${TIME_COLS}, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13) RETURNING *`,
      [newId("mnt"), projectId, input.title, input.description, ...timeValues(input, now), now],
    );
    await insertMonitors(c, r.rows[0].id, input.monitorIds);
    await announce(c, r.rows[0].id, r.rows[0].due_at?.getTime() ?? null);
    return r.rows[0];
  });
  hooks.due(row.id, row.due_at?.getTime() ?? null);
  // Already due (a window that starts now or in the past): start it before answering.
  if (row.due_at !== null && row.due_at.getTime() <= now.getTime()) return (await advance(deps, hooks, row.id)) ?? row;
  return row;
}

export async function updateMaintenance(
  deps: Deps,
  hooks: MaintenanceHooks,
  projectId: string,
  id: string,
  input: MaintenancePatch,
): Promise<MaintenanceRow> {
  const now = deps.clock();
  const row = await tx(deps.db, async (c) => {
    const cur = await lockWindow(c, id, projectId);
    if (!cur) throw notFound("maintenance window");
    const timesChange = input.startsAt !== undefined || input.schedule !== undefined;
    if (cur.active && (timesChange || input.monitorIds !== undefined))
      throw conflict("this window is in progress: its times and monitors change once it ends (or delete it)", [
        { field: input.monitorIds !== undefined ? "monitorIds" : "startsAt", message: "window in progress" },
      ]);
    if (input.monitorIds !== undefined) {
      await checkMonitors(c, projectId, input.monitorIds);
      await c.query("DELETE FROM maintenance_monitors WHERE maintenance_id = $1", [id]);
      await insertMonitors(c, id, input.monitorIds);
    }
    let next = cur;
    if (timesChange) {
      next = (
        await c.query<MaintenanceRow>(
          `UPDATE maintenances SET (${TIME_COLS}, updated_at) = ($2, $3, $4, $5, $6, $7, $8, $9, $10)
            WHERE id = $1 RETURNING *`,
          [id, ...timeValues(input, now), now],
        )
      ).rows[0];
      await announce(c, id, next.due_at?.getTime() ?? null);
    }
    if (input.title !== undefined || input.description !== undefined)
      next = (
        await c.query<MaintenanceRow>(
          `UPDATE maintenances SET title = coalesce($2, title), description = coalesce($3, description), updated_at = $4
            WHERE id = $1 RETURNING *`,
          [id, input.title ?? null, input.description ?? null, now],
        )
      ).rows[0];
    return next;
  });
  hooks.due(row.id, row.due_at?.getTime() ?? null);
  if (row.due_at !== null && row.due_at.getTime() <= now.getTime()) return (await advance(deps, hooks, row.id)) ?? row;
  return row;
}

/** Deletes a window; one in progress ends first (its monitors leave maintenance, maintenance.completed). */
export async function deleteMaintenance(deps: Deps, hooks: MaintenanceHooks, projectId: string, id: string) {
  const now = deps.clock();
  const changes = await tx(deps.db, async (c) => {
    const cur = await lockWindow(c, id, projectId);
    if (!cur) throw notFound("maintenance window");
    const out = cur.active ? await endOccurrence(deps, c, cur, now, now) : [];
    await c.query("DELETE FROM maintenances WHERE id = $1", [id]);
    return out;
  });
  hooks.due(id, null);
  if (changes.length) hooks.changed(changes);
}

async function lockWindow(c: PoolClient, id: string, projectId?: string): Promise<MaintenanceRow | undefined> {
  const r = await c.query<MaintenanceRow>(
    `SELECT * FROM maintenances WHERE id = $1${projectId === undefined ? "" : " AND project_id = $2"} FOR UPDATE`,
    projectId === undefined ? [id] : [id, projectId],
  );
  return r.rows[0];
}

/** The window's monitors, locked (in one order) for the state change. */
async function lockMonitors(c: PoolClient, id: string): Promise<MonitorRow[]> {
  const r = await c.query<MonitorRow>(
    `SELECT m.* FROM monitors m JOIN maintenance_monitors mm ON mm.monitor_id = m.id
      WHERE mm.maintenance_id = $1 ORDER BY m.id FOR UPDATE OF m`,
    [id],
  );
  return r.rows;
}

/** Fires the occurrence's notice if this transaction is the one that claims it. */
async function claimAndNotify(
  deps: Deps,
  c: PoolClient,
  w: MaintenanceRow,
  kind: "started" | "completed",
  monitors: MonitorRow[],
  at: Date,
  now: Date,
): Promise<void> {
  const claimed = await c.query(
    `INSERT INTO maintenance_occurrences (maintenance_id, starts_at, kind, created_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING`,
    [w.id, w.occ_start, kind, now],
  );
  if (!claimed.rowCount) return;
  const notice: IncidentNotice = {
    type: kind === "started" ? "maintenance.started" : "maintenance.completed",
    projectId: w.project_id,
    dedupeKey: `${w.id}:${w.occ_start!.toISOString()}:${kind}`,
    payload: {
      maintenance: {
        id: w.id,
        title: w.title,
        description: w.description,
        startsAt: w.occ_start!.toISOString(),
        endsAt: w.occ_end!.toISOString(),
      },
      monitors: monitors.map((m) => ({ id: m.id, name: m.name, slug: m.slug })),
    },
    at,
  };
  for (const listener of deps.incidentListeners) await listener(c, notice);
}

/** Starts the window's current occurrence: its monitors enter maintenance (no deadline). */
async function startOccurrence(
  deps: Deps,
  c: PoolClient,
  w: MaintenanceRow,
  now: Date,
  wakes = true,
): Promise<DeadlineChange[]> {
  const monitors = await lockMonitors(c, w.id);
  const changes: DeadlineChange[] = [];
  for (const m of monitors) {
    const next = { ...stateOf(m), inMaintenance: true };
    const deadlineAt = dueAt(next);
    await c.query("UPDATE monitors SET in_maintenance = true, deadline_at = $2, updated_at = $3 WHERE id = $1", [
      m.id,
      deadlineAt === null ? null : new Date(deadlineAt),
      now,
    ]);
    await c.query(
      `INSERT INTO monitor_maintenances (monitor_id, maintenance_id, started_at) VALUES ($1, $2, $3)
       ON CONFLICT DO NOTHING`,
      [m.id, w.id, w.occ_start],
    );
    changes.push({ id: m.id, deadlineAt, wake: false, statusChanged: true });
  }
  if (wakes) await notifyWake(c, changes, deps.config.temporal !== undefined);
  await c.query("UPDATE maintenances SET active = true, due_at = occ_end, updated_at = $2 WHERE id = $1", [w.id, now]);
  await claimAndNotify(deps, c, w, "started", monitors, w.occ_start!, now);
  return changes;
}

/**
 * Ends the window's occurrence at `end`: its monitors leave maintenance unless another active window
 * names them, and their deadline counts from `end`; the window moves to its next occurrence.
 */
async function endOccurrence(
  deps: Deps,
  c: PoolClient,
  w: MaintenanceRow,
  end: Date,
  now: Date,
  wakes = true,
): Promise<DeadlineChange[]> {
  const monitors = await lockMonitors(c, w.id);
  const others = await c.query<{ monitor_id: string }>(
    `SELECT DISTINCT mm.monitor_id FROM maintenance_monitors mm JOIN maintenances x ON x.id = mm.maintenance_id
      WHERE x.active AND x.id <> $1 AND mm.monitor_id = ANY($2::text[])`,
    [w.id, monitors.map((m) => m.id)],
  );
  const still = new Set(others.rows.map((r) => r.monitor_id));
  const changes: DeadlineChange[] = [];
  for (const m of monitors) {
    const inMaintenance = still.has(m.id);
    const endedAt = inMaintenance ? m.maintenance_ended_at : end;
    const next = { ...stateOf(m), inMaintenance, maintenanceEndedAt: endedAt?.getTime() ?? null };
    const deadlineAt = dueAt(next);
    await c.query(
      `UPDATE monitors SET in_maintenance = $2, maintenance_ended_at = $3, deadline_at = $4, updated_at = $5
        WHERE id = $1`,
      [m.id, inMaintenance, endedAt, deadlineAt === null ? null : new Date(deadlineAt), now],
    );
    changes.push({
      id: m.id,
      deadlineAt,
      wake: needsWake(m.deadline_at?.getTime() ?? null, deadlineAt),
      statusChanged: true,
    });
  }
  await c.query(
    "UPDATE monitor_maintenances SET ended_at = $2 WHERE maintenance_id = $1 AND started_at = $3 AND ended_at IS NULL",
    [w.id, end, w.occ_start],
  );
  if (wakes) await notifyWake(c, changes, deps.config.temporal !== undefined);
  const o = occurrenceCols(occurrenceAt(timesOf(w), Math.max(end.getTime(), w.occ_end!.getTime())));
  await c.query(
    `UPDATE maintenances SET active = false, occ_start = $2, occ_end = $3, due_at = $4, updated_at = $5 WHERE id = $1`,
    [w.id, o.occ_start, o.occ_end, o.due_at, now],
  );
  await announce(c, w.id, o.due_at?.getTime() ?? null);
  await claimAndNotify(deps, c, w, "completed", monitors, end, now);
  return changes;
}

/**
 * Applies every transition of the window that is due (start, end, next start...), one transaction
 * each under the row lock; returns the window as it is after them (undefined: deleted).
 * `wakes: false`: the caller times the monitors' deadlines itself right after (Temporal's deadline
 * scan reads them once the windows are applied), so no wake is written for them: in Temporal mode a
 * wake is an outbox row signalling the monitor's workflow, whose shown status a window does not
 * change, and a burst of windows would otherwise send a signal per monitor of each.
 */
export async function advance(
  deps: Deps,
  hooks: MaintenanceHooks,
  id: string,
  opts: { wakes: boolean } = { wakes: true },
): Promise<MaintenanceRow | undefined> {
  for (let i = 0; i < 10; i++) {
    const now = deps.clock();
    const r = await tx(deps.db, async (c) => {
      const w = await lockWindow(c, id);
      if (!w || w.due_at === null || w.due_at.getTime() > now.getTime()) return { w, changes: null };
      const changes = w.active
        ? await endOccurrence(deps, c, w, w.occ_end!, now, opts.wakes)
        : await startOccurrence(deps, c, w, now, opts.wakes);
      return { w: (await c.query<MaintenanceRow>("SELECT * FROM maintenances WHERE id = $1", [id])).rows[0], changes };
    });
    if (r.changes === null) {
      hooks.due(id, r.w?.due_at?.getTime() ?? null);
      return r.w;
    }
    if (r.changes.length) hooks.changed(r.changes);
  }
  const last = await deps.db.query<MaintenanceRow>("SELECT * FROM maintenances WHERE id = $1", [id]);
  hooks.due(id, last.rows[0]?.due_at?.getTime() ?? null);
  return last.rows[0];
}

/**
 * Temporal mode: the deadline scan (workflows/deadlines.ts, its local activity in activities.ts)
 * applies the windows due at `now`, oldest first, at most `limit` (each as the embedded timer does:
 * advance(), under the window's row lock with its claim row, so once whichever node's scan runs it),
 * and reads the next due time after them. `more`: a full batch was due. `wakes`: see advance() (the
 * scan reads the deadlines itself; the reconciler, which does not, has them woken).
 */
export async function advanceDueWindows(
  deps: Deps,
  hooks: MaintenanceHooks,
  now: Date,
  limit: number,
  wakes: boolean,
): Promise<{ applied: number; more: boolean; next: number | null }> {
  // The earliest windows: the due ones among them, or, when none is due, the next due time (one
  // query on the scan's common path).
  const first = await deps.db.query<{ id: string; due_at: Date }>(
    "SELECT id, due_at FROM maintenances WHERE due_at IS NOT NULL ORDER BY due_at LIMIT $1",
    [limit],
  );
  const due = first.rows.filter((r) => r.due_at.getTime() <= now.getTime());
  if (!due.length) return { applied: 0, more: false, next: first.rows[0]?.due_at.getTime() ?? null };
  await forEachLimited(due, WINDOWS_AT_ONCE, async ({ id }) => {
    // One window's failure (an outage, a bug) must not hold up the others or the monitors' deadlines
    // after them: it stays due, and the next scan tries it again.
    await advance(deps, hooks, id, { wakes }).catch((err: unknown) =>
      deps.log.warn({ err, maintenanceId: id }, "maintenance transition failed; retried by the next scan"),
    );
  });
  const next = await deps.db.query<{ next: Date | null }>("SELECT min(due_at) AS next FROM maintenances");
  return { applied: due.length, more: due.length === limit, next: next.rows[0]?.next?.getTime() ?? null };
}

export async function maintenanceById(q: Queryable, projectId: string, id: string) {
  const r = await q.query<MaintenanceRow>("SELECT * FROM maintenances WHERE id = $1 AND project_id = $2", [
    id,
    projectId,
  ]);
  return r.rows[0];
}

export async function listMaintenances(q: Queryable, projectId: string): Promise<MaintenanceRow[]> {
  const r = await q.query<MaintenanceRow>("SELECT * FROM maintenances WHERE project_id = $1 ORDER BY created_at, id", [
    projectId,
  ]);
  return r.rows;
}

/** Each window's monitor ids, in id order. */
export async function maintenanceMonitorIds(q: Queryable, ids: string[]): Promise<Map<string, string[]>> {
  const r = await q.query<{ maintenance_id: string; monitor_id: string }>(
    "SELECT maintenance_id, monitor_id FROM maintenance_monitors WHERE maintenance_id = ANY($1::text[]) ORDER BY monitor_id",
    [ids],
  );
  const out = new Map<string, string[]>();
  for (const x of r.rows) out.set(x.maintenance_id, [...(out.get(x.maintenance_id) ?? []), x.monitor_id]);
  return out;
}
