// The Temporal part of `npm run bench uptime` (bench/uptime.ts calls temporalUptime()): Vigil with
// TEMPORAL_ADDRESS set on a `temporal server start-dev` of its own, next to Vigil's embedded runner,
// with paced heartbeats (each monitor beats once per interval at its own phase, bench/_pacer.ts).
//  1. Down-detection delay (incident created_at - deadline) at 1,000 and 10,000 watched monitors with
//     the default interval and grace, for both runners (two Vigil processes, one database each, run
//     at the same time so both see the same machine; --sequential runs one after the other). 10% of
//     the monitors stop beating: those whose next beat is due first, so their deadlines come
//     interval+grace-interval after the stop.
//  2. Temporal load per monitor per deadline period (history events by kind, on every monitor of
//     the phase, counted in a window), with steady heartbeats at the interval and at twice that rate,
//     and per monitor going down.
//  3. Ramp: the highest monitor count the dev server carries with detection p99 < 1 s, on a fresh
//     server, with a short interval, stopping at the first failure.
import os from "node:os";
import path from "node:path";
import type { Client } from "@temporalio/client";
import pg from "pg";
import { Pacer } from "./_pacer.js";
import { postgresCpuSeconds, setupProject } from "./_shared.js";
import {
  chainHistoryCounts,
  createDatabase,
  detectionParts,
  fmt,
  historyCounts,
  pct,
  workflowTaskDelta,
  workflowTaskStats,
  type DetectionParts,
  sleep,
  startBenchTemporal,
  startVigil,
  type BenchTemporal,
  type BenchVigil,
} from "./_temporal.js";

export interface TemporalUptimeOptions {
  /** URL of the bench's embedded PostgreSQL (a database per Vigil process is created there). */
  pgUrl: string;
  tmp: string;
  quick: boolean;
  sequential: boolean;
  pool: string;
}

const STOP_FRACTION = 0.1;
const SAMPLE_MAX = 1_000;

interface Settings {
  scale: number;
  intervalMs: number;
  graceMs: number;
  sizes: number[];
  ramp: number[];
  rampIntervalMs: number;
  rampGraceMs: number;
  loadMonitors: number;
  loadIntervalMs: number;
  loadGraceMs: number;
}

function settings(quick: boolean): Settings {
  const scale = Number(process.env.BENCH_SCALE ?? (quick ? 0.1 : 1));
  const n = (x: number) => Math.max(20, Math.round(x * scale));
  return {
    scale,
    intervalMs: Number(process.env.BENCH_TEMPORAL_INTERVAL_MS ?? (quick ? 10_000 : 60_000)),
    graceMs: Number(process.env.BENCH_TEMPORAL_GRACE_MS ?? (quick ? 5_000 : 30_000)),
    sizes: [1_000, 10_000].map(n),
    ramp: (process.env.BENCH_RAMP ?? "250,500,1000,2000,5000,10000")
      .split(",")
      .map((x) => n(Number(x)))
      .filter((x, i, a) => a.indexOf(x) === i),
    rampIntervalMs: Number(process.env.BENCH_RAMP_INTERVAL_MS ?? 5_000),
    rampGraceMs: Number(process.env.BENCH_RAMP_GRACE_MS ?? 2_000),
    loadMonitors: Math.max(50, Math.round(500 * scale)),
    loadIntervalMs: 1_000,
    loadGraceMs: 5_000,
  };
}

export interface Rig {
  runner: "embedded" | "Temporal";
  vigil: BenchVigil;
  db: pg.Client;
  temporal?: BenchTemporal;
}

export async function startRig(o: TemporalUptimeOptions, dbName: string, temporal?: BenchTemporal): Promise<Rig> {
  const url = await createDatabase(o.pgUrl, dbName);
  const vigil = await startVigil(url, path.join(o.tmp, dbName), {
    PG_POOL_SIZE: o.pool,
    MAX_MONITORS_PER_PROJECT: "100000",
    RATE_LIMIT_HEARTBEATS_PER_MINUTE: "100000000",
    RATE_LIMIT_WRITES_PER_MINUTE: "100000000",
    ...(temporal ? { TEMPORAL_ADDRESS: temporal.server.address } : {}),
  });
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  return { runner: temporal ? "Temporal" : "embedded", vigil, db, temporal };
}

export async function stopRig(r: Rig | undefined): Promise<void> {
  if (!r) return;
  await r.db.end().catch(() => undefined);
  await r.vigil.stop().catch(() => undefined);
}

interface Phase {
  rig: Rig;
  pacer: Pacer;
  projectId: string;
  key: string;
}

async function startPhase(rig: Rig, intervalMs: number, graceMs: number, prefix: string): Promise<Phase> {
  const { key, projectId } = await setupProject(rig.vigil.port);
  const pacer = new Pacer(
    rig.vigil.port,
    key,
    projectId,
    intervalMs,
    JSON.stringify({ expectedIntervalMs: intervalMs, gracePeriodMs: graceMs }),
    prefix,
  );
  return { rig, pacer, projectId, key };
}

/** CPU seconds of the Vigil process, the dev server and every PostgreSQL process, now. */
function cpuNow(rig: Rig) {
  return {
    vigil: rig.vigil.cpu(),
    temporal: rig.temporal?.cpu() ?? NaN,
    pg: postgresCpuSeconds(),
    at: performance.now(),
  };
}
function cores(a: ReturnType<typeof cpuNow>, b: ReturnType<typeof cpuNow>) {
  const s = (b.at - a.at) / 1000;
  return { vigil: (b.vigil - a.vigil) / s, temporal: (b.temporal - a.temporal) / s, pg: (b.pg - a.pg) / s };
}

interface StageResult {
  runner: string;
  watched: number;
  stopped: number;
  delays: number[];
  /** Beating monitors taken down in the steady state (after the creations were absorbed). */
  flaps: number;
  /** ... and while the new monitors were created and absorbed. */
  creationFlaps: number;
  heartbeatsPerSecond: number;
  lateP99: number;
  errors: string;
  cores: { vigil: number; temporal: number; pg: number };
  /** Temporal: workflow tasks completed by the worker per second during the stage (SDK metrics). */
  workflowTasksPerSecond: number;
  stickyCacheMisses: number;
  /** Temporal: mean workflow task execution and schedule-to-start (ms), from the SDK's metrics. */
  wftExecMs: number;
  wftWaitMs: number;
  /** Temporal: how long after the last creation the new monitors' workflows were all started and checked (ms). */
  absorbMs: number;
  /** Temporal: the deadline scan's workflow tasks per second, mean execution and schedule-to-start (ms). */
  scanTasksPerSecond: number;
  scanExecMs: number;
  scanWaitMs: number;
  /** Temporal: where the delay went. */
  parts?: DetectionParts;
}

/** The SDK's workflow-task figures of the uptime task queue (Temporal mode; zeros otherwise). */
const uptimeTasks = (m: string) => workflowTaskStats(m, ".uptime");
const scanTasks = (m: string) => workflowTaskStats(m, ".deadlines");

/** How long a stage waits for its new monitors' workflows before it goes on regardless (and a ramp step fails). */
const ABSORB_MAX_MS = Number(process.env.BENCH_ABSORB_MAX_MS ?? 300_000);

/**
 * Waits until the monitors just created have their workflows (Temporal mode): the wake outbox is
 * empty and the monitor workflows' queue completes fewer than 5 tasks in 2 s. Returns the wait (ms),
 * Infinity when that did not happen within ABSORB_MAX_MS.
 */
export async function absorbed(rig: Rig): Promise<number> {
  const began = performance.now();
  while (performance.now() - began < ABSORB_MAX_MS) {
    const left = (await rig.db.query<{ n: number }>("SELECT count(*)::int AS n FROM monitor_wakes")).rows[0].n;
    const a = uptimeTasks(await rig.vigil.metrics()).tasks;
    await sleep(2_000);
    const b = uptimeTasks(await rig.vigil.metrics()).tasks;
    if (left === 0 && b - a < 5) return performance.now() - began;
  }
  return Infinity;
}

/** The id of the deadline scan workflow of the (only) Vigil deployment on this dev server. */
async function scanId(client: Client): Promise<string> {
  for (let i = 0; i < 50; i++) {
    for await (const w of client.workflow.list({ query: "WorkflowType = 'deadlineScanWorkflow'" })) return w.workflowId;
    await sleep(200);
  }
  throw new Error("no deadline scan workflow");
}

/**
 * Brings the phase to `watched` beating monitors (new ones created over spreadMs), waits settleMs,
 * stops the 10% due first and measures how long after its deadline each is taken down.
 */
async function detectionStage(
  ph: Phase,
  watched: number,
  spreadMs: number,
  settleMs: number,
  deadlineMs: number,
): Promise<StageResult> {
  const { pacer, rig } = ph;
  const since = new Date();
  pacer.add(Math.max(0, watched - pacer.beating()), spreadMs);
  await sleep(spreadMs + settleMs);
  for (let i = 0; i < 600 && !pacer.allCreated(); i++) await sleep(100);
  const absorbMs = rig.temporal ? await absorbed(rig) : 0;
  // Measured from here: steady heartbeats, the stop and the detection.
  const steadySince = new Date();
  const c0 = cpuNow(rig);
  const m0 = await rig.vigil.metrics();
  pacer.resetStats();
  const k = Math.max(1, Math.round(watched * STOP_FRACTION));
  const slugs = pacer.stopNextDue(k);
  const ids = (
    await rig.db.query<{ id: string }>("SELECT id FROM monitors WHERE project_id = $1 AND slug = ANY($2::text[])", [
      ph.projectId,
      slugs,
    ])
  ).rows.map((r) => r.id);
  const cap = Date.now() + deadlineMs + 20_000;
  while (Date.now() < cap) {
    const down = (
      await rig.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM monitors WHERE id = ANY($1::text[]) AND status = 'down'",
        [ids],
      )
    ).rows[0].n;
    if (down >= ids.length) break;
    await sleep(200);
  }
  const c1 = cpuNow(rig);
  const m1 = await rig.vigil.metrics();
  const incidents = (
    await rig.db.query<{ monitor_id: string; started_at: Date; created_at: Date }>(
      "SELECT monitor_id, started_at, created_at FROM incidents WHERE monitor_id = ANY($1::text[]) AND created_at >= $2",
      [ids, since],
    )
  ).rows;
  const delays = incidents.map((r) => r.created_at.getTime() - r.started_at.getTime());
  const parts = rig.temporal
    ? await detectionParts(
        rig.temporal.client,
        await scanId(rig.temporal.client),
        incidents.map((r) => ({ deadline: r.started_at.getTime(), created: r.created_at.getTime() })),
      )
    : undefined;
  // Beating monitors taken down: while the new monitors were created and absorbed, and in the steady state.
  const flapsSince = async (from: Date) =>
    (
      await rig.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM incidents WHERE project_id = $1 AND created_at >= $2 AND NOT (monitor_id = ANY($3::text[]))",
        [ph.projectId, from, ids],
      )
    ).rows[0].n;
  const flaps = await flapsSince(steadySince);
  const creationFlaps = (await flapsSince(since)) - flaps;
  const seconds = (c1.at - c0.at) / 1000;
  const wft = workflowTaskDelta(uptimeTasks(m0), uptimeTasks(m1));
  const scan = workflowTaskDelta(scanTasks(m0), scanTasks(m1));
  const r: StageResult = {
    runner: rig.runner,
    watched,
    stopped: ids.length,
    delays,
    flaps,
    creationFlaps,
    heartbeatsPerSecond: pacer.rate(),
    lateP99: pct(pacer.late, 0.99),
    errors: pacer.errors ? `${pacer.errors} heartbeats failed (last: ${pacer.lastError})` : "",
    cores: cores(c0, c1),
    workflowTasksPerSecond: wft.tasks / seconds,
    stickyCacheMisses: wft.cacheMisses,
    wftExecMs: wft.execMs,
    wftWaitMs: wft.waitMs,
    absorbMs,
    scanTasksPerSecond: scan.tasks / seconds,
    scanExecMs: scan.execMs,
    scanWaitMs: scan.waitMs,
    parts,
  };
  console.log(
    `${rig.runner} ${watched} monitors: detected ${delays.length}/${ids.length}, p50 ${fmt(pct(delays, 0.5))} ms, p99 ${fmt(pct(delays, 0.99))} ms, flaps ${creationFlaps} while creating / ${flaps} steady, ${fmt(r.heartbeatsPerSecond)} heartbeats/s, late p99 ${fmt(r.lateP99)} ms, ${fmt(r.workflowTasksPerSecond)} monitor workflow tasks/s (mean execution ${fmt(r.wftExecMs)} ms, schedule-to-start ${fmt(r.wftWaitMs)} ms), ${fmt(r.scanTasksPerSecond)} scan tasks/s (${fmt(r.scanExecMs)} / ${fmt(r.scanWaitMs)} ms) ${r.errors}`,
  );
  return r;
}

interface LoadWindow {
  heartbeatPeriodMs: number;
  heartbeatsPerSecond: number;
  /** History events per monitor per deadline period, by kind, and in all. */
  perPeriod: Record<string, number>;
  /** The deadline scan's events per monitor per deadline period (its whole load shared by the monitors), and per second. */
  scanShare: number;
  scanPerSecond: number;
  /** Monitor workflows' events and the scan's share. */
  total: number;
  workflowTasksPerMonitorPeriod: number;
}

interface LoadResult {
  monitors: number;
  deadlineMs: number;
  windowMs: number;
  windows: LoadWindow[];
  /** History events per monitor from its stop to 1 s after it was taken down. */
  perDown: Record<string, number>;
  perDownTotal: number;
  downs: number;
}

const KINDS = [
  "workflowTaskScheduled",
  "workflowTaskStarted",
  "workflowTaskCompleted",
  "markerRecorded",
  "timerStarted",
  "timerFired",
  "workflowExecutionSignaled",
  "upsertWorkflowSearchAttributes",
  "activityTaskScheduled",
];

/** Temporal load with steady heartbeats at the interval, then at twice that rate, then per monitor going down. */
async function loadPhase(rig: Rig, s: Settings): Promise<LoadResult> {
  const client = rig.temporal!.client;
  const h = s.loadIntervalMs;
  const deadlineMs = s.loadIntervalMs + s.loadGraceMs;
  const windowMs = 3 * deadlineMs;
  const ph = await startPhase(rig, h, s.loadGraceMs, "load-");
  const { pacer } = ph;
  pacer.add(s.loadMonitors, h);
  await sleep(h + deadlineMs + 1_000); // created; every workflow past its first wake
  await absorbed(rig); // and every new monitor's workflow started and checked: the steady state
  const ids = (
    await rig.db.query<{ id: string; slug: string }>("SELECT id, slug FROM monitors WHERE project_id = $1", [
      ph.projectId,
    ])
  ).rows;
  const windows: { from: number; to: number; period: number; rate: number; tasks: number }[] = [];
  for (const period of [h, h / 2]) {
    if (period !== h) {
      pacer.retime(period);
      await sleep(deadlineMs); // every workflow woke once under the new rate
    }
    pacer.resetStats();
    const m0 = await rig.vigil.metrics();
    const from = Date.now();
    await sleep(windowMs);
    const to = Date.now();
    const m1 = await rig.vigil.metrics();
    windows.push({
      from,
      to,
      period,
      rate: pacer.rate(),
      tasks: uptimeTasks(m1).tasks - uptimeTasks(m0).tasks + scanTasks(m1).tasks - scanTasks(m0).tasks,
    });
    console.log(`load window: heartbeats every ${period} ms, ${fmt(pacer.rate())} heartbeats/s`);
  }
  // A state change: the 10% due first stop beating and go down.
  const slugs = new Set(pacer.stopNextDue(Math.max(5, Math.round(s.loadMonitors * STOP_FRACTION))));
  const stopAt = Date.now();
  const downIds = ids.filter((r) => slugs.has(r.slug)).map((r) => r.id);
  for (let i = 0; i < (deadlineMs + 10_000) / 200; i++) {
    const n = (
      await rig.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM monitors WHERE id = ANY($1::text[]) AND status = 'down'",
        [downIds],
      )
    ).rows[0].n;
    if (n >= downIds.length) break;
    await sleep(200);
  }
  await sleep(1_000);
  const downTo = Date.now();
  pacer.stopAll();
  await pacer.close();
  const wf = (list: string[]) => list.slice(0, SAMPLE_MAX).map((id) => `monitor-${id}`);
  const steadyIds = ids.map((r) => r.id);
  const result: LoadResult = {
    monitors: s.loadMonitors,
    deadlineMs,
    windowMs,
    windows: [],
    perDown: {},
    perDownTotal: 0,
    downs: downIds.length,
  };
  const counts = await historyCounts(
    client,
    wf(steadyIds),
    windows.map((w) => [w.from, w.to]),
  );
  const scanCounts = await chainHistoryCounts(
    client,
    await scanId(client),
    windows.map((w) => [w.from, w.to]),
  );
  for (const [i, w] of windows.entries()) {
    const hc = { workflows: counts.workflows, events: counts.events[i] };
    const periods = hc.workflows * ((w.to - w.from) / deadlineMs);
    const perPeriod: Record<string, number> = {};
    for (const [k, v] of Object.entries(hc.events)) perPeriod[k] = v / periods;
    const scanEvents = Object.values(scanCounts.events[i]).reduce((a, b) => a + b, 0);
    const scanShare = scanEvents / (steadyIds.length * ((w.to - w.from) / deadlineMs));
    result.windows.push({
      scanShare,
      scanPerSecond: scanEvents / ((w.to - w.from) / 1000),
      heartbeatPeriodMs: w.period,
      heartbeatsPerSecond: w.rate,
      perPeriod,
      total: Object.values(hc.events).reduce((a, b) => a + b, 0) / periods + scanShare,
      workflowTasksPerMonitorPeriod: w.tasks / (steadyIds.length * ((w.to - w.from) / deadlineMs)),
    });
  }
  const hdAll = await historyCounts(client, wf(downIds), [[stopAt, downTo]]);
  const hd = { workflows: hdAll.workflows, events: hdAll.events[0] };
  for (const [k, v] of Object.entries(hd.events)) result.perDown[k] = v / Math.max(1, hd.workflows);
  result.perDownTotal = Object.values(hd.events).reduce((a, b) => a + b, 0) / Math.max(1, hd.workflows);
  // End the phase's workflows (a pause ends the watch) so that what follows runs without them.
  const agentless = async (id: string) =>
    fetch(`http://127.0.0.1:${rig.vigil.port}/v1/projects/${ph.projectId}/monitors/${id}/pause`, {
      method: "POST",
      headers: { authorization: `Bearer ${ph.key}`, "content-type": "application/json" },
      body: "{}",
    });
  const queue = [...steadyIds];
  let pauseFailures = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let id = queue.shift(); id; id = queue.shift()) if ((await agentless(id)).status !== 200) pauseFailures++;
    }),
  );
  if (pauseFailures) console.warn(`load phase: ${pauseFailures} monitors could not be paused`);
  await sleep(3_000);
  console.log("load", JSON.stringify(result));
  return result;
}

interface RampStep extends StageResult {
  passed: boolean;
}

async function ramp(rig: Rig, s: Settings): Promise<RampStep[]> {
  const h = s.rampIntervalMs;
  const deadlineMs = s.rampIntervalMs + s.rampGraceMs;
  const ph = await startPhase(rig, h, s.rampGraceMs, "ramp-");
  const steps: RampStep[] = [];
  try {
    for (const n of s.ramp) {
      const r = await detectionStage(ph, n, h, deadlineMs, deadlineMs);
      const passed =
        r.delays.length === r.stopped &&
        pct(r.delays, 0.99) < 1_000 &&
        r.flaps === 0 &&
        r.creationFlaps === 0 &&
        Number.isFinite(r.absorbMs);
      steps.push({ ...r, passed });
      if (!passed) break;
    }
  } finally {
    await ph.pacer.close();
  }
  return steps;
}

// ---------------------------------------------------------------------------------------------

export async function temporalUptime(o: TemporalUptimeOptions): Promise<string> {
  const s = settings(o.quick);
  const deadlineMs = s.intervalMs + s.graceMs;
  let t1: BenchTemporal | undefined;
  let t2: BenchTemporal | undefined;
  let emb: Rig | undefined;
  let tem: Rig | undefined;
  let rampRig: Rig | undefined;
  const began = performance.now();
  let load: LoadResult;
  const stages: StageResult[][] = [];
  let steps: RampStep[];
  try {
    console.log(
      `temporal uptime: scale ${s.scale}, interval ${s.intervalMs} ms, grace ${s.graceMs} ms, sizes ${s.sizes.join("/")}, ramp ${s.ramp.join("/")}`,
    );
    t1 = await startBenchTemporal();
    [emb, tem] = await Promise.all([startRig(o, "bench_embedded"), startRig(o, "bench_temporal", t1)]);

    // 2 first: its monitors are paused (their workflows end) before the detection stages begin.
    load = await loadPhase(tem, s);

    // 1. Detection at each size, both runners.
    const phases = await Promise.all([
      startPhase(emb, s.intervalMs, s.graceMs, "m-"),
      startPhase(tem, s.intervalMs, s.graceMs, "m-"),
    ]);
    for (const n of s.sizes) {
      const run = (ph: Phase) => detectionStage(ph, n, s.intervalMs, 0, deadlineMs);
      stages.push(o.sequential ? [await run(phases[0]), await run(phases[1])] : await Promise.all(phases.map(run)));
    }
    await Promise.all(phases.map((p) => p.pacer.close()));
    await Promise.all([stopRig(emb), stopRig(tem)]);
    emb = tem = undefined;
    await t1.stop();
    t1 = undefined;

    // 3. Ramp on a fresh dev server.
    t2 = await startBenchTemporal();
    rampRig = await startRig(o, "bench_ramp", t2);
    steps = await ramp(rampRig, s);
  } finally {
    await Promise.all([stopRig(emb), stopRig(tem), stopRig(rampRig)]);
    await t1?.stop().catch(() => undefined);
    await t2?.stop().catch(() => undefined);
  }
  return section(o, s, load, stages, steps, (performance.now() - began) / 1000);
}

// ---------------------------------------------------------------------------------------------

function section(
  o: TemporalUptimeOptions,
  s: Settings,
  load: LoadResult,
  stages: StageResult[][],
  steps: RampStep[],
  seconds: number,
): string {
  const deadlineMs = s.intervalMs + s.graceMs;
  const fullScale = s.scale === 1 && s.intervalMs === 60_000 && s.graceMs === 30_000;
  const p = (d: number[], q: number) => fmt(pct(d, q));
  const wft = (r: StageResult) =>
    `scan ${fmt(r.scanTasksPerSecond)} (${fmt(r.scanExecMs)} / ${fmt(r.scanWaitMs)}); monitors ${fmt(r.workflowTasksPerSecond)} (${fmt(r.wftExecMs)} / ${fmt(r.wftWaitMs)})`;
  const pp = (d: number[]) => (d.length ? `${p(d, 0.5)} / ${p(d, 0.99)}` : "–");
  const stageLine = (r: StageResult) =>
    `| ${fmt(r.watched)} | ${r.runner} | ${r.runner === "Temporal" ? (Number.isFinite(r.absorbMs) ? (r.absorbMs / 1000).toFixed(0) : `not in ${ABSORB_MAX_MS / 1000}`) : "–"} | ${fmt(r.delays.length)}/${fmt(r.stopped)} | ${p(r.delays, 0.5)} | **${p(r.delays, 0.99)}** | ${fmt(Math.max(...r.delays))} | ${r.creationFlaps} / ${r.flaps} | ${fmt(r.heartbeatsPerSecond)} | ${fmt(r.lateP99)} | ${r.cores.vigil.toFixed(2)} | ${Number.isFinite(r.cores.temporal) ? r.cores.temporal.toFixed(2) : "–"} | ${r.cores.pg.toFixed(2)} | ${r.runner === "Temporal" ? wft(r) : "–"} |`;
  const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(1)}x` : "–");
  const ratios = stages.map(
    ([e, t]) =>
      `at ${fmt(e.watched)} monitors p50 **${ratio(pct(t.delays, 0.5), pct(e.delays, 0.5))}**, p99 **${ratio(pct(t.delays, 0.99), pct(e.delays, 0.99))}**`,
  );
  const last = stages[stages.length - 1]?.[1];
  const kinds = KINDS.filter((k) => load.windows.some((w) => w.perPeriod[k]) || load.perDown[k]);
  const lw = load.windows;
  const loadRatio = lw.length === 2 && lw[0].total ? lw[1].total / lw[0].total : NaN;
  const passed = steps.filter((x) => x.passed);
  const failed = steps.find((x) => !x.passed);
  const errors = [...stages.flat(), ...steps].map((r) => r.errors).filter(Boolean);
  const cacheMisses = [...stages.flat(), ...steps]
    .filter((r) => r.runner === "Temporal")
    .reduce((a, r) => a + r.stickyCacheMisses, 0);
  return [
    `Command: \`npm run bench uptime\` (bench/uptime.ts with bench/_uptime-temporal.ts), run ${new Date().toISOString().slice(0, 16)}Z in ${Math.round(seconds)} s${fullScale ? "" : ` — **reduced run** (BENCH_SCALE=${s.scale}, interval ${s.intervalMs} ms, grace ${s.graceMs} ms): not the figures of record`}.`,
    "",
    `Vigil with \`TEMPORAL_ADDRESS\` set (default settings: the deadline scan at most every \`TEMPORAL_SCAN_GAP_MS\`=250 ms, \`TEMPORAL_RECONCILE_MS\`=30 s) on its own`,
    "`temporal server start-dev` (in memory, Vigil's search attributes), next to Vigil with its embedded runner; one Vigil",
    `process and one database each, on one embedded PostgreSQL (PG_POOL_SIZE=${o.pool}), the dev server and the load generator`,
    `on the same 2 shared cores (1-minute load average when written: ${os.loadavg()[0].toFixed(1)}). Heartbeats are paced: each monitor`,
    "beats once per interval at its own phase (created by its first heartbeat, spread over one interval). CPU in cores",
    "(CPU seconds / wall seconds) over the stage; PostgreSQL is every database of the cluster (backends that exit during a stage",
    "are not counted). Workflow tasks: the worker's SDK metrics on the deadline scan's queue and on the monitor workflows' queue",
    "(per second, mean execution including the local activity, mean schedule-to-start).",
    "",
    `### Down-detection delay, interval ${fmt(s.intervalMs)} ms + grace ${fmt(s.graceMs)} ms${s.intervalMs === 60_000 && s.graceMs === 30_000 ? " (the defaults)" : ""}`,
    "",
    `Each stage grows the monitors to the size shown (new ones spread over one interval); in Temporal mode it then waits until every new monitor's`,
    "workflow is started and has checked its monitor (the wake outbox empty, the monitor workflows' queue quiet: the column says how long after",
    "the last creation), so what follows is the steady state; then it stops the " +
      Math.round(STOP_FRACTION * 100) +
      "% whose next heartbeat is due first while the",
    `others keep beating (CPU, rates and tasks are measured from there); delay = incident \`created_at\` minus \`startedAt\` (the deadline, ${fmt(deadlineMs)} ms after the last heartbeat).`,
    o.sequential
      ? "The two runners ran one after the other."
      : "Both runners ran at the same time, so both see the same machine state (each also carries the other's load; `--sequential` runs them one after the other).",
    "",
    "| Monitors | Runner | New monitors' workflows started in (s) | Detected | p50 ms | p99 ms | max ms | Beating monitors taken down (while creating / steady) | Heartbeats/s | Heartbeat send lateness p99 ms | Vigil CPU | Dev server CPU | PostgreSQL CPU | Workflow tasks/s (mean execution / schedule-to-start ms) |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...stages.flat().map(stageLine),
    "",
    `Ratios Temporal / embedded: ${ratios.join("; ")}.`,
    last
      ? `Target: detection p99 < 1 s at ${fmt(last.watched)} monitors with the ${fullScale ? "default" : "reduced"} interval and grace, Temporal runner: ${pct(last.delays, 0.99) < 1_000 && last.delays.length === last.stopped ? "met" : "**not met**"}.`
      : "",
    "",
    "Where the Temporal runner's delay goes (p50 / p99 ms, from the deadline scan's histories, every run of its chain): the scan that",
    "took the monitor down woke *wait* after the deadline (its timer fired or a wake signal arrived; scans are at least",
    "TEMPORAL_SCAN_GAP_MS apart), and the incident was written *worker* after that wake (workflow task, the scan's local activity, database).",
    "",
    "| Stage | Scan wake after the deadline | Wake to incident | Taken down with no scan wake before (the reconciler) |",
    "|---|---|---|---|",
    ...[...stages.flat(), ...steps]
      .filter((r) => r.parts)
      .map(
        (r) =>
          `| ${fmt(r.watched)} monitors${steps.includes(r as RampStep) ? " (ramp)" : ""} | ${pp(r.parts!.wait)} | ${pp(r.parts!.worker)} | ${r.parts!.other} |`,
      ),
    "",
    "",
    `### Temporal load per monitor: history events per deadline period`,
    "",
    `${fmt(load.monitors)} monitors (interval ${fmt(s.loadIntervalMs)} ms + grace ${fmt(s.loadGraceMs)} ms: deadline period ${fmt(load.deadlineMs)} ms), heartbeats steady;`,
    `events of every monitor's workflow history whose \`eventTime\` falls in a ${fmt(load.windowMs / 1000)} s window, divided by monitors × (window / deadline period),`,
    "and the deadline scan's events in the same window (every run of its chain) shared out the same way. Workflow tasks per monitor per",
    "period are also counted by the worker (SDK metric, the scan's and the monitor workflows' queues).",
    "",
    `| Heartbeats | Heartbeats/s | Monitor workflows: ${kinds.join(" | ")} | Deadline scan: share | Deadline scan: events/s | All events | Workflow tasks (SDK) |`,
    `|---|---|${kinds.map(() => "---|").join("")}---|---|---|---|`,
    ...lw.map(
      (w) =>
        `| every ${fmt(w.heartbeatPeriodMs)} ms | ${fmt(w.heartbeatsPerSecond)} | ${kinds.map((k) => (w.perPeriod[k] ?? 0).toFixed(2)).join(" | ")} | ${w.scanShare.toFixed(2)} | ${w.scanPerSecond.toFixed(1)} | **${w.total.toFixed(2)}** | ${w.workflowTasksPerMonitorPeriod.toFixed(2)} |`,
    ),
    `| one monitor going down (from its stop to detection + 1 s; ${load.downs} monitors) | – | ${kinds.map((k) => (load.perDown[k] ?? 0).toFixed(2)).join(" | ")} | – | – | **${load.perDownTotal.toFixed(2)}** | – |`,
    "",
    `Doubling the heartbeat rate: events per monitor per deadline period **${Number.isFinite(loadRatio) ? `${loadRatio.toFixed(2)}x` : "–"}** (target: load independent of the heartbeat rate, < 1.2x: ${loadRatio < 1.2 ? "met" : "**not met**"}).`,
    "A heartbeat never reaches Temporal, and a steady monitor's workflow never wakes (it waits for a change, re-reading its",
    "monitor every TEMPORAL_IDLE_CHECK_MS); one deadline scan times every monitor's deadline, at most one scan per",
    "TEMPORAL_SCAN_GAP_MS (each a workflow task and about 6 events), however many monitors and heartbeats. A monitor going down",
    "costs the scan's take-down and a wake of its workflow (check, search-attribute upsert).",
    "",
    `### Ramp: monitors the dev server carries with detection p99 < 1 s`,
    "",
    `A fresh dev server and Vigil (Temporal runner); interval ${fmt(s.rampIntervalMs)} ms + grace ${fmt(s.rampGraceMs)} ms (heartbeats grow with the monitors: ${fmt((1000 * (s.ramp[s.ramp.length - 1] ?? 0)) / s.rampIntervalMs)}/s at the last step).`,
    `Each step grows the beating monitors to its size (new ones spread over one interval), runs one deadline`,
    `period more, then stops ${Math.round(STOP_FRACTION * 100)}% as above. A step fails when a p99 is >= 1 s, a stopped monitor is not detected, a beating one is taken down,`,
    `or its new monitors' workflows are not all started within ${ABSORB_MAX_MS / 1000} s.`,
    "",
    "| Beating monitors | New monitors' workflows started in (s) | Workflow tasks/s (mean execution / schedule-to-start ms) | Detected | p50 ms | p99 ms | max ms | Beating monitors taken down (while creating / steady) | Heartbeats/s | Heartbeat send lateness p99 ms | Vigil CPU | Dev server CPU | PostgreSQL CPU | Result |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...steps.map(
      (r) =>
        `| ${fmt(r.watched)} | ${Number.isFinite(r.absorbMs) ? (r.absorbMs / 1000).toFixed(0) : `not in ${ABSORB_MAX_MS / 1000}`} | ${wft(r)} | ${fmt(r.delays.length)}/${fmt(r.stopped)} | ${p(r.delays, 0.5)} | **${p(r.delays, 0.99)}** | ${fmt(Math.max(...r.delays))} | ${r.creationFlaps} / ${r.flaps} | ${fmt(r.heartbeatsPerSecond)} | ${fmt(r.lateP99)} | ${r.cores.vigil.toFixed(2)} | ${r.cores.temporal.toFixed(2)} | ${r.cores.pg.toFixed(2)} | ${r.passed ? "pass" : "**fail**"} |`,
    ),
    "",
    passed.length
      ? `Highest steady count with detection p99 < 1 s: **${fmt(passed[passed.length - 1].watched)} monitors** at a ${fmt(s.rampIntervalMs)} ms interval${failed ? `; the next step, ${fmt(failed.watched)}, failed` : "; no step failed (the ramp ended)"}.`
      : `No step passed: the dev server did not carry ${fmt(steps[0]?.watched ?? 0)} monitors with detection p99 < 1 s at this interval.`,
    cacheMisses
      ? `Sticky cache misses of the worker (workflows replayed from history, SDK metric) over all Temporal stages: ${fmt(cacheMisses)}.`
      : "",
    errors.length ? `Heartbeat failures: ${errors.join("; ")}.` : "",
    "",
  ].join("\n");
}
