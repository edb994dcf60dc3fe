import { Client, Connection } from "@temporalio/client";
import type { temporal } from "@temporalio/proto";
import pg from "pg";
import type { RestClient } from "../helpers/rest.js";

// Helpers of the Temporal edge tests (test/temporal/edges-*.test.ts): each file runs its own dev
// server (it stops, kills or restarts it) and talks to Vigil over REST on a real port.

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls fn until it returns a truthy value; fails after timeoutMs (a bound, not a timing assertion). */
export async function waitFor<T>(fn: () => Promise<T | undefined | false | null>, timeoutMs: number, label: string, everyMs = 50): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}${last ? `: ${String(last)}` : ""}`);
    await sleep(everyMs);
  }
}

/** /health until this node's Temporal workers run. */
export async function workerRunning(rest: RestClient, timeoutMs = 60_000): Promise<void> {
  await waitFor(async () => (await rest.get("/health")).body?.temporalWorker === "running", timeoutMs, "temporalWorker running", 100);
}

/** A client of the test's own dev server (its connection is closed with close()). */
export async function temporalClient(address: string): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({ address });
  return { client: new Client({ connection }), close: () => connection.close() };
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

export const eventTime = (e: Event) => Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);

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
  return (await db.query<IncidentRow>("SELECT started_at, created_at, ended_at FROM incidents WHERE monitor_id = $1 ORDER BY started_at", [monitorId])).rows;
}

/** Waits for the monitor's first incident opened at or after `since` (epoch ms) and returns it. */
export async function incidentAfter(db: pg.Pool, monitorId: string, since: number, timeoutMs: number, label: string): Promise<IncidentRow> {
  return waitFor(async () => (await incidentsOf(db, monitorId)).find((i) => i.started_at.getTime() >= since), timeoutMs, label);
}

export async function wakesLeft(db: pg.Pool): Promise<number> {
  return (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM monitor_wakes")).rows[0].n;
}

/** Waits until the workflow's current run is closed with this status (e.g. COMPLETED). */
export async function runClosed(client: Client, workflowId: string, status: string, timeoutMs: number, label: string): Promise<{ runId: string; closeTime?: Date }> {
  return waitFor(async () => {
    const d = await client.workflow.getHandle(workflowId).describe();
    return d.status.name === status ? { runId: d.runId, closeTime: d.closeTime } : undefined;
  }, timeoutMs, label, 100);
}
