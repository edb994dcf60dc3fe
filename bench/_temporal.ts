// What the benches need to measure Vigil's Temporal runner next to the embedded one (bench/run.ts
// skips files starting with "_"): a `temporal server start-dev` of their own (the test helper's
// startTemporal, which finds or obtains the official CLI), a database per Vigil process on one
// embedded PostgreSQL, Vigil processes started as `npm start` runs them, and history counts.
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { Client, Connection } from "@temporalio/client";
import pg from "pg";
import { startTemporal, type TemporalServer } from "../test/helpers/temporal.js";
import { freePort, processCpuSeconds, spawnVigil } from "./_shared.js";

export interface BenchTemporal {
  server: TemporalServer;
  client: Client;
  /** CPU seconds used so far by the dev server process. */
  cpu(): number;
  stop(): Promise<void>;
}

/** A dev server (in memory, Vigil's search attributes) and a client of it. */
export async function startBenchTemporal(): Promise<BenchTemporal> {
  const server = await startTemporal();
  const connection = await Connection.connect({ address: server.address });
  const pid = serverPid(server.port);
  return {
    server,
    client: new Client({ connection }),
    cpu: () => (pid ? safeCpu(pid) : NaN),
    async stop() {
      await connection.close().catch(() => undefined);
      await server.stop();
    },
  };
}

/** The pid of the `temporal server start-dev --port <port>` process (from /proc). */
function serverPid(port: number): number | undefined {
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (argv.includes("start-dev") && argv[argv.indexOf("--port") + 1] === String(port)) return Number(pid);
    } catch {
      /* exited meanwhile */
    }
  }
  return undefined;
}

function safeCpu(pid: number): number {
  try {
    return processCpuSeconds(pid);
  } catch {
    return NaN;
  }
}

/** A new database on the embedded PostgreSQL of `url`; the URL of the new database. */
export async function createDatabase(url: string, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export interface BenchVigil {
  port: number;
  metricsPort: number;
  child: ChildProcess;
  pid: number;
  /** CPU seconds used so far by the process. */
  cpu(): number;
  /** The Prometheus text of GET /metrics (Vigil's and, in Temporal mode, the SDK's). */
  metrics(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts Vigil as `npm start` runs it, on `databaseUrl`, and waits until /health answers and, when
 * `env.TEMPORAL_ADDRESS` is set, until its Temporal workers run.
 */
export async function startVigil(
  databaseUrl: string,
  dataDir: string,
  env: Record<string, string>,
): Promise<BenchVigil> {
  const port = await freePort();
  const metricsPort = await freePort();
  // BENCH_PROFILE=<dir>: a V8 CPU profile of each Vigil process, written when it stops (bench/_cpuprofile.ts reads it).
  const nodeFlags = process.env.BENCH_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawnVigil({
    databaseUrl,
    port,
    dataDir,
    nodeFlags,
    env: { METRICS_PORT: String(metricsPort), ...env },
  });
  const temporal = Boolean(env.TEMPORAL_ADDRESS);
  let ready = false;
  for (let i = 0; i < 900 && !ready; i++) {
    if (child.exitCode !== null) throw new Error(`vigil exited (${child.exitCode}) during start-up`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/health`);
      const body = r.status === 200 ? await r.json() : undefined;
      ready = Boolean(body) && (!temporal || (body.temporalWorker ?? body.data?.temporalWorker) === "running");
    } catch {
      /* starting */
    }
    if (!ready) await new Promise((r) => setTimeout(r, 100));
  }
  if (!ready) {
    child.kill("SIGKILL");
    throw new Error(`vigil did not become ready in 90 s${temporal ? " (Temporal workers not running)" : ""}`);
  }
  return {
    port,
    metricsPort,
    child,
    pid: child.pid!,
    cpu: () => safeCpu(child.pid!),
    metrics: async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await done;
      clearTimeout(t);
    },
  };
}

/** Sum of every sample of a Prometheus metric (all label sets) whose labels contain `match`. */
export function metricSum(text: string, name: string, match = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith("{") || rest.startsWith(" "))) continue;
    if (match && !rest.includes(match)) continue;
    const v = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}

/** A protobuf int64 (a Long or a number) as a number. */
const num = (x: unknown) =>
  typeof x === "object" && x && "toNumber" in x ? (x as { toNumber(): number }).toNumber() : Number(x ?? 0);
const longMs = (seconds: unknown, nanos: number | null | undefined) => num(seconds) * 1000 + (nanos ?? 0) / 1e6;

/** The SDK's workflow-task figures of one task queue (suffix ".deadlines", ".uptime" or ".webhooks") in a /metrics text. */
export function workflowTaskStats(
  text: string,
  queue: string,
): { tasks: number; execSeconds: number; waitSeconds: number; waits: number; cacheMisses: number } {
  const q = `${queue}"`;
  return {
    tasks: metricSum(text, "temporal_workflow_task_execution_latency_count", q),
    execSeconds: metricSum(text, "temporal_workflow_task_execution_latency_sum", q),
    waits: metricSum(text, "temporal_workflow_task_schedule_to_start_latency_count", q),
    waitSeconds: metricSum(text, "temporal_workflow_task_schedule_to_start_latency_sum", q),
    cacheMisses: metricSum(text, "temporal_sticky_cache_miss_total", q),
  };
}

/** Between two workflowTaskStats: tasks, mean execution and mean schedule-to-start (ms), cache misses. */
export function workflowTaskDelta(a: ReturnType<typeof workflowTaskStats>, b: ReturnType<typeof workflowTaskStats>) {
  const tasks = b.tasks - a.tasks;
  const waits = b.waits - a.waits;
  return {
    tasks,
    execMs: tasks ? ((b.execSeconds - a.execSeconds) / tasks) * 1000 : NaN,
    waitMs: waits ? ((b.waitSeconds - a.waitSeconds) / waits) * 1000 : NaN,
    cacheMisses: b.cacheMisses - a.cacheMisses,
  };
}

type HistoryEvent = NonNullable<
  Awaited<ReturnType<ReturnType<Client["workflow"]["getHandle"]>["fetchHistory"]>>["events"]
>[number];

/** Adds each event to its window's count by kind ("workflowTaskCompleted", ...), by its eventTime. */
function countEvents(list: HistoryEvent[], windows: [number, number][], events: Record<string, number>[]): void {
  for (const e of list) {
    const t = e.eventTime ? longMs(e.eventTime.seconds, e.eventTime.nanos) : NaN;
    const i = windows.findIndex(([from, to]) => t >= from && t < to);
    if (i < 0) continue;
    const kind =
      Object.keys(e)
        .find((k) => k.endsWith("EventAttributes") && (e as Record<string, unknown>)[k])
        ?.replace(/EventAttributes$/, "") ?? "unknown";
    events[i][kind] = (events[i][kind] ?? 0) + 1;
  }
}

/** History events by kind (e.g. "workflowTaskCompleted"), summed over workflows, per time window [from, to) of eventTime. */
export async function historyCounts(
  client: Client,
  workflowIds: string[],
  windows: [number, number][],
): Promise<{ workflows: number; events: Record<string, number>[] }> {
  const events: Record<string, number>[] = windows.map(() => ({}));
  let workflows = 0;
  const queue = [...workflowIds];
  const work = async () => {
    for (let id = queue.shift(); id; id = queue.shift()) {
      let h;
      try {
        h = await client.workflow.getHandle(id).fetchHistory();
      } catch {
        continue; // no such workflow
      }
      workflows++;
      countEvents(h.events ?? [], windows, events);
    }
  };
  await Promise.all(Array.from({ length: 8 }, work));
  return { workflows, events };
}

/** Every run of a workflow id (a continue-as-new chain), newest first, from visibility. */
async function runsOf(client: Client, workflowId: string): Promise<string[]> {
  const runs: string[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(w.runId);
  return runs;
}

/** History events by kind of every run of one workflow id, per time window [from, to) of eventTime. */
export async function chainHistoryCounts(
  client: Client,
  workflowId: string,
  windows: [number, number][],
): Promise<{ runs: number; events: Record<string, number>[] }> {
  const events: Record<string, number>[] = windows.map(() => ({}));
  const runs = await runsOf(client, workflowId);
  for (const runId of runs) {
    const h = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    countEvents(h.events ?? [], windows, events);
  }
  return { runs: runs.length, events };
}

export interface DetectionParts {
  /** The wake of the scan that took the monitor down (its timer fired, or a signal) minus the deadline (0 when it woke before). */
  wait: number[];
  /** The incident's created_at minus that wake: workflow task, local activity (the scan), database. */
  worker: number[];
  /** Monitors taken down with no scan wake before their incident (the reconciler). */
  other: number;
}

/**
 * Where a Temporal detection delay goes, per monitor taken down, from the deadline scan's histories
 * (every run of the chain): the last wake of the scan (TimerFired or WorkflowExecutionSignaled, or a
 * run's start) before the incident was written.
 */
export async function detectionParts(
  client: Client,
  scanWorkflowId: string,
  downs: { deadline: number; created: number }[],
): Promise<DetectionParts> {
  const parts: DetectionParts = { wait: [], worker: [], other: 0 };
  const wakes: number[] = [];
  for (const runId of await runsOf(client, scanWorkflowId)) {
    const h = await client.workflow.getHandle(scanWorkflowId, runId).fetchHistory();
    for (const e of h.events ?? []) {
      if (
        e.timerFiredEventAttributes ||
        e.workflowExecutionSignaledEventAttributes ||
        e.workflowExecutionStartedEventAttributes
      ) {
        wakes.push(e.eventTime ? longMs(e.eventTime.seconds, e.eventTime.nanos) : NaN);
      }
    }
  }
  wakes.sort((a, b) => a - b);
  for (const d of downs) {
    // The last wake before the incident (binary search).
    let lo = 0;
    let hi = wakes.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (wakes[mid] <= d.created) lo = mid + 1;
      else hi = mid;
    }
    const wake = wakes[lo - 1];
    if (wake === undefined || d.created - wake > 60_000) {
      parts.other++;
      continue;
    }
    parts.wait.push(Math.max(0, wake - d.deadline));
    parts.worker.push(d.created - wake);
  }
  return parts;
}

export function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * q))] : NaN;
}

export const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–");
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
