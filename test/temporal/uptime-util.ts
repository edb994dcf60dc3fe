import { Client, Connection, WorkflowNotFoundError } from "@temporalio/client";
import type { RestClient } from "../helpers/rest.js";

// Helpers of the live uptime end-to-end tests (test/temporal/uptime-*.test.ts): a Temporal client,
// bounded polling, the worker's readiness, percentiles and a workflow's history by event kind.

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls fn until it returns a truthy value (a throw counts as not yet); fails after timeoutMs with
 * the last error (a bound, not a timing assertion).
 */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | false | null>,
  timeoutMs: number,
  label: string,
  everyMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}${last ? `: ${String(last)}` : ""}`);
    await sleep(everyMs);
  }
}

/** Waits until the node's Temporal worker runs (GET /health `temporalWorker: "running"`). */
export async function workerRunning(rest: RestClient, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    async () => (await rest.get("/health")).body?.temporalWorker === "running",
    timeoutMs,
    "temporalWorker running",
    100,
  );
}

export async function temporalClient(address: string): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({ address });
  return { client: new Client({ connection }), close: () => connection.close() };
}

export const monitorWorkflowId = (id: string) => `monitor-${id}`;

/** The history of the current (or given) run of a workflow, as event kinds (e.g. "workflowExecutionSignaled"). */
export async function historyKinds(client: Client, workflowId: string, runId?: string): Promise<string[]> {
  const h = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (h.events ?? []).map(
    (e) =>
      Object.keys(e)
        .find((k) => k.endsWith("EventAttributes") && (e as any)[k])
        ?.replace(/EventAttributes$/, "") ?? "unknown",
  );
}

/** The workflow's description, or undefined when Temporal has no such workflow. */
export async function describeOrNone(client: Client, workflowId: string) {
  try {
    return await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/** Nearest-rank percentile of a list of numbers. */
export function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export const ms = (iso: string) => Date.parse(iso);

/**
 * Dynamic config of the test servers: `history.timerProcessorMaxTimeShift` (default 1 s) lets the
 * server's timer queue fire a timer created shortly after another one fired up to ~1 s late (measured
 * on the dev server: a 250 ms timer fired 760 ms late; p99 detection 1,034 ms over 50 monitors). At
 * 10 ms timers fire within ~30 ms. A deployment that wants sub-second deadlines needs the same.
 */
export const PRECISE_TIMERS = { "history.timerProcessorMaxTimeShift": "10ms" } as const;
