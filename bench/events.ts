// `npm run bench events`: ingestion throughput of Vigil over HTTP (single events and batches, with
// concurrency) and the server's memory, against a naive service measured in the same run: the
// same events over the same HTTP, inserted with one INSERT (one autocommit transaction) per event,
// and against the floor: a Node server that only reads and parses the same JSON and answers 202 (no
// storage), also in the same run. Loads: single events, the SDK's 100-event batches (flushAt) at 16
// and 64 clients, and 500-event batches.
// Both write to the same PostgreSQL (embedded, in a temp dir, synchronous_commit=on): every event
// answered 202 is durable. Loopback only; bounded in count and time.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import pino from "pino";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
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
const SINGLE_COUNT = QUICK ? 5_000 : 30_000;
const BATCH_COUNT = QUICK ? 40 : 400; // requests of BATCH_SIZE events
const BATCH_SIZE = 500;
const SINGLE_CONCURRENCY = 64;
const BATCH_CONCURRENCY = 8;
/** The SDK's batch (flushAt): requests of SDK_BATCH events at 16 and at 64 clients. */
const SDK_BATCH = 100;
const SDK_COUNT = QUICK ? 200 : 1_000;
const PHASE_CAP_MS = QUICK ? 5_000 : 15_000;
// Warm-up before each service's measured phases (the same for Vigil and the baseline): V8 optimizes
// the request path over the first several thousand requests; measured after 2,000 single requests,
// Vigil's next 30,000 ran ~20% slower than after 10,000.
const WARM_SINGLE = QUICK ? 2_000 : 10_000;
const WARM_BATCHES = QUICK ? 10 : 40;

// ---------------------------------------------------------------------------------------------
// The naive service (run as a child: `bench/events.ts --naive-server <port> <databaseUrl>`)
// ---------------------------------------------------------------------------------------------
async function naiveServer(port: number, url: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const insert = (e: any) =>
    pool.query(
      "INSERT INTO events (project_id, ts, id, type, user_id, data, context, tags) VALUES ($1, $2, gen_random_uuid(), $3, $4, $5, $6, $7)",
      [
        "naive",
        e.timestamp ?? new Date().toISOString(),
        e.type,
        e.userId ?? null,
        JSON.stringify(e.data ?? {}),
        JSON.stringify(e.context ?? {}),
        JSON.stringify(e.tags ?? {}),
      ],
    );
  http
    .createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", async () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
          if (req.url === "/v1/events/batch") for (const e of body.events) await insert(e);
          else await insert(body);
          res.writeHead(202, { "content-type": "application/json" }).end('{"data":{}}');
        } catch (err) {
          res.writeHead(500).end(String(err));
        }
      });
    })
    .listen(port, "127.0.0.1");
}

// ---------------------------------------------------------------------------------------------
// The floor (`bench/events.ts --floor-server <port>`): the same HTTP, the body read and parsed as
// JSON, 202 answered; nothing validated or stored. No service can answer faster over this HTTP.
// ---------------------------------------------------------------------------------------------
function floorServer(port: number): void {
  http
    .createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        try {
          JSON.parse(Buffer.concat(chunks).toString("utf8"));
          res.writeHead(202, { "content-type": "application/json" }).end('{"data":{}}');
        } catch (err) {
          res.writeHead(400).end(String(err));
        }
      });
    })
    .listen(port, "127.0.0.1");
}

async function startChild(
  mode: string,
  port: number,
  extra: string[],
  children: ChildProcess[],
): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(root, "bench/events.ts"), mode, String(port), ...extra],
    { cwd: root, stdio: ["ignore", "ignore", "inherit"] },
  );
  children.push(child);
  for (let i = 0; i < 300; i++) {
    try {
      await post(new http.Agent(), port, "/v1/events", JSON.stringify(event()), "x");
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return child;
}

// ---------------------------------------------------------------------------------------------
// Load generation
// ---------------------------------------------------------------------------------------------

let seq = 0;
function event(): object {
  seq++;
  return {
    type: ["page_view", "click", "signup", "purchase"][seq % 4],
    userId: `user-${seq % 500}`,
    data: { path: `/p/${seq % 100}`, amount: seq % 97, plan: seq % 3 ? "free" : "pro" },
    context: { locale: "en-GB" },
    tags: { env: "bench" },
  };
}

interface PhaseResult {
  events: number;
  seconds: number;
  perSecond: number;
  p50ms: number;
  p99ms: number;
  peakRssMb: number;
  /** CPU of the service process and of every PostgreSQL process during the phase (cores). */
  cpuCores: number;
  pgCores: number;
}

async function phase(
  port: number,
  key: string,
  pathname: string,
  requests: number,
  perRequest: number,
  concurrency: number,
  pid: number | undefined,
  /** Every event with its own client id (a new UUID): one body per request, made before the clock starts. */
  withIds = false,
): Promise<PhaseResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const item = withIds ? () => ({ ...event(), id: randomUUID() }) : event;
  const bodies = Array.from({ length: withIds ? requests : Math.min(requests, 200) }, () =>
    JSON.stringify(perRequest === 1 ? item() : { events: Array.from({ length: perRequest }, item) }),
  );
  const latencies: number[] = [];
  let next = 0;
  let done = 0;
  let peakRss = 0;
  const sampler = setInterval(() => {
    if (pid === undefined) return;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (m) peakRss = Math.max(peakRss, Number(m[1]) / 1024);
    } catch {
      /* process gone */
    }
  }, 100);
  const cpu0 = pid === undefined ? 0 : processCpuSeconds(pid);
  const pg0 = postgresCpuSeconds(pgPid);
  const started = performance.now();
  const deadline = started + PHASE_CAP_MS;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests && performance.now() < deadline) {
        const body = bodies[next++ % bodies.length];
        const t0 = performance.now();
        const r = await post(agent, port, pathname, body, key);
        latencies.push(performance.now() - t0);
        if (r.status !== 202) throw new Error(`${pathname}: ${r.status} ${r.text.slice(0, 200)}`);
        done++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const cpuCores = pid === undefined ? 0 : (processCpuSeconds(pid) - cpu0) / seconds;
  const pgCores = (postgresCpuSeconds(pgPid) - pg0) / seconds;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const events = done * perRequest;
  return {
    events,
    seconds,
    perSecond: events / seconds,
    p50ms: latencies[Math.floor(latencies.length * 0.5)],
    p99ms: latencies[Math.floor(latencies.length * 0.99)],
    peakRssMb: peakRss,
    cpuCores,
    pgCores,
  };
}

/** The bench's own PostgreSQL server (its processes' CPU is the PostgreSQL column), once started. */
let pgPid: number | undefined;

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const line = (name: string, r: PhaseResult) =>
  `| ${name} | ${fmt(r.events)} | ${r.seconds.toFixed(2)} | **${fmt(r.perSecond)}** | ${r.p50ms.toFixed(1)} | ${r.p99ms.toFixed(1)} | ${r.cpuCores.toFixed(2)} | ${r.pgCores.toFixed(2)} | ${((1e6 * (r.cpuCores + r.pgCores)) / r.perSecond).toFixed(0)} | ${r.peakRssMb ? Math.round(r.peakRssMb) : "-"} |`;

const ratio = (a: PhaseResult, b: PhaseResult) => (a.perSecond / b.perSecond).toFixed(2);
const cpuPer = (r: PhaseResult) => ((1e6 * (r.cpuCores + r.pgCores)) / r.perSecond).toFixed(0);

/**
 * `BENCH_ONLY=single|sdk16|sdk64|sdk64ids` (with `BENCH_PROFILE=<dir>` for the service's CPU profile):
 * after the warm-up, only that one Vigil load, then PostgreSQL's statements by total time during it
 * (pg_stat_statements). Writes nothing to docs/benchmarks.md. The profile is the budget's source
 * (bench/_cpuprofile.ts summarizes it).
 */
const ONLY = process.env.BENCH_ONLY;

async function profileOnly(only: string, db: pg.Client, port: number, key: string, vigil: ChildProcess): Promise<void> {
  await db.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  const sdkLoad = /^sdk(\d+)(ids)?$/.exec(only);
  await db.query("SELECT pg_stat_statements_reset()");
  // The load's window on the monotonic clock the profile's samples are timed by (bench/_cpuprofile.ts --window).
  const from = process.hrtime.bigint() / 1000n;
  const r =
    only === "single"
      ? await phase(port, key, "/v1/events", SINGLE_COUNT, 1, SINGLE_CONCURRENCY, vigil.pid)
      : sdkLoad
        ? await phase(port, key, "/v1/events/batch", SDK_COUNT, SDK_BATCH, Number(sdkLoad[1]), vigil.pid, !!sdkLoad[2])
        : undefined;
  if (!r) throw new Error(`BENCH_ONLY=${only}: single, sdk16, sdk64 or sdk64ids`);
  console.log(`profile window: --window=${from}:${process.hrtime.bigint() / 1000n}`);
  console.log(only, r, `service + PostgreSQL CPU µs / event: ${cpuPer(r)}`);
  const stats = await db.query(
    `SELECT calls, rows, round(total_exec_time::numeric, 1) AS total_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query
       FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`,
  );
  console.log(
    `PostgreSQL statements during the load (${fmt(r.events)} events; µs / event = total_ms * 1000 / events):`,
  );
  for (const x of stats.rows)
    console.log(
      `${String(x.calls).padStart(8)} calls ${String(x.rows).padStart(8)} rows ${String(x.total_ms).padStart(10)} ms ${((Number(x.total_ms) * 1000) / r.events).toFixed(1).padStart(7)} µs/event  ${x.query}`,
    );
  vigil.kill("SIGTERM");
  await new Promise((res) => vigil.once("exit", res));
}

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-bench-events-"));
  const children: ChildProcess[] = [];
  const log = pino({ level: "warn" });
  let pgHandle = await startEmbeddedPostgres(tmp, log);
  if (ONLY) {
    // The profile run: PostgreSQL's side per statement (pg_stat_statements, loaded at start-up).
    const c = new pg.Client({ connectionString: pgHandle.url });
    await c.connect();
    await c.query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'");
    await c.end();
    await pgHandle.stop();
    pgHandle = await startEmbeddedPostgres(tmp, log);
  }
  pgPid = postmasterPid(path.join(tmp, "pg"));
  if (pgPid === undefined)
    console.warn("postmaster.pid not found: the PostgreSQL CPU column sums every postgres process");
  try {
    const vigilPort = await freePort();
    const metricsPort = await freePort();
    const profile = process.env.BENCH_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
    const vigil = spawnVigil({
      databaseUrl: pgHandle.url,
      port: vigilPort,
      dataDir: path.join(tmp, "vigil"),
      nodeFlags: profile,
      env: {
        METRICS_PORT: String(metricsPort),
        RATE_LIMIT_EVENTS_PER_MINUTE: "100000000",
        RATE_LIMIT_BATCHES_PER_MINUTE: "100000000",
      },
    });
    children.push(vigil);
    await waitHealthy(vigilPort, vigil);
    const { key, projectId } = await setupProject(vigilPort);
    const db = new pg.Client({ connectionString: pgHandle.url });
    await db.connect();
    db.on("error", () => undefined); // the server stopping at the end (or after a failed check) is no crash
    const syncCommit = (await db.query("SHOW synchronous_commit")).rows[0].synchronous_commit;

    console.log(`synchronous_commit=${syncCommit}; warming up`);
    await phase(vigilPort, key, "/v1/events", WARM_SINGLE, 1, SINGLE_CONCURRENCY, undefined);
    await phase(vigilPort, key, "/v1/events/batch", WARM_BATCHES, BATCH_SIZE, BATCH_CONCURRENCY, undefined);
    await phase(vigilPort, key, "/v1/events/batch", SDK_COUNT, SDK_BATCH, 16, undefined);
    const before = (await db.query("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [projectId])).rows[0]
      .n;
    if (ONLY) {
      await profileOnly(ONLY, db, vigilPort, key, vigil);
      await db.end();
      return;
    }

    const vSingle = await phase(vigilPort, key, "/v1/events", SINGLE_COUNT, 1, SINGLE_CONCURRENCY, vigil.pid);
    console.log("vigil single", vSingle);
    // Each phase again with a client id on every event (claims.ts: one more row per event, in the same
    // statement or transaction), right after the one without: the ratio is the cost of idempotency.
    const vSingleIds = await phase(vigilPort, key, "/v1/events", SINGLE_COUNT, 1, SINGLE_CONCURRENCY, vigil.pid, true);
    console.log("vigil single with ids", vSingleIds);
    const vBatch = await phase(
      vigilPort,
      key,
      "/v1/events/batch",
      BATCH_COUNT,
      BATCH_SIZE,
      BATCH_CONCURRENCY,
      vigil.pid,
    );
    console.log("vigil batch", vBatch);
    const vBatchIds = await phase(
      vigilPort,
      key,
      "/v1/events/batch",
      BATCH_COUNT,
      BATCH_SIZE,
      BATCH_CONCURRENCY,
      vigil.pid,
      true,
    );
    console.log("vigil batch with ids", vBatchIds);
    const sdk = (concurrency: number, port = vigilPort, pid = vigil.pid, withIds = false) =>
      phase(port, key, "/v1/events/batch", SDK_COUNT, SDK_BATCH, concurrency, pid, withIds);
    const vSdk16 = await sdk(16);
    console.log("vigil 100-event batches, 16 clients", vSdk16);
    const vSdk64 = await sdk(64);
    console.log("vigil 100-event batches, 64 clients", vSdk64);
    const vSdk64Ids = await sdk(64, vigilPort, vigil.pid, true);
    console.log("vigil 100-event batches with ids, 64 clients", vSdk64Ids);
    if (process.env.BENCH_PROFILE) {
      const m = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      console.log(
        m
          .split("\n")
          .filter((l) =>
            /vigil_ingest_commit_(events|duration_seconds)_(sum|count)|vigil_http_request_duration_seconds_(sum|count)/.test(
              l,
            ),
          )
          .join("\n"),
      );
    }
    const stored =
      (await db.query("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [projectId])).rows[0].n - before;
    const answered =
      vSingle.events +
      vBatch.events +
      vSingleIds.events +
      vBatchIds.events +
      vSdk16.events +
      vSdk64.events +
      vSdk64Ids.events;
    const withIds = vSingleIds.events + vBatchIds.events + vSdk64Ids.events;
    if (stored !== answered) throw new Error(`durability check failed: ${stored} stored, ${answered} answered 202`);
    const claimed = (await db.query("SELECT count(*)::int AS n FROM ingest_ids WHERE project_id = $1", [projectId]))
      .rows[0].n;
    if (claimed !== withIds) throw new Error(`ids check failed: ${claimed} claims, ${withIds} events with ids`);
    vigil.kill("SIGTERM");
    await new Promise((r) => vigil.once("exit", r));

    const floorPort = await freePort();
    const floor = await startChild("--floor-server", floorPort, [], children);
    await phase(floorPort, "x", "/v1/events", WARM_SINGLE, 1, SINGLE_CONCURRENCY, undefined);
    await phase(floorPort, "x", "/v1/events/batch", WARM_BATCHES, SDK_BATCH, 16, undefined);
    const fSingle = await phase(floorPort, "x", "/v1/events", SINGLE_COUNT, 1, SINGLE_CONCURRENCY, floor.pid);
    console.log("floor single", fSingle);
    const fSdk16 = await sdk(16, floorPort, floor.pid);
    const fSdk64 = await sdk(64, floorPort, floor.pid);
    const fBatch = await phase(
      floorPort,
      "x",
      "/v1/events/batch",
      BATCH_COUNT,
      BATCH_SIZE,
      BATCH_CONCURRENCY,
      floor.pid,
    );
    console.log("floor batches", fSdk16, fSdk64, fBatch);
    floor.kill("SIGTERM");

    const naivePort = await freePort();
    const naive = await startChild("--naive-server", naivePort, [pgHandle.url], children);
    await phase(naivePort, "x", "/v1/events", WARM_SINGLE, 1, SINGLE_CONCURRENCY, undefined);
    await phase(naivePort, "x", "/v1/events/batch", WARM_BATCHES, BATCH_SIZE, BATCH_CONCURRENCY, undefined);
    const nSingle = await phase(naivePort, "x", "/v1/events", SINGLE_COUNT, 1, SINGLE_CONCURRENCY, naive.pid);
    console.log("naive single", nSingle);
    const nBatch = await phase(
      naivePort,
      "x",
      "/v1/events/batch",
      BATCH_COUNT,
      BATCH_SIZE,
      BATCH_CONCURRENCY,
      naive.pid,
    );
    console.log("naive batch", nBatch);
    await db.end();

    const section = [
      `Command: \`npm run bench events${QUICK ? " -- --quick" : ""}\` (bench/events.ts), run ${new Date().toISOString().slice(0, 16)}Z${QUICK ? " — quick run (smaller counts)" : ""}.`,
      "",
      `Vigil and the baseline run as separate processes against the same embedded PostgreSQL`,
      `(synchronous_commit=${syncCommit}); the load generator is a third process on the same 2 cores, over`,
      `HTTP/1.1 keep-alive on 127.0.0.1. Events carry a type, a userId (500 distinct), data, context and tags.`,
      `Single: ${SINGLE_CONCURRENCY} concurrent clients, one event per request. Batch: ${BATCH_CONCURRENCY} concurrent clients, ${BATCH_SIZE} events per request.`,
      `SDK batches: ${SDK_BATCH} events per request (the SDK's flushAt), ${fmt(SDK_COUNT)} requests at 16 and at 64 concurrent clients.`,
      "Floor: a Node server that only reads and parses the same JSON bodies and answers 202 (nothing validated or stored).",
      "PostgreSQL CPU: the bench's own server and its backends (other databases on the machine left out).",
      `Each service is first warmed up with ${fmt(WARM_SINGLE)} single requests and ${WARM_BATCHES} batches (not measured).`,
      `Each phase stops at its count or after ${PHASE_CAP_MS / 1000} s. Baseline: a naive service, same HTTP, one`,
      "autocommit `INSERT` per event, no batching, no auth, no identity upserts.",
      `Durability: after the run, the number of Vigil's rows equals the number of events answered 202 (${fmt(answered)}),`,
      `and the number of stored client ids equals the number of events sent with one (${fmt(claimed)}).`,
      `"With ids": each Vigil phase again right after the one without, every event carrying its own client \`id\` (a new UUID; docs/events.md,`,
      `idempotency), so each is claimed in \`ingest_ids\` in the same statement or transaction as the event.`,
      "",
      "| Run | Events | Seconds | Events/s | p50 ms | p99 ms | Service CPU (cores) | PostgreSQL CPU (cores) | Service + PostgreSQL CPU µs / event | Server peak RSS MB |",
      "|---|---|---|---|---|---|---|---|---|---|",
      line("Vigil, single events", vSingle),
      line("Vigil, single events with ids", vSingleIds),
      line("Baseline, single events", nSingle),
      line("Vigil, batches", vBatch),
      line("Vigil, batches with ids", vBatchIds),
      line("Baseline, batches", nBatch),
      line(`Vigil, ${SDK_BATCH}-event batches, 16 clients`, vSdk16),
      line(`Vigil, ${SDK_BATCH}-event batches, 64 clients`, vSdk64),
      line(`Vigil, ${SDK_BATCH}-event batches with ids, 64 clients`, vSdk64Ids),
      line("Floor, single events", fSingle),
      line(`Floor, ${SDK_BATCH}-event batches, 16 clients`, fSdk16),
      line(`Floor, ${SDK_BATCH}-event batches, 64 clients`, fSdk64),
      line("Floor, batches", fBatch),
      "",
      `Ratios (Vigil / baseline): single **${(vSingle.perSecond / nSingle.perSecond).toFixed(1)}x**, batch **${(vBatch.perSecond / nBatch.perSecond).toFixed(1)}x**.`,
      `Client ids (with / without, events/s): single **${(vSingleIds.perSecond / vSingle.perSecond).toFixed(2)}x**, batch **${(vBatchIds.perSecond / vBatch.perSecond).toFixed(2)}x**; CPU µs / event (service + PostgreSQL) single ${cpuPer(vSingle)} → ${cpuPer(vSingleIds)}, batch ${cpuPer(vBatch)} → ${cpuPer(vBatchIds)}.`,
      `Against the floor (Vigil / floor, events/s): single **${ratio(vSingle, fSingle)}**, ${SDK_BATCH}-event batches at 16 clients **${ratio(vSdk16, fSdk16)}**, at 64 **${ratio(vSdk64, fSdk64)}**, ${BATCH_SIZE}-event batches **${ratio(vBatch, fBatch)}**.`,
      `${SDK_BATCH}-event batches with ids / without (64 clients): **${ratio(vSdk64Ids, vSdk64)}**; CPU µs / event (service + PostgreSQL) ${cpuPer(vSdk64)} → ${cpuPer(vSdk64Ids)}.`,
      `Targets (issue 36): ${SDK_BATCH}-event batches >= 0.5 of the floor (${Math.min(vSdk16.perSecond / fSdk16.perSecond, vSdk64.perSecond / fSdk64.perSecond) >= 0.5 ? "met" : "not met"}), with ids >= 0.8 of without (${vSdk64Ids.perSecond / vSdk64.perSecond >= 0.8 ? "met" : "not met"}), single >= 2x the baseline (${vSingle.perSecond / nSingle.perSecond >= 2 ? "met" : "not met"}) and >= 0.9 of the floor (${vSingle.perSecond / fSingle.perSecond >= 0.9 ? "met" : "not met"}).`,
      `Targets: batch >= 50,000 events/s (${vBatch.perSecond >= 50_000 ? "met" : "not met"}), single >= 5,000 events/s (${vSingle.perSecond >= 5_000 ? "met" : "not met"}).`,
      "",
    ].join("\n");
    console.log("\n" + section);
    await writeBenchSection("Events ingestion", section);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await pgHandle.stop().catch(() => undefined);
    await rm(tmp, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--naive-server") void naiveServer(Number(process.argv[3]), process.argv[4]);
else if (process.argv[2] === "--floor-server") floorServer(Number(process.argv[3]));
else
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
