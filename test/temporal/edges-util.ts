import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Client } from "@temporalio/client";
import type { temporal } from "@temporalio/proto";
import pg from "pg";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { startTemporal, type TemporalServer } from "../helpers/temporal.js";
import { temporalClient, waitFor, workerRunning } from "./uptime-util.js";

// Helpers of the Temporal edge tests (test/temporal/edges-*.test.ts): each file runs its own dev
// server (it stops, kills or restarts it) and talks to Vigil over REST on a real port.

export { sleep, temporalClient, waitFor, workerRunning } from "./uptime-util.js";

/** One file's live setup: its own dev server (with a database file, so restart() keeps its workflows), a Vigil in Temporal mode on a fresh database, a project. */
export interface EdgeSuite {
  srv: TemporalServer;
  t: TestApp;
  p: ProjectFixture;
  db: pg.Pool;
  tc: { client: Client; close(): Promise<void> };
}

/** `env`: more settings of the Vigil node (e.g. TEMPORAL_PROBE_MS). */
export async function startEdgeSuite(reconcileMs: number, env: Record<string, string> = {}): Promise<EdgeSuite> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "vigil-temporal-"));
  const srv = await startTemporal({ dbFile: path.join(dir, "temporal.db") });
  const t = await startTestApp({
    TEMPORAL_ADDRESS: srv.address,
    TEMPORAL_MIN_DEADLINE_MS: "100",
    TEMPORAL_RECONCILE_MS: String(reconcileMs),
    ...env,
  });
  const db = database(t.databaseUrl);
  const tc = await temporalClient(srv.address);
  await workerRunning(t.rest);
  const p = await project(t.rest);
  return { srv, t, p, db, tc };
}

export async function stopEdgeSuite(s: Partial<EdgeSuite>): Promise<void> {
  await s.t?.close();
  await s.tc?.close().catch(() => undefined);
  await s.db?.end();
  await s.srv?.stop();
}

type Event = temporal.api.history.v1.IHistoryEvent;
export const EventType = {
  SIGNALED: 26, // EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
  TIMER_STARTED: 17,
  TIMER_FIRED: 18,
  WFT_STARTED: 6,
} as const;

/** Every event of the workflow's current (or given) run. */
export async function historyOf(client: Client, workflowId: string, runId?: string): Promise<Event[]> {
  const h = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return h.events ?? [];
}

export const eventTime = (e: Event) =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);

/** The database of a test (pool closed with end()). */
export function database(url: string): pg.Pool {
  return new pg.Pool({ connectionString: url, max: 2 });
}

export interface IncidentRow {
  started_at: Date;
  created_at: Date;
  ended_at: Date | null;
}

export async function incidentsOf(db: pg.Pool, monitorId: string): Promise<IncidentRow[]> {
  return (
    await db.query<IncidentRow>(
      "SELECT started_at, created_at, ended_at FROM incidents WHERE monitor_id = $1 ORDER BY started_at",
      [monitorId],
    )
  ).rows;
}

/** Waits for the monitor's first incident opened at or after `since` (epoch ms) and returns it. */
export async function incidentAfter(
  db: pg.Pool,
  monitorId: string,
  since: number,
  timeoutMs: number,
  label: string,
): Promise<IncidentRow> {
  return waitFor(
    async () => (await incidentsOf(db, monitorId)).find((i) => i.started_at.getTime() >= since),
    timeoutMs,
    label,
  );
}

export async function wakesLeft(db: pg.Pool): Promise<number> {
  return (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM monitor_wakes")).rows[0].n;
}

/** Waits until the workflow's current run is closed with this status (e.g. COMPLETED). */
export async function runClosed(
  client: Client,
  workflowId: string,
  status: string,
  timeoutMs: number,
  label: string,
): Promise<{ runId: string; closeTime?: Date }> {
  return waitFor(
    async () => {
      const d = await client.workflow.getHandle(workflowId).describe();
      return d.status.name === status ? { runId: d.runId, closeTime: d.closeTime } : undefined;
    },
    timeoutMs,
    label,
    100,
  );
}
