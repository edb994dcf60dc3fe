// `npm run bench alerts`: alert evaluation at scale (issue #31, Performance) over the analytics
// bench's event set, against a baseline in the same run: ingest alone. Targets 127.0.0.1 only.
//
// Data: the directory kept by `BENCH_ANALYTICS_DIR=<dir> npm run bench analytics` (its embedded
// PostgreSQL with BENCH_ANALYTICS_EVENTS generated events of one project, rollups, slots and column
// blocks); this bench opens it with BENCH_ANALYTICS_DIR=<dir> and removes the alerts an earlier run left.
//
// Phases, one Vigil in this process (embedded runner, ROLE all):
//   1. ingest alone for PHASE_S seconds (batches of 100 live events, 4 at a time): the baseline rate;
//   2. BENCH_ALERTS_RULES (10,000) rules created over REST at a 60 s cadence (spread over the minute by
//      their offsets): counts of a type, ratios, a numeric max under a data filter, and a quarter
//      whose condition holds at once (they fire at their first evaluation);
//   3. the same ingest for EVAL_S seconds while they are evaluated: the rate during evaluation, the
//      evaluation lag (due time -> applied, every evaluation's value of
//      vigil_scheduler_lag_seconds{kind="alert_evaluation"} as the evaluator observes it) and the firing
//      latency (the due time of the evaluation at which the condition held -> the incident stored, the
//      incident's created_at: the storing transaction's time);
//   4. preview of the largest window the API takes (10,000 evaluations at a 1-minute cadence: 6.9 days)
//      for a count of a type (minute rollups) and for a max under a data filter (raw events).
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { parseConfig } from "../src/config/index.js";
import { taskQueues } from "../src/temporal/link.js";
import { buildApp } from "../src/server/app.js";
import { GENEROUS_LIMITS } from "../test/helpers/app.js";
import { post, writeBenchSection } from "./_shared.js";

const DIR = process.env.BENCH_ANALYTICS_DIR;
const RULES = Number(process.env.BENCH_ALERTS_RULES ?? 10_000);
const PHASE_S = Number(process.env.BENCH_ALERTS_PHASE_S ?? 30);
const EVAL_S = Number(process.env.BENCH_ALERTS_EVAL_S ?? 150);
const MINUTE = 60_000;
/** Temporal mode: the frontend of a Temporal server (e.g. `temporal server start-dev`); empty: the embedded runner. */
const TEMPORAL = process.env.BENCH_ALERTS_TEMPORAL_ADDRESS ?? "";
/** The machine's state during the run, as the person running it describes it (recorded in the docs). */
/** BENCH_ALERTS_PREVIEW=0: no preview phase (e.g. a Temporal-mode run: the preview does not depend on the runner). */
const PREVIEW = process.env.BENCH_ALERTS_PREVIEW !== "0";
const MACHINE = process.env.BENCH_MACHINE_NOTE ?? "shared with other sessions running builds and tests";

const p99 = (xs: number[]) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)];
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const TYPES = ["view", "view", "click", "error", "signup", "purchase"];
function liveBatch(n: number): string {
  const events = Array.from({ length: n }, (_, i) => ({
    type: TYPES[i % TYPES.length],
    userId: `live_${i % 500}`,
    data: { plan: i % 3 === 0 ? "pro" : "free", amount: (i % 200) + 0.5, country: "de" },
  }));
  return JSON.stringify({ events });
}

/** Posts batches of 100 events, 4 at a time, until `stop()`; answers the events accepted and the seconds taken. */
function ingestLoad(port: number, key: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  let accepted = 0;
  let stopped = false;
  const started = performance.now();
  const worker = async () => {
    while (!stopped) {
      const r = await post(agent, port, "/v1/events/batch", liveBatch(100), key);
      if (r.status !== 202) throw new Error(`ingest: ${r.status} ${r.text.slice(0, 200)}`);
      accepted += 100;
    }
  };
  const workers = Promise.all(Array.from({ length: 4 }, worker));
  return {
    async stop(): Promise<{ events: number; seconds: number }> {
      stopped = true;
      await workers;
      agent.destroy();
      return { events: accepted, seconds: (performance.now() - started) / 1000 };
    },
  };
}

/** The rules' kinds (one in four of each); the first three are also previewed. */
const KINDS = [
  {
    query: {
      source: "events",
      filters: { field: "type", operator: "equals", value: "error" },
      operation: "count",
    },
    condition: { operator: "gt", value: 1e9 },
  },
  {
    query: {
      source: "ratio",
      numerator: { filters: { field: "type", operator: "equals", value: "error" } },
      denominator: { filters: { field: "type", operator: "in", value: ["view", "click", "error"] } },
    },
    condition: { operator: "gt", value: 0.99 },
  },
  {
    query: {
      source: "events",
      filters: { field: "data.plan", operator: "equals", value: "pro" },
      operation: "max",
      field: "data.amount",
    },
    condition: { operator: "gt", value: 1e9 },
  },
  // Holds at once: fires at its first evaluation (the firing latency's sample).
  {
    query: {
      source: "events",
      filters: { field: "type", operator: "equals", value: "signup" },
      operation: "count",
    },
    condition: { operator: "gte", value: 0 },
  },
];

async function main() {
  if (!DIR || !existsSync(path.join(DIR, "bench-analytics.json")))
    throw new Error(
      "BENCH_ANALYTICS_DIR must name a directory loaded by `BENCH_ANALYTICS_DIR=<dir> npm run bench analytics`",
    );
  const loaded: { pid: string; key: string; events: number; now: number } = JSON.parse(
    await readFile(path.join(DIR, "bench-analytics.json"), "utf8"),
  );
  const config = parseConfig({
    ...GENEROUS_LIMITS,
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: path.resolve(DIR),
    SESSION_SECRET: "bench-session-secret-0123456789abcdef",
    LOG_LEVEL: "warn",
    MAX_ALERTS_PER_PROJECT: String(Math.max(1, RULES)),
    MAX_MONITORS_PER_PROJECT: String(RULES + 1000),
    TEMPORAL_ADDRESS: TEMPORAL,
  });
  const app = await buildApp(config, { log: pino({ level: "warn" }) });
  const port = await app.listen(0);
  const db = app.deps.db;
  const { pid, key } = loaded;
  // Every evaluation's lag as the evaluator reports it (evaluator.ts: due time -> applied).
  const lags: { at: number; s: number }[] = [];
  const hist = app.deps.telemetry.schedulerLag;
  const observe = hist.observe.bind(hist);
  hist.observe = ((labels: { kind: string }, v: number) => {
    if (labels.kind === "alert_evaluation") lags.push({ at: Date.now(), s: v });
    return observe(labels, v);
  }) as typeof hist.observe;
  /** Temporal mode: the deadline scan's history events so far (every run of its workflow id, continued-as-new ones too). */
  async function historyEvents(): Promise<number> {
    if (!config.temporal || !app.deps.temporal) return NaN;
    const id = (await taskQueues(config.temporal, db)).deadlines;
    const client = await app.deps.temporal.client();
    let n = 0;
    // Visibility's historyLength of a running workflow is not kept current (0 on the dev server): the
    // running run is described instead.
    for await (const w of client.workflow.list({ query: `WorkflowId = '${id}'` }))
      n +=
        w.status.name === "RUNNING"
          ? (await client.workflow.getHandle(id, w.runId).describe()).historyLength
          : w.historyLength;
    return n;
  }
  try {
    /** Phases 1-3 (BENCH_ALERTS_RULES=0 skips them: the preview alone). */
    async function evaluationPhases() {
      console.log(`1. ingest alone, ${PHASE_S} s`);
      let load = ingestLoad(port, key);
      await new Promise((r) => setTimeout(r, PHASE_S * 1000));
      const alone = await load.stop();
      const aloneRate = alone.events / alone.seconds;
      console.log(`   ${aloneRate.toFixed(0)} events/s`);

      console.log(`2. creating ${RULES} rules`);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
      const t0 = performance.now();
      let made = 0;
      const creator = async () => {
        while (made < RULES) {
          const i = made++;
          const k = KINDS[i % KINDS.length];
          const body = JSON.stringify({ name: `bench rule ${i}`, ...k, windowMs: 5 * MINUTE, everyMs: MINUTE });
          const r = await post(agent, port, `/v1/projects/${pid}/alerts`, body, key);
          if (r.status !== 201 && r.status !== 200)
            throw new Error(`create alert: ${r.status} ${r.text.slice(0, 300)}`);
        }
      };
      await Promise.all(Array.from({ length: 8 }, creator));
      agent.destroy();
      const createS = (performance.now() - t0) / 1000;
      console.log(`   created in ${createS.toFixed(0)} s`);

      console.log(`3. ingest while ${RULES} rules are evaluated, ${EVAL_S} s`);
      const evalStart = Date.now();
      lags.length = 0;
      const history0 = await historyEvents();
      load = ingestLoad(port, key);
      await new Promise((r) => setTimeout(r, EVAL_S * 1000));
      const during = await load.stop();
      const evalEnd = Date.now();
      const historyPerRuleHour = (await historyEvents()) - history0;
      const perRuleHour = historyPerRuleHour / Math.max(1, RULES) / ((evalEnd - evalStart) / 3_600_000);
      const duringRate = during.events / during.seconds;
      const lagS = lags.filter((l) => l.at >= evalStart && l.at <= evalEnd).map((l) => l.s);
      const firing = (
        await db.query<{ ms: number }>(
          `SELECT extract(epoch FROM i.created_at - i.started_at) * 1000 AS ms FROM incidents i
            JOIN monitors m ON m.id = i.monitor_id WHERE m.project_id = $1 AND m.owned_by = 'alert'
             AND i.created_at >= $2 AND i.created_at <= $3`,
          [pid, new Date(evalStart), new Date(evalEnd)],
        )
      ).rows.map((r) => Number(r.ms));
      const lagP99 = p99(lagS) * 1000;
      const firingP99 = p99(firing);
      console.log(
        `   ${duringRate.toFixed(0)} events/s (${((duringRate / aloneRate) * 100).toFixed(1)} % of alone); ${lagS.length} evaluations, lag p99 ${lagP99.toFixed(0)} ms; ${firing.length} firings, latency p99 ${firingP99.toFixed(0)} ms`,
      );
      // The rules go before the previews (their evaluations would share the machine).
      await db.query("DELETE FROM monitors WHERE project_id = $1 AND owned_by = 'alert'", [pid]);

      if (config.temporal)
        console.log(`   Temporal history: ${historyPerRuleHour} events, ${perRuleHour.toFixed(3)} per rule per hour`);
      return {
        aloneRate,
        duringRate,
        createS,
        lagS,
        lagP99,
        firing,
        firingP99,
        history: historyPerRuleHour,
        perRuleHour,
      };
    }
    // An earlier run's rules go (their monitors, with them the alerts, evaluations and incidents).
    await db.query("DELETE FROM monitors WHERE project_id = $1 AND owned_by = 'alert'", [pid]);

    const live = RULES > 0 ? await evaluationPhases() : null;
    console.log("4. preview, 10,000 evaluations at a 1-minute cadence");
    const end = Math.floor(Date.now() / MINUTE) * MINUTE;
    const time = { start: new Date(end - 9_999 * MINUTE).toISOString(), end: new Date(end).toISOString() };
    const previewAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const previews: { label: string; ms: number; first: number; error?: string }[] = [];
    for (const k of PREVIEW
      ? [
          { label: "count of a type, 5-minute window (minute rollups)", k: KINDS[0] },
          { label: "ratio of two type counts (minute rollups)", k: KINDS[1] },
          { label: "max of data.amount where plan = pro (raw events)", k: KINDS[2] },
        ]
      : []) {
      const body = JSON.stringify({ ...k.k, windowMs: 5 * MINUTE, everyMs: MINUTE, time });
      const once = async () => {
        const t = performance.now();
        const r = await post(previewAgent, port, `/v1/projects/${pid}/alerts/preview`, body, key);
        if (r.status !== 200) throw new Error(`preview: ${r.status} ${r.text.slice(0, 300)}`);
        const n = JSON.parse(r.text).data.evaluations.length;
        if (n !== 10_000) throw new Error(`preview: ${n} evaluations`);
        return performance.now() - t;
      };
      try {
        const first = await once();
        const runs = [await once(), await once(), await once()];
        previews.push({ label: k.label, ms: median(runs), first });
        console.log(`   ${k.label}: ${median(runs).toFixed(0)} ms (first ${first.toFixed(0)} ms)`);
      } catch (err) {
        // A refusal (503 query_timeout) is a result too: recorded, not the end of the run.
        previews.push({ label: k.label, ms: NaN, first: NaN, error: String(err).slice(0, 200) });
        console.log(`   ${k.label}: ${String(err).slice(0, 200)}`);
      }
    }
    previewAgent.destroy();

    const ratio = live ? live.duringRate / live.aloneRate : NaN;
    const met = (ok: boolean) => (ok ? "met" : "**not met**");
    const full = loaded.events >= 10_000_000;
    const lines = [
      `Run ${new Date().toISOString().slice(0, 16)} UTC: \`${RULES ? "" : "BENCH_ALERTS_RULES=0 "}BENCH_ANALYTICS_DIR=<dir> npm run bench alerts\` over the project of \`npm run bench analytics\``,
      `(${loaded.events.toLocaleString("en-US")} generated events over 90 days${full ? ", the issue's size" : `, **smaller than the issue's 10,000,000**: the full load did not fit the time available`}; rollups, slots and column blocks as that bench leaves them).`,
      `One Vigil in the bench's process (${TEMPORAL ? `**Temporal mode**: TEMPORAL_ADDRESS=${TEMPORAL}, a local \`temporal server start-dev\`` : "embedded runner"}, ROLE all, embedded PostgreSQL, ALERT_EVALUATION_CONCURRENCY ${config.alerts.evaluationConcurrency}, PG_POOL_SIZE ${config.pgPoolSize}), the load generator in the same process.`,
      `Machine: ${os.cpus().length} cores, **${MACHINE}** during the run (1-minute load average ${os.loadavg()[0].toFixed(1)} at the end): the figures are upper bounds of a quiet machine's.`,
      "",
      ...(live
        ? [
            `Ingest: batches of 100 events, 4 at a time, ${PHASE_S} s alone (the baseline), then ${EVAL_S} s while ${RULES.toLocaleString("en-US")} rules at a 60 s cadence (5-minute windows; created over REST in ${live.createS.toFixed(0)} s)`,
            "were evaluated: a quarter counts of one type, a quarter ratios of type counts, a quarter the max of `data.amount` under a `data.plan` filter, a quarter a type count whose condition holds at once (each fires at its first evaluation).",
            "Lag: every evaluation's due time -> applied, as the evaluator observes `vigil_scheduler_lag_seconds{kind=\"alert_evaluation\"}`; firing latency: the due time of the evaluation at which the condition held -> the incident's `created_at` (the storing transaction's clock).",
            "",
          ]
        : ["Rules not evaluated in this run (`BENCH_ALERTS_RULES=0`: the preview alone).", ""]),
      "| Measure | Target | Result | |",
      "|---|---|---|---|",
      ...(live
        ? [
            `| Evaluation lag p99 (${live.lagS.length.toLocaleString("en-US")} evaluations) | < 1 s | ${live.lagP99.toFixed(0)} ms | ${met(live.lagP99 < 1000)} |`,
            `| Ingest during evaluation / alone | within 10 % | ${live.duringRate.toFixed(0)} / ${live.aloneRate.toFixed(0)} events/s = ${(ratio * 100).toFixed(1)} % | ${met(ratio >= 0.9)} |`,
            `| Firing latency p99 (${live.firing.length.toLocaleString("en-US")} firings) | < 100 ms | ${live.firingP99.toFixed(0)} ms | ${met(live.firingP99 < 100)} |`,
            ...(TEMPORAL
              ? [
                  `| Temporal history events per rule per hour (${live.history.toLocaleString("en-US")} events of the deadline scan in ${EVAL_S} s) | reported | ${live.perRuleHour.toFixed(3)} | |`,
                ]
              : []),
          ]
        : []),
      ...previews.map(
        (p) =>
          `| Preview, 10,000 evaluations at 1 min: ${p.label} | < 1 s | ${p.error ? `refused: ${p.error.replace(/\|/g, "/")}` : `${p.ms.toFixed(0)} ms (median of 3; first ${p.first.toFixed(0)} ms)`} | ${met(!p.error && p.ms < 1000)} |`,
      ),
      "",
      "The preview is of the largest window the API takes: decisions.md caps a preview at 10,000 evaluations, and 7 days at a",
      "1-minute cadence is 10,081 (a 400); 10,000 is 6.9 days. Percentiles, distinct counts, stddev and sums of non-integers",
      'are previewed one sample per evaluation (docs/alerts.md "Preview") and are not timed here.',
    ];
    await writeBenchSection("Alerts (`npm run bench alerts`)", lines.join("\n"));
    console.log("\n" + lines.join("\n"));
  } finally {
    await app.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
