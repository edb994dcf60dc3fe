import type { PoolClient } from "pg";
import type { UptimeDeps } from "./deps.js";
import { conflict, notFound } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import { isUniqueViolation } from "../shared/pg-errors.js";
import { tx } from "../storage/db.js";
import { lockMonitorCreation, monitorCapReached, monitorCounts } from "./cap.js";
import { openIncidents, resolveIncidents } from "./incidents.js";
import { applyPause, applyResume, applySettings, needsWake, slugify, type MonitorState } from "./model.js";
import type { Schedule } from "./schedule.js";
import { monitorById, stateOf, stateSets, stateValues, type MonitorRow } from "./store.js";
import { notifyWake, type DeadlineChange } from "./wake.js";

// Monitor administration: create, update, delete, pause, resume. Each state change locks the row,
// decides with the pure functions of model.ts and announces a new or earlier deadline.

export interface CreateInput {
  name: string;
  slug?: string;
  type: string;
  /** Absent: the default (60 s), kept unused while a schedule is set. */
  expectedIntervalMs?: number;
  gracePeriodMs: number;
  schedule?: Schedule;
  maxRuntimeMs?: number;
  failureTolerance: number;
  metadata: Record<string, unknown>;
  tags: Record<string, unknown>;
}

/** As CreateInput, every field optional; `maxRuntimeMs: 0` clears the limit. */
export type UpdateInput = Partial<CreateInput>;

const DEFAULT_INTERVAL_MS = 60_000;

type Changed = (changes: DeadlineChange[]) => void;

export async function createMonitor(deps: UptimeDeps, projectId: string, input: CreateInput): Promise<MonitorRow> {
  const now = deps.clock();
  const max = deps.config.uptime.maxMonitorsPerProject;
  return tx(deps.db, async (c) => {
    // Count and insert under the project's creation lock: concurrent creations cannot pass the cap.
    await lockMonitorCreation(c, [projectId]);
    if (((await monitorCounts(c, [projectId])).get(projectId) ?? 0) >= max) throw monitorCapReached(max);
    return insertMonitor(c, projectId, input, now);
  });
}

/** Inserts a monitor (after the caller took the creation lock and checked the cap, as createMonitor does). */
export async function insertMonitor(
  c: PoolClient,
  projectId: string,
  input: CreateInput,
  now: Date,
): Promise<MonitorRow> {
  const insert = (slug: string) =>
    c.query<MonitorRow>(
      `INSERT INTO monitors (id, project_id, slug, name, type, status, expected_interval_ms, grace_period_ms, metadata, tags, created_at, updated_at,
                             schedule_cron, schedule_timezone, max_runtime_ms, failure_tolerance)
       VALUES ($1, $2, $3, $4, $5, 'unknown', $6, $7, $8, $9, $10, $10, $11, $12, $13, $14) ON CONFLICT (project_id, slug) DO NOTHING RETURNING *`,
      [
        newId("mon"),
        projectId,
        slug,
        input.name,
        input.type,
        input.expectedIntervalMs ?? DEFAULT_INTERVAL_MS,
        input.gracePeriodMs,
        input.metadata,
        input.tags,
        now,
        input.schedule?.cron ?? null,
        input.schedule?.timezone ?? null,
        input.maxRuntimeMs ?? null,
        input.failureTolerance,
      ],
    );
  if (input.slug !== undefined) {
    const r = await insert(input.slug);
    if (!r.rows[0])
      throw conflict(`a monitor with slug '${input.slug}' already exists in this project`, [
        { field: "slug", message: "already used" },
      ]);
    return r.rows[0];
  }
  // A slug made from the name gets a numeric suffix when taken ("api", "api-2", ...).
  const base = slugify(input.name);
  for (let i = 1; i <= 100; i++) {
    const r = await insert(i === 1 ? base : `${base}-${i}`);
    if (r.rows[0]) return r.rows[0];
  }
  const r = await insert(`${base}-${newId("x").slice(2, 10).toLowerCase()}`);
  if (!r.rows[0]) throw conflict("could not make a unique slug from the name; give one");
  return r.rows[0];
}

async function change(
  deps: UptimeDeps,
  projectId: string,
  id: string,
  changed: Changed,
  fn: (c: PoolClient, row: MonitorRow, now: Date) => Promise<MonitorState | undefined>,
): Promise<MonitorRow> {
  const now = deps.clock();
  const { row, delta } = await tx(deps.db, async (c) => {
    const before = await monitorById(c, projectId, id, true);
    if (!before) throw notFound("monitor");
    const next = await fn(c, before, now);
    if (!next) return { row: before, delta: undefined };
    const r = await c.query<MonitorRow>(
      `UPDATE monitors SET ${stateSets(3)}, updated_at = $2 WHERE id = $1 RETURNING *`,
      [id, now, ...stateValues(next)],
    );
    const delta: DeadlineChange = {
      id,
      deadlineAt: next.deadlineAt,
      wake: needsWake(before.deadline_at?.getTime() ?? null, next.deadlineAt),
      statusChanged: before.status !== next.status,
    };
    await notifyWake(c, [delta], deps.config.temporal !== undefined);
    return { row: r.rows[0], delta };
  });
  if (delta) changed([delta]);
  return row;
}

export async function updateMonitor(
  deps: UptimeDeps,
  projectId: string,
  id: string,
  input: UpdateInput,
  changed: Changed,
): Promise<MonitorRow> {
  try {
    return await change(deps, projectId, id, changed, async (c, row) => {
      const sets: string[] = [];
      const values: unknown[] = [id];
      for (const [col, v] of [
        ["name", input.name],
        ["slug", input.slug],
        ["type", input.type],
        ["metadata", input.metadata],
        ["tags", input.tags],
      ] as const) {
        if (v === undefined) continue;
        values.push(v);
        sets.push(`${col} = $${values.length}`);
      }
      if (sets.length) await c.query(`UPDATE monitors SET ${sets.join(", ")} WHERE id = $1`, values);
      return applySettings(stateOf(row), {
        expectedIntervalMs: input.expectedIntervalMs,
        gracePeriodMs: input.gracePeriodMs,
        schedule: input.schedule,
        maxRuntimeMs: input.maxRuntimeMs === undefined ? undefined : input.maxRuntimeMs || null,
        failureTolerance: input.failureTolerance,
      });
    });
  } catch (err) {
    if (isUniqueViolation(err))
      throw conflict(`a monitor with slug '${input.slug}' already exists in this project`, [
        { field: "slug", message: "already used" },
      ]);
    throw err;
  }
}

/** Pausing resolves an open incident without a notification and records the pause period. */
export function pauseMonitor(deps: UptimeDeps, projectId: string, id: string, changed: Changed): Promise<MonitorRow> {
  return change(deps, projectId, id, changed, async (c, row, now) => {
    if (row.status === "paused") return undefined;
    const { next, openIncidentAt, resolveIncidentAt } = applyPause(stateOf(row), now.getTime());
    if (openIncidentAt !== null)
      await openIncidents(deps, c, [{ monitor: row, startedAt: new Date(openIncidentAt) }], now);
    if (resolveIncidentAt !== null)
      await resolveIncidents(deps, c, [{ monitor: row, endedAt: new Date(resolveIncidentAt) }], now, { notify: false });
    await c.query("INSERT INTO monitor_pauses (monitor_id, paused_at) VALUES ($1, $2) ON CONFLICT DO NOTHING", [
      id,
      now,
    ]);
    return next;
  });
}

/** Resuming gives `unknown`; the deadline counts from the later of the last heartbeat and now. */
export function resumeMonitor(deps: UptimeDeps, projectId: string, id: string, changed: Changed): Promise<MonitorRow> {
  return change(deps, projectId, id, changed, async (c, row, now) => {
    if (row.status !== "paused") return undefined;
    await c.query("UPDATE monitor_pauses SET resumed_at = $2 WHERE monitor_id = $1 AND resumed_at IS NULL", [id, now]);
    return applyResume(stateOf(row), now.getTime());
  });
}

export async function deleteMonitor(deps: UptimeDeps, projectId: string, id: string, changed: Changed): Promise<void> {
  const gone: DeadlineChange = { id, deadlineAt: null, wake: false, deleted: true };
  await tx(deps.db, async (c) => {
    const r = await c.query("DELETE FROM monitors WHERE id = $1 AND project_id = $2", [id, projectId]);
    if (!r.rowCount) throw notFound("monitor");
    await notifyWake(c, [gone], deps.config.temporal !== undefined);
  });
  changed([gone]);
}
