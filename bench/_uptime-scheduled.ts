// The scheduled-monitor part of `npm run bench uptime` (issue #32, bench/uptime.ts calls scheduledUptime()):
// 10,000 scheduled monitors (cron expressions from every minute to daily, in mixed IANA zones) next to
// 10,000 interval monitors beating at their own phase (bench/_pacer.ts), for each runner in turn
// (embedded, then Temporal on its own `temporal server start-dev`; one Vigil process and database each).
//  1. Throughput (embedded runner): alternating rounds of plain heartbeats (interval monitors) and run
//     signals (start + success pairs with a runId, scheduled monitors) through the REST routes, the
//     same closed-loop clients: signals/s against heartbeats/s.
//  2. Detection (both runners): every scheduled monitor gets a start + success pair (its deadline: the
//     first scheduled time after that start + its grace); then nothing pings them, the interval ones keep
//     beating, and the monitors whose deadline comes within the window are measured (incident created_at
//     minus started_at, the deadline). The hourly and daily ones are load.
import http from "node:http";
import os from "node:os";
import { Pacer } from "./_pacer.js";
import { post, setupProject } from "./_shared.js";
import { fmt, pct, sleep, startBenchTemporal, type BenchTemporal } from "./_temporal.js";
import { absorbed, startRig, stopRig, type Rig, type TemporalUptimeOptions } from "./_uptime-temporal.js";

const SCALE = (quick: boolean) => Number(process.env.BENCH_SCALE ?? (quick ? 0.1 : 1));
const CONCURRENCY = Number(process.env.BENCH_UPTIME_CONCURRENCY ?? 128);
/** Interval monitors: each beats every 60 s (grace 30 s), the product's defaults. */
const INTERVAL_MS = 60_000;
const INTERVAL_GRACE_MS = 30_000;
/** Cadences by i % 10: 1 every minute, 2 every 5 min, 2 every 15 min, 2 hourly, 3 daily. */
const CRONS = [
  "* * * * *",
  "*/5 * * * *",
  "*/5 * * * *",
  "*/15 * * * *",
  "*/15 * * * *",
  "0 * * * *",
  "0 * * * *",
  "30 3 * * *",
  "30 3 * * *",
  "30 3 * * *",
];
/** Zones by i / 10 (whole, half and quarter hour offsets, both hemispheres' DST). */
const ZONES = [
  "UTC",
  "Europe/Berlin",
  "America/New_York",
  "Asia/Kolkata",
  "Asia/Kathmandu",
  "Australia/Adelaide",
  "America/Sao_Paulo",
  "Asia/Tokyo",
];
/** Grace 10-29 s, spread over the monitors (one cadence's deadlines fall on 20 different seconds). */
const graceOf = (i: number) => 10_000 + ((i * 7) % 20) * 1_000;
/** Detection window: every-minute monitors come due within 60 s + their grace. */
const WINDOW_MS = 90_000;
const ROUND_MS = Number(process.env.BENCH_SIGNAL_ROUND_MS ?? 5_000);
const ROUNDS = 3;

interface Throughput {
  requests: number;
  seconds: number;
}

/** Closed-loop requests from CONCURRENCY clients until capMs passes (or `total` items are done). */
async function closedLoop(
  items: number,
  capMs: number,
  send: (agent: http.Agent, i: number) => Promise<number>,
  total = Infinity,
): Promise<Throughput> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let next = 0;
  let requests = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() - started < capMs && next < total) {
        const i = next++ % items;
        const n = await send(agent, i); // (not `requests += await ...`: that reads requests before the wait)
        requests += n;
      }
    }),
  );
  agent.destroy();
  return { requests, seconds: (performance.now() - started) / 1000 };
}

async function must(r: Promise<{ status: number; text: string }>, what: string): Promise<void> {
  const x = await r;
  if (x.status !== 200) throw new Error(`${what}: ${x.status} ${x.text.slice(0, 200)}`);
}

interface RigResult {
  runner: Rig["runner"];
  scheduled: number;
  interval: number;
  absorbMs: number;
  heartbeatsPerSecond: number[];
  signalsPerSecond: number[];
  refreshSignalsPerSecond: number;
  measured: number;
  /** Of the measured monitors, those down at the end (a monitor taken down in the refresh round, up again, and down again counts once here, twice in delays). */
  down: number;
  byCadence: Record<string, number>;
  delays: number[];
  flaps: number;
  earlyOrExtra: number;
  pacerRate: number;
  pacerLateP99: number;
  errors: string;
}

async function runRig(rig: Rig, scale: number, throughput: boolean): Promise<RigResult> {
  const nSched = Math.max(100, Math.round(10_000 * scale));
  const nInt = Math.max(100, Math.round(10_000 * scale));
  const port = rig.vigil.port;
  const { key, projectId } = await setupProject(port);
  const base = `/v1/projects/${projectId}/heartbeats`;
  const pacer = new Pacer(
    port,
    key,
    projectId,
    INTERVAL_MS,
    JSON.stringify({ expectedIntervalMs: INTERVAL_MS, gracePeriodMs: INTERVAL_GRACE_MS }),
    "m-",
    64,
  );
  pacer.add(nInt, 10_000);
  console.log(`${rig.runner}: creating ${nSched} scheduled monitors`);
  await closedLoop(
    nSched,
    Infinity,
    async (agent, i) => {
      const body = { schedule: { cron: CRONS[i % 10], timezone: ZONES[Math.floor(i / 10) % ZONES.length] } };
      await must(
        post(agent, port, `${base}/s-${i}`, JSON.stringify({ ...body, gracePeriodMs: graceOf(i) }), key),
        "create",
      );
      return 1;
    },
    nSched,
  );
  for (let i = 0; i < 600 && !pacer.allCreated(); i++) await sleep(100);
  const absorbMs = rig.temporal ? await absorbed(rig) : 0;

  // 1. Throughput: alternating rounds, the same clients, interval monitors' heartbeats vs scheduled monitors' run pairs.
  let runSeq = 0;
  const pair = async (agent: http.Agent, i: number) => {
    const body = JSON.stringify({ runId: `r-${runSeq++}` });
    await must(post(agent, port, `${base}/s-${i}/start`, body, key), "start");
    await must(post(agent, port, `${base}/s-${i}`, body, key), "success");
    return 2;
  };
  const heartbeat = async (agent: http.Agent, i: number) => {
    await must(post(agent, port, `${base}/m-${i}`, "{}", key), "heartbeat");
    return 1;
  };
  const heartbeatsPerSecond: number[] = [];
  const signalsPerSecond: number[] = [];
  if (throughput) {
    for (let r = 0; r < ROUNDS; r++) {
      const h = await closedLoop(nInt, ROUND_MS, heartbeat);
      heartbeatsPerSecond.push(h.requests / h.seconds);
      const s = await closedLoop(nSched, ROUND_MS, pair);
      signalsPerSecond.push(s.requests / s.seconds);
      console.log(
        `${rig.runner} round ${r + 1}: ${fmt(h.requests / h.seconds)} heartbeats/s, ${fmt(s.requests / s.seconds)} run signals/s`,
      );
    }
  }

  // 2. Detection. Every scheduled monitor: one start + success pair (up again if it went down meanwhile).
  // Measured: the scheduled monitors whose deadline falls after the refresh began and within the window
  // after it (those already taken down meanwhile included; the monitors' state changes are load).
  pacer.resetStats();
  const since = new Date();
  const refresh = await closedLoop(nSched, Infinity, pair, nSched);
  const due = (
    await rig.db.query<{ id: string; cron: string }>(
      `SELECT m.id, m.schedule_cron AS cron FROM monitors m WHERE m.project_id = $1 AND m.slug LIKE 's-%'
         AND ((m.status = 'up' AND m.deadline_at <= $2)
              OR EXISTS (SELECT 1 FROM incidents i WHERE i.monitor_id = m.id AND i.started_at >= $3))`,
      [projectId, new Date(Date.now() + WINDOW_MS), since],
    )
  ).rows;
  const ids = due.map((r) => r.id);
  const byCadence: Record<string, number> = {};
  for (const r of due) byCadence[r.cron] = (byCadence[r.cron] ?? 0) + 1;
  console.log(`${rig.runner}: ${ids.length} scheduled monitors come due in the next ${WINDOW_MS / 1000} s`, byCadence);
  const cap = Date.now() + WINDOW_MS + 20_000;
  let down = 0;
  while (Date.now() < cap) {
    down = (
      await rig.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM monitors WHERE id = ANY($1::text[]) AND status = 'down'",
        [ids],
      )
    ).rows[0].n;
    if (down >= ids.length) break;
    await sleep(500);
  }
  const incidents = (
    await rig.db.query<{ monitor_id: string; slug: string; started_at: Date; created_at: Date }>(
      `SELECT i.monitor_id, m.slug, i.started_at, i.created_at FROM incidents i JOIN monitors m ON m.id = i.monitor_id
        WHERE i.project_id = $1 AND (i.started_at >= $2 OR i.created_at >= $2)`,
      [projectId, since],
    )
  ).rows;
  const want = new Set(ids);
  const delays = incidents
    .filter((r) => want.has(r.monitor_id) && r.started_at >= since)
    .map((r) => r.created_at.getTime() - r.started_at.getTime());
  const flaps = incidents.filter((r) => r.slug.startsWith("m-")).length;
  const earlyOrExtra = incidents.filter(
    (r) => r.slug.startsWith("s-") && (!want.has(r.monitor_id) || r.created_at < r.started_at),
  ).length;
  const result: RigResult = {
    runner: rig.runner,
    scheduled: nSched,
    interval: nInt,
    absorbMs,
    heartbeatsPerSecond,
    signalsPerSecond,
    refreshSignalsPerSecond: refresh.requests / refresh.seconds,
    measured: ids.length,
    down,
    byCadence,
    delays,
    flaps,
    earlyOrExtra,
    pacerRate: pacer.rate(),
    pacerLateP99: pct(pacer.late, 0.99),
    errors: pacer.errors ? `${pacer.errors} heartbeats failed (last: ${pacer.lastError})` : "",
  };
  pacer.stopAll();
  await pacer.close();
  console.log(
    `${rig.runner}: detected ${delays.length}/${ids.length}, p50 ${fmt(pct(delays, 0.5))} ms, p99 ${fmt(pct(delays, 0.99))} ms, max ${fmt(Math.max(...delays))} ms; interval monitors taken down ${flaps}; other scheduled ones ${earlyOrExtra}`,
  );
  return result;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const mean = (xs: number[]) => sum(xs) / Math.max(1, xs.length);

/** Runs both runners in turn; the section of docs/benchmarks.md. */
export async function scheduledUptime(o: TemporalUptimeOptions & { temporal: boolean }): Promise<string> {
  const scale = SCALE(o.quick);
  const t0 = performance.now();
  const results: RigResult[] = [];
  const load: number[] = [];
  let rig: Rig | undefined;
  let temporal: BenchTemporal | undefined;
  try {
    rig = await startRig(o, "sched_embedded");
    results.push(await runRig(rig, scale, true));
    load.push(os.loadavg()[0]);
    await stopRig(rig);
    rig = undefined;
    if (o.temporal) {
      temporal = await startBenchTemporal();
      rig = await startRig(o, "sched_temporal", temporal);
      results.push(await runRig(rig, scale, false));
      load.push(os.loadavg()[0]);
    }
  } finally {
    await stopRig(rig);
    await temporal?.stop().catch(() => undefined);
  }
  const e = results[0];
  const ratio = mean(e.signalsPerSecond) / mean(e.heartbeatsPerSecond);
  const p = (d: number[], q: number) => fmt(pct(d, q));
  const cadence = (r: RigResult) =>
    Object.entries(r.byCadence)
      .map(([c, n]) => `\`${c}\` ${fmt(n)}`)
      .join(", ");
  return [
    `Command: \`npm run bench uptime\` (bench/uptime.ts with bench/_uptime-scheduled.ts), run ${new Date().toISOString().slice(0, 16)}Z in ${Math.round((performance.now() - t0) / 1000)} s${scale === 1 ? "" : ` — **reduced run** (BENCH_SCALE=${scale}): not the figures of record`}.`,
    "",
    `${fmt(e.scheduled)} scheduled monitors (created by a heartbeat with \`schedule\`; cron by monitor: 10 % \`* * * * *\`, 20 % \`*/5 * * * *\`,`,
    "20 % `*/15 * * * *`, 20 % `0 * * * *`, 30 % `30 3 * * *`; zones UTC, Europe/Berlin, America/New_York, Asia/Kolkata, Asia/Kathmandu,",
    "Australia/Adelaide, America/Sao_Paulo, Asia/Tokyo; grace 10 to 29 s, spread) next to " +
      `${fmt(e.interval)} interval monitors (interval ${INTERVAL_MS / 1000} s, grace ${INTERVAL_GRACE_MS / 1000} s,`,
    "each beating at its own phase, bench/_pacer.ts). Each runner in turn: Vigil with its embedded runner, then Vigil with",
    "`TEMPORAL_ADDRESS` on its own `temporal server start-dev` (measured once every new monitor's workflow was started, or BENCH_ABSORB_MAX_MS passed); one Vigil",
    `process and database each on one embedded PostgreSQL (PG_POOL_SIZE=${o.pool}), the dev server and the load generator on the`,
    `same 2 cores, **shared with other sessions' builds and tests while this ran** (1-minute load average at the end of each runner: ${load.map((l) => l.toFixed(1)).join(", ")}).`,
    "",
    "### Run signals against plain heartbeats (embedded runner)",
    "",
    `${ROUNDS} alternating rounds of ${ROUND_MS / 1000} s, ${CONCURRENCY} closed-loop keep-alive clients each: plain heartbeats (\`POST .../heartbeats/m-N\`, interval`,
    "monitors, round-robin) and run signals (`POST .../heartbeats/s-N/start` then `POST .../heartbeats/s-N`, one `runId` per pair,",
    "scheduled monitors, round-robin); every request counts. The paced interval heartbeats run underneath throughout.",
    "",
    "| Round | Heartbeats/s | Run signals/s | Signals / heartbeats |",
    "|---|---|---|---|",
    ...e.heartbeatsPerSecond.map(
      (h, i) => `| ${i + 1} | ${fmt(h)} | ${fmt(e.signalsPerSecond[i])} | ${(e.signalsPerSecond[i] / h).toFixed(2)} |`,
    ),
    `| mean | **${fmt(mean(e.heartbeatsPerSecond))}** | **${fmt(mean(e.signalsPerSecond))}** | **${ratio.toFixed(2)}** |`,
    "",
    `Target: run signals/s within 10 % of plain heartbeats/s: ${ratio >= 0.9 ? "met" : "**not met**"} (${((ratio - 1) * 100).toFixed(0)} %).`,
    "",
    "### Down-detection delay of the scheduled monitors that come due",
    "",
    `Every scheduled monitor gets one start + success pair (a round over all of them, as fast as the clients go; a monitor taken`,
    "down earlier comes up again), then none: those whose deadline (the first scheduled time after that start, plus the grace) falls",
    `between the round's beginning and ${WINDOW_MS / 1000} s after its end are measured, the others are load; delay = incident \`created_at\``,
    "minus `startedAt` (the deadline). The interval monitors keep beating.",
    "",
    "| Runner | New monitors' workflows started in (s) | Monitors measured (by cron) | Down at the end | Incidents (deadlines detected) | p50 ms | p99 ms | max ms | Interval monitors taken down | Scheduled monitors taken down outside the measured set or early | Paced heartbeats/s (send lateness p99 ms) |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...results.map(
      (r) =>
        `| ${r.runner} | ${r.runner === "Temporal" ? (Number.isFinite(r.absorbMs) ? (r.absorbMs / 1000).toFixed(0) : "not within the cap") : "–"} | ${cadence(r)} | ${fmt(r.down)}/${fmt(r.measured)} | ${fmt(r.delays.length)} | ${p(r.delays, 0.5)} | **${p(r.delays, 0.99)}** | ${fmt(Math.max(...r.delays))} | ${r.flaps} | ${r.earlyOrExtra} | ${fmt(r.pacerRate)} (${fmt(r.pacerLateP99)}) |`,
    ),
    "",
    ...results.map(
      (r) =>
        `Target, ${r.runner} runner: detection p99 < 1 s: ${pct(r.delays, 0.99) < 1_000 && r.down === r.measured ? "met" : "**not met**"}.`,
    ),
    ...results.filter((r) => r.errors).map((r) => `${r.runner}: ${r.errors}.`),
    "",
  ].join("\n");
}
