// `npm run bench uptime`: 10,000 heartbeat monitors with 1 s intervals over HTTP on 127.0.0.1.
//  1. Vigil (a child process, embedded scheduler) creates the monitors on their first heartbeat, then
//     takes heartbeats round-robin for all of them: heartbeats/s accepted, latency, CPU and memory.
//  2. Heartbeats stop for STOPPED monitors while the others keep beating: the delay between each
//     deadline and its detection (incident created_at - startedAt, both server clock), p50/p99/max.
//  3. Baseline, same run, same database and load generator: a naive service with one transaction per
//     heartbeat (lock, update, insert, commit; no group commit), and a 1 s polling detector
//     (UPDATE ... WHERE status = 'up' AND deadline_at <= now() every second) for the detection delay.
//  4. Temporal mode (bench/_uptime-temporal.ts): detection at 1,000 and 10,000 monitors with the default
//     interval and grace for Temporal and embedded runners side by side, Temporal history events per
//     monitor per deadline period at two heartbeat rates, and a ramp to the most monitors the dev
//     server carries with detection p99 < 1 s. Flags: --quick, --temporal-only, --no-temporal,
//     --sequential; BENCH_SCALE and the other knobs are described in docs/benchmarks.md.
//  5. Scheduled monitors (bench/_uptime-scheduled.ts, issue #32): 10,000 cron monitors next to 10,000
//     interval ones; run signals/s against heartbeats/s, and detection in both runners. Flags:
//     --scheduled-only, --no-scheduled.
// Bounded: each phase stops at its time cap. Loopback only.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import pino from "pino";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import { scheduledUptime } from "./_uptime-scheduled.js";
import { temporalUptime } from "./_uptime-temporal.js";
import {
  freePort,
  post,
  postgresCpuSeconds,
  postmasterPid,
  processCpuSeconds,
  setupProject,
  spawnVigil,
  waitHealthy,
  writeBenchSection,
} from "./_shared.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1";
/** --temporal-only: only the Temporal-mode part (bench/_uptime-temporal.ts); --no-temporal: only the embedded runner against the baseline. */
const SCHEDULED_ONLY = process.argv.includes("--scheduled-only");
const EMBEDDED = !process.argv.includes("--temporal-only") && !SCHEDULED_ONLY;
const TEMPORAL = !process.argv.includes("--no-temporal");
/** The scheduled monitors' part: both runners (the embedded one only with --no-temporal). */
const SCHEDULED =
  SCHEDULED_ONLY || (!process.argv.includes("--no-scheduled") && !process.argv.includes("--temporal-only"));
const MONITORS = QUICK ? 2_000 : 10_000;
const STOPPED = QUICK ? 200 : 1_000;
const INTERVAL_MS = 1_000;
// The spec's default grace (30 s): monitors stay up as long as each gets a heartbeat within 31 s.
const GRACE_MS = QUICK ? 5_000 : 30_000;
// 10,000 monitors beating every second are 10,000 independent senders: 128 keep-alive clients is a
// modest stand-in (BENCH_UPTIME_CONCURRENCY to change it). Vigil and the baseline get the same.
const CONCURRENCY = Number(process.env.BENCH_UPTIME_CONCURRENCY ?? 128);
/** PG_POOL_SIZE of the service (the baseline's pool is the same size). */
const POOL = process.env.BENCH_PG_POOL ?? "10";
const STEADY_MS = QUICK ? 5_000 : 12_000;
const DETECT_CAP_MS = GRACE_MS + INTERVAL_MS + 15_000;

// ---------------------------------------------------------------------------------------------
// Baseline service: one transaction per heartbeat (run as `bench/uptime.ts --naive-server port url projectId`)
// ---------------------------------------------------------------------------------------------
async function naiveServer(port: number, url: string, projectId: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: Number(POOL) });
  const beat = async (slug: string) => {
    const c = await pool.connect();
    try {
      await c.query("BEGIN");
      const m = await c.query(
        "SELECT id, expected_interval_ms, grace_period_ms FROM monitors WHERE project_id = $1 AND slug = $2 FOR UPDATE",
        [projectId, slug],
      );
      const row = m.rows[0];
      const now = new Date();
      await c.query(
        "UPDATE monitors SET status = 'up', last_heartbeat_at = $2, deadline_at = $3, updated_at = $2 WHERE id = $1",
        [row.id, now, new Date(now.getTime() + Number(row.expected_interval_ms) + Number(row.grace_period_ms))],
      );
      await c.query("INSERT INTO heartbeats (id, monitor_id, at, status, metadata) VALUES ($1, $2, $3, 'up', '{}')", [
        `hb_naive_${Math.random().toString(36).slice(2)}`,
        row.id,
        now,
      ]);
      await c.query("COMMIT");
    } catch (err) {
      await c.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  };
  http
    .createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        beat(decodeURIComponent((req.url ?? "").split("/").pop() ?? "")).then(
          () => res.writeHead(200, { "content-type": "application/json" }).end('{"data":{"accepted":true}}'),
          (err) => res.writeHead(500).end(String(err)),
        );
      });
    })
    .listen(port, "127.0.0.1");
}

// ---------------------------------------------------------------------------------------------
// Load generation and process sampling
// ---------------------------------------------------------------------------------------------

/** Resident memory of a process (MB), from /proc. */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

interface LoadResult {
  genCores: number;
  requests: number;
  seconds: number;
  perSecond: number;
  p50ms: number;
  p99ms: number;
  cpuCores: number;
  /** CPU of every PostgreSQL process during the phase (cores). */
  pgCores: number;
  peakRssMb: number;
}

/** Heartbeats round-robin over monitors [from, MONITORS) until `until()` says stop or capMs passes. */
async function load(
  port: number,
  key: string,
  projectId: string,
  from: number,
  capMs: number,
  pid: number,
  until: () => boolean = () => false,
  body = "{}",
): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const latencies: number[] = [];
  let next = from;
  let done = 0;
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 200);
  const cpu0 = processCpuSeconds(pid);
  const pg0 = postgresCpuSeconds(pgPid);
  const gen0 = process.cpuUsage();
  const started = performance.now();
  const end = started + capMs;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end && !until()) {
        const i = next;
        next = next + 1 >= MONITORS ? from : next + 1;
        const t0 = performance.now();
        const r = await post(agent, port, `/v1/projects/${projectId}/heartbeats/m-${i}`, body, key);
        latencies.push(performance.now() - t0);
        if (r.status !== 200) throw new Error(`heartbeat: ${r.status} ${r.text.slice(0, 200)}`);
        done++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const cpu = processCpuSeconds(pid) - cpu0;
  const pgCpu = postgresCpuSeconds(pgPid) - pg0;
  const gen = process.cpuUsage(gen0);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    genCores: (gen.user + gen.system) / 1e6 / seconds,
    requests: done,
    seconds,
    perSecond: done / seconds,
    p50ms: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
    p99ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    cpuCores: cpu / seconds,
    pgCores: pgCpu / seconds,
    peakRssMb: Math.max(peak, rssMb(pid)),
  };
}

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * q))] : NaN;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const loadLine = (name: string, r: LoadResult) =>
  `| ${name} | ${fmt(r.requests)} | ${r.seconds.toFixed(1)} | **${fmt(r.perSecond)}** | ${r.p50ms.toFixed(1)} | ${r.p99ms.toFixed(1)} | ${r.cpuCores.toFixed(2)} | ${r.pgCores.toFixed(2)} | ${((1e6 * (r.cpuCores + r.pgCores)) / r.perSecond).toFixed(0)} | ${Math.round(r.peakRssMb)} | ${r.genCores.toFixed(2)} |`;
const delayLine = (name: string, d: number[]) =>
  `| ${name} | ${fmt(d.length)} | ${fmt(pct(d, 0.5))} | **${fmt(pct(d, 0.99))}** | ${fmt(Math.max(...d))} |`;

// ---------------------------------------------------------------------------------------------
/** Vigil (embedded runner) against the naive baseline: the "Uptime" section. */
async function embeddedAndBaseline(pgUrl: string, db: pg.Client, tmp: string, children: ChildProcess[]): Promise<void> {
  const vigilPort = await freePort();
  const metricsPort = await freePort();
  const profile = process.env.BENCH_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const vigil = spawnVigil({
    databaseUrl: pgUrl,
    port: vigilPort,
    dataDir: path.join(tmp, "vigil"),
    nodeFlags: profile,
    env: {
      METRICS_PORT: String(metricsPort),
      PG_POOL_SIZE: POOL,
      MAX_MONITORS_PER_PROJECT: String(MONITORS),
      RATE_LIMIT_HEARTBEATS_PER_MINUTE: "100000000",
    },
  });
  children.push(vigil);
  await waitHealthy(vigilPort, vigil);
  const { key, projectId } = await setupProject(vigilPort);
  await db.connect();

  // Create every monitor through its first heartbeat (1 s interval, 2 s grace), then warm up.
  console.log(`creating ${MONITORS} monitors`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let nextNew = 0;
  const createBody = JSON.stringify({ expectedIntervalMs: INTERVAL_MS, gracePeriodMs: GRACE_MS });
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = nextNew++; i < MONITORS; i = nextNew++) {
        const r = await post(agent, vigilPort, `/v1/projects/${projectId}/heartbeats/m-${i}`, createBody, key);
        if (r.status !== 200) throw new Error(`create: ${r.status} ${r.text}`);
      }
    }),
  );
  agent.destroy();
  await load(vigilPort, key, projectId, 0, 2_000, vigil.pid!);
  const incidents0 = (await db.query("SELECT count(*)::int AS n FROM incidents")).rows[0].n;

  // 1. Steady heartbeats for every monitor.
  const xacts = async () =>
    Number(
      (await db.query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")).rows[0]
        .xact_commit,
    );
  const x0 = await xacts();
  const steady = await load(vigilPort, key, projectId, 0, STEADY_MS, vigil.pid!);
  console.log("vigil steady", steady, "transactions per heartbeat", ((await xacts()) - x0) / steady.requests);
  const flaps = (await db.query("SELECT count(*)::int AS n FROM incidents")).rows[0].n - incidents0;

  // 2. Stop STOPPED monitors; keep beating the others until every stopped one is down.
  const stoppedIds = (
    await db.query<{ id: string }>("SELECT id FROM monitors WHERE project_id = $1 AND slug = ANY($2::text[])", [
      projectId,
      Array.from({ length: STOPPED }, (_, i) => `m-${i}`),
    ])
  ).rows.map((r) => r.id);
  let allDown = false;
  const poll = setInterval(async () => {
    const r = await db.query("SELECT count(*)::int AS n FROM monitors WHERE id = ANY($1::text[]) AND status = 'down'", [
      stoppedIds,
    ]);
    allDown = r.rows[0].n === STOPPED;
  }, 250);
  const during = await load(vigilPort, key, projectId, STOPPED, DETECT_CAP_MS, vigil.pid!, () => allDown);
  clearInterval(poll);
  const det = await db.query<{ d: number }>(
    "SELECT extract(epoch FROM created_at - started_at) * 1000 AS d FROM incidents WHERE monitor_id = ANY($1::text[]) AND created_at >= started_at ORDER BY started_at",
    [stoppedIds],
  );
  const vigilDelays = det.rows.map((r) => Number(r.d));
  const lateFlaps =
    (await db.query("SELECT count(*)::int AS n FROM incidents WHERE NOT (monitor_id = ANY($1::text[]))", [stoppedIds]))
      .rows[0].n - incidents0;
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  console.log("vigil detection", {
    n: vigilDelays.length,
    p50: pct(vigilDelays, 0.5),
    p99: pct(vigilDelays, 0.99),
    max: Math.max(...vigilDelays),
  });
  vigil.kill("SIGTERM");
  await new Promise((r) => vigil.once("exit", r));

  // 3. Baseline: per-heartbeat transactions, and a 1 s polling detector, on the same monitors.
  await db.query(
    "UPDATE monitors SET status = 'up', deadline_at = now() + interval '10 seconds' WHERE project_id = $1",
    [projectId],
  );
  const naivePort = await freePort();
  const naive = spawn(
    process.execPath,
    ["--import", "tsx", path.join(root, "bench/uptime.ts"), "--naive-server", String(naivePort), pgUrl, projectId],
    { cwd: root, stdio: ["ignore", "ignore", "inherit"] },
  );
  children.push(naive);
  for (let i = 0; i < 300; i++) {
    try {
      if (
        (await post(new http.Agent(), naivePort, `/v1/projects/${projectId}/heartbeats/m-0`, "{}", "x")).status === 200
      )
        break;
    } catch {
      /* starting */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await load(naivePort, "x", projectId, 0, 2_000, naive.pid!);
  const naiveSteady = await load(naivePort, "x", projectId, 0, STEADY_MS, naive.pid!);
  console.log("naive steady", naiveSteady);
  // The polling detector: every second, take down every up monitor whose deadline has passed.
  const pollDelays: number[] = [];
  const stoppedSet = new Set(stoppedIds);
  const pollDb = new pg.Client({ connectionString: pgUrl });
  await pollDb.connect();
  let polling = true;
  const poller2 = (async () => {
    while (polling) {
      const t0 = Date.now();
      const r = await pollDb.query<{ id: string; d: number }>(
        `WITH due AS (SELECT id, deadline_at FROM monitors WHERE status = 'up' AND deadline_at <= clock_timestamp() FOR UPDATE)
         UPDATE monitors m SET status = 'down', deadline_at = NULL FROM due WHERE m.id = due.id
         RETURNING m.id, extract(epoch FROM clock_timestamp() - due.deadline_at) * 1000 AS d`,
      );
      for (const row of r.rows) if (stoppedSet.has(row.id)) pollDelays.push(Number(row.d));
      await new Promise((res) => setTimeout(res, Math.max(0, 1000 - (Date.now() - t0))));
    }
  })();
  const naiveDuring = await load(
    naivePort,
    "x",
    projectId,
    STOPPED,
    DETECT_CAP_MS,
    naive.pid!,
    () => pollDelays.length >= STOPPED,
  );
  polling = false;
  await poller2;
  await pollDb.end();
  console.log("poll detection", {
    n: pollDelays.length,
    p50: pct(pollDelays, 0.5),
    p99: pct(pollDelays, 0.99),
    max: Math.max(...pollDelays),
  });

  const lag = metrics
    .split("\n")
    .filter(
      (l) => l.startsWith("vigil_scheduler_lag_seconds_") && l.includes("monitor_deadline") && /_(sum|count)/.test(l),
    );
  const section = [
    `Command: \`npm run bench uptime${QUICK ? " -- --quick" : ""}\` (bench/uptime.ts), run ${new Date().toISOString().slice(0, 16)}Z${QUICK ? " — QUICK run (smaller counts)" : ""}.`,
    "",
    `${fmt(MONITORS)} heartbeat monitors (interval ${INTERVAL_MS} ms, grace ${GRACE_MS} ms: a deadline ${(INTERVAL_MS + GRACE_MS) / 1000} s after each heartbeat),`,
    `created by their first heartbeat. Vigil runs as its own process (embedded scheduler) on an embedded PostgreSQL;`,
    `the load generator (${CONCURRENCY} concurrent keep-alive HTTP/1.1 clients, heartbeats round-robin over the monitors) is`,
    `a third process on the same 2 shared cores (1-minute load average when written: ${os.loadavg()[0].toFixed(1)}).`,
    `CPU = CPU seconds / wall seconds (1.00 = one core). Pool: PG_POOL_SIZE=${POOL} for Vigil and the baseline.`,
    `Detection: heartbeats stop for ${fmt(STOPPED)} monitors while the other ${fmt(MONITORS - STOPPED)} keep beating; the delay is`,
    `incident \`created_at\` (the check that took the monitor down) minus \`startedAt\` (the deadline).`,
    `Baseline, same run, same database, same load generator: a naive service with one transaction per heartbeat`,
    `(lock the monitor, update, insert, commit) and a detector polling every second`,
    `(\`UPDATE ... WHERE status = 'up' AND deadline_at <= now()\`).`,
    "",
    "| Heartbeats | Accepted | Seconds | Heartbeats/s | p50 ms | p99 ms | Service CPU (cores) | PostgreSQL CPU (cores) | Service + PostgreSQL CPU µs / heartbeat | Service peak RSS MB | Load generator CPU (cores) |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    loadLine("Vigil, all monitors beating", steady),
    loadLine("Baseline (tx per heartbeat)", naiveSteady),
    loadLine("Vigil, during detection", during),
    loadLine("Baseline, during detection", naiveDuring),
    "",
    "| Down-detection delay after the deadline | Monitors | p50 ms | p99 ms | max ms |",
    "|---|---|---|---|---|",
    delayLine("Vigil (heap + one timer, CAS)", vigilDelays),
    delayLine("Baseline (1 s polling)", pollDelays),
    "",
    `Ratios: heartbeats/s Vigil / baseline **${(steady.perSecond / naiveSteady.perSecond).toFixed(1)}x**; detection p99 baseline / Vigil **${(pct(pollDelays, 0.99) / pct(vigilDelays, 0.99)).toFixed(1)}x**, p50 **${(pct(pollDelays, 0.5) / pct(vigilDelays, 0.5)).toFixed(1)}x**.`,
    `Targets: >= 5,000 heartbeats/s (${steady.perSecond >= 5_000 ? "met" : "not met"}), p99 detection < 1 s (${pct(vigilDelays, 0.99) < 1000 ? "met" : "not met"}).`,
    `Monitors that went down while still beating (the service falling behind): ${flaps} during the steady phase, ${lateFlaps} in all.`,
    lag.length === 2
      ? `Server histogram \`vigil_scheduler_lag_seconds{kind="monitor_deadline"}\`: mean ${((1000 * Number(lag[0].split(" ").pop())) / Number(lag[1].split(" ").pop())).toFixed(0)} ms over ${lag[1].split(" ").pop()} monitors taken down.`
      : "",
    "",
  ].join("\n");
  console.log("\n" + section);
  await writeBenchSection("Uptime", section);
}

/** The bench's own PostgreSQL server: the PostgreSQL CPU column counts it and its backends only. */
let pgPid: number | undefined;

// ---------------------------------------------------------------------------------------------
async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-bench-uptime-"));
  const children: ChildProcess[] = [];
  const pgHandle = await startEmbeddedPostgres(tmp, pino({ level: "warn" }));
  pgPid = postmasterPid(path.join(tmp, "pg"));
  const db = new pg.Client({ connectionString: pgHandle.url });
  try {
    if (EMBEDDED) await embeddedAndBaseline(pgHandle.url, db, tmp, children);
    if (TEMPORAL && !SCHEDULED_ONLY) {
      const section = await temporalUptime({
        pgUrl: pgHandle.url,
        tmp,
        quick: QUICK,
        sequential: process.argv.includes("--sequential"),
        pool: POOL,
      });
      console.log("\n" + section);
      await writeBenchSection("Temporal mode: uptime", section);
    }
    if (SCHEDULED) {
      const section = await scheduledUptime({
        pgUrl: pgHandle.url,
        tmp,
        quick: QUICK,
        sequential: true,
        pool: POOL,
        temporal: TEMPORAL,
      });
      console.log("\n" + section);
      await writeBenchSection("Uptime: scheduled monitors", section);
    }
  } finally {
    await db.end().catch(() => undefined);
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await pgHandle.stop().catch(() => undefined);
    await rm(tmp, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--naive-server") void naiveServer(Number(process.argv[3]), process.argv[4], process.argv[5]);
else
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
