// `npm run bench analytics -- --scaling` (issue #35): the query set of bench/_analytics-cases.ts
// (the six standard queries, a 3-step funnel over 30 days, an 8-week retention, a daily sum series
// over 7 days) at several sizes of one project's events (default 1M, 3M, 10M over 90 days), each
// against plain PostgreSQL (bench_baseline) and DuckDB (the same rows exported once to Parquet,
// bench/_analytics-duckdb.py, `pip install duckdb`); fits t ~ N^b per query and engine, draws the
// curves (bench/_analytics-plot.py, `pip install matplotlib`) and writes docs/benchmarks.md.
//
// Environment: BENCH_ANALYTICS_SCALING (comma-separated sizes), BENCH_ANALYTICS_SCALING_DIRS (one kept
// data directory per size, same order; loaded when empty, as BENCH_ANALYTICS_DIR), BENCH_ANALYTICS_SCALING_RUNS
// (Vigil's runs after the first, default 3), BENCH_ANALYTICS_SCALING_BASE_RUNS (the baselines', default 2),
// BENCH_ANALYTICS_SCALING_REUSE=1 (a size whose directory already holds this run's results,
// bench-scaling.json, is not measured again: sizes can be measured one at a time, then drawn together).
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { createWriteStream, existsSync } from "node:fs";
import { readFile, rename, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { to as copyTo } from "pg-copy-streams";
import { makeCases, timeIt, type Case } from "./_analytics-cases.js";
import { writeBenchSection } from "./_shared.js";
import type { EventSet } from "./analytics.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const SIZES = (process.env.BENCH_ANALYTICS_SCALING ?? "1000000,3000000,10000000").split(",").map(Number);
const DIRS = process.env.BENCH_ANALYTICS_SCALING_DIRS?.split(",");
const RUNS = Number(process.env.BENCH_ANALYTICS_SCALING_RUNS ?? 3);
const BASE_RUNS = Number(process.env.BENCH_ANALYTICS_SCALING_BASE_RUNS ?? 2);
const REUSE = process.env.BENCH_ANALYTICS_SCALING_REUSE === "1";

interface Timing {
  median: number;
  first: number;
  /** null when the answer equals the PostgreSQL baseline's, else what differs. */
  mismatch?: string | null;
}
interface SizeResult {
  events: number;
  at: string;
  loadAvg: number;
  blocks: number;
  exportS: number;
  convertS: number;
  queries: { label: string; days: number; target: number; vigil: Timing; pg: Timing; duck: Timing | null }[];
}

/** ts (µs since the epoch), type, userId and the four properties the queries read, as CSV, once per data directory. */
async function exportCsv(url: string, pid: string, file: string): Promise<number> {
  if (existsSync(file)) return 0;
  const t0 = performance.now();
  const pgMod = (await import("pg")).default;
  const c = new pgMod.Client({ connectionString: url });
  await c.connect();
  try {
    const sql = `COPY (SELECT (extract(epoch FROM "timestamp") * 1000000)::bigint, type, user_id, data->>'plan', data->>'country',
                   CASE WHEN jsonb_typeof(data->'amount') = 'number' THEN (data->>'amount')::float8 END
                 FROM bench_baseline WHERE project_id = '${pid.replace(/'/g, "''")}') TO STDOUT WITH (FORMAT csv)`;
    await pipeline(c.query(copyTo(sql)), createWriteStream(`${file}.part`));
    await rename(`${file}.part`, file);
  } finally {
    await c.end();
  }
  return (performance.now() - t0) / 1000;
}

/** Timestamps come back from Python as {"$ts": ISO}: Dates again, as pg gives them. */
const revive = (rows: Record<string, unknown>[]) =>
  rows.map((r) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [
        k,
        v && typeof v === "object" && "$ts" in v ? new Date((v as { $ts: string }).$ts) : v,
      ]),
    ),
  );

/**
 * Runs bench/_analytics-duckdb.py on the export. Asynchronously: a blocked event loop would stall the
 * Vigil served by this process (a 10M run's DuckDB part takes minutes; its keep-alive sockets were reset).
 */
async function duckdb(
  csv: string,
  parquet: string,
  cases: Case[],
): Promise<{
  convertS: number;
  results: { label: string; first: number; median: number; rows: Record<string, unknown>[] }[];
} | null> {
  const child = spawn("python3", [path.join(root, "bench/_analytics-duckdb.py")], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "",
    err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  child.stdin.end(
    JSON.stringify({ csv, parquet, runs: BASE_RUNS, queries: cases.map((k) => ({ label: k.label, sql: k.duck })) }),
  );
  const [code] = (await once(child, "close")) as [number | null];
  if (code !== 0) {
    console.log(`DuckDB baseline not run: ${err.trim().split("\n").slice(-1)[0]}`);
    return null;
  }
  return JSON.parse(out);
}

async function measureSize(
  openSet: (dir: string | undefined, events: number) => Promise<EventSet>,
  baselinePool: (url: string) => pg.Pool,
  events: number,
  dir: string | undefined,
): Promise<SizeResult> {
  const cached = dir && path.join(path.resolve(dir), "bench-scaling.json");
  if (REUSE && cached && existsSync(cached)) {
    console.log(`${events} events: results of an earlier run reused (${cached})`);
    return JSON.parse(await readFile(cached, "utf8"));
  }
  const set = await openSet(dir, events);
  try {
    const { pid, now } = set.loaded;
    const baseDb = baselinePool(set.url);
    const cases = makeCases({ now, pid, post: set.post, base: (sql, params) => baseDb.query(sql, params) }, true);
    const csv = path.join(set.dataDir, "bench-events.csv");
    const exportS = existsSync(path.join(set.dataDir, "bench-events.parquet")) ? 0 : await exportCsv(set.url, pid, csv);
    const loadAvg = os.loadavg()[0];
    const queries: SizeResult["queries"] = [];
    const answers: unknown[] = [];
    for (const k of cases) {
      const vigil = await timeIt(k.ours, RUNS);
      const base = await timeIt(k.baseline, BASE_RUNS);
      const answer = await k.ours();
      const mismatch = k.check(answer, (await k.baseline()).rows);
      if (mismatch) throw new Error(`${events} events, ${k.label}: answers differ: ${mismatch}`);
      answers.push(answer);
      queries.push({ label: k.label, days: k.days, target: k.target, vigil, pg: base, duck: null });
      console.log(
        `${events} events, ${k.label}: Vigil ${vigil.median.toFixed(1)} ms (first ${vigil.first.toFixed(1)}), PostgreSQL ${base.median.toFixed(1)} ms`,
      );
    }
    await baseDb.end();
    // DuckDB last, after Vigil's and PostgreSQL's runs (its process holds the whole file's columns in memory).
    const duck = await duckdb(csv, path.join(set.dataDir, "bench-events.parquet"), cases);
    if (duck) {
      for (const [i, r] of duck.results.entries()) {
        const k = cases[i];
        const mismatch = k.check(answers[i], revive(r.rows));
        queries[i].duck = { median: r.median, first: r.first, mismatch };
        console.log(
          `${events} events, ${k.label}: DuckDB ${r.median.toFixed(1)} ms (first ${r.first.toFixed(1)})${mismatch ? `, answer differs: ${mismatch}` : ""}`,
        );
      }
    }
    const result: SizeResult = {
      events,
      at: new Date().toISOString(),
      loadAvg,
      blocks: set.blocks.n,
      exportS,
      convertS: duck?.convertS ?? 0,
      queries,
    };
    if (cached) await writeFile(cached, JSON.stringify(result, null, 1));
    return result;
  } finally {
    await set.close();
  }
}

/** Least-squares slope of log t over log N: t ~ N^b. */
function exponent(points: [number, number][]): number | null {
  const p = points.filter(([, t]) => t > 0);
  if (p.length < 2) return null;
  const xs = p.map(([n]) => Math.log(n)),
    ys = p.map(([, t]) => Math.log(t));
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length,
    my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const sxy = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0),
    sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  return sxy / sxx;
}

export async function runScaling(
  openSet: (dir: string | undefined, events: number) => Promise<EventSet>,
  baselinePool: (url: string) => pg.Pool,
): Promise<void> {
  if (DIRS && DIRS.length !== SIZES.length)
    throw new Error("BENCH_ANALYTICS_SCALING_DIRS needs one directory per size of BENCH_ANALYTICS_SCALING");
  const results: SizeResult[] = [];
  for (const [i, n] of SIZES.entries()) results.push(await measureSize(openSet, baselinePool, n, DIRS?.[i]));
  const labels = results[0].queries.map((q) => q.label);
  const fmt = (t: Timing | null | undefined) =>
    t ? `${t.median < 10 ? t.median.toFixed(1) : t.median.toFixed(0)} ms` : "-";
  const fmtB = (b: number | null) => (b === null ? "-" : b.toFixed(2));
  const series = labels.map((label) => {
    const at = (engine: "vigil" | "pg" | "duck") =>
      results.map(
        (r) => [r.events, r.queries.find((q) => q.label === label)?.[engine]?.median ?? 0] as [number, number],
      );
    return {
      label,
      days: results[0].queries.find((q) => q.label === label)!.days,
      vigil: at("vigil"),
      pg: at("pg"),
      duck: at("duck"),
      b: { vigil: exponent(at("vigil")), pg: exponent(at("pg")), duck: exponent(at("duck")) },
    };
  });
  const json = path.join(root, "docs/images/analytics-scaling.json");
  await writeFile(json, JSON.stringify({ results, series }, null, 1) + "\n");
  const png = path.join(root, "docs/images/analytics-scaling.png");
  const plot = spawnSync("python3", [path.join(root, "bench/_analytics-plot.py"), json, png], { encoding: "utf8" });
  if (plot.status !== 0) console.log(`plot not drawn: ${plot.stderr.trim().split("\n").slice(-1)[0]}`);

  const largest = results[results.length - 1];
  const sizeName = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : n.toLocaleString("en-US"));
  const d7 = largest.queries.filter((q) => q.days === 7);
  const journeys = largest.queries.filter((q) => q.days > 7 && /funnel|retention/.test(q.label));
  const slow7 = d7.filter((q) => q.vigil.median >= 100);
  const slowJ = journeys.filter((q) => q.vigil.median >= 1000);
  const superlinear = series.filter((s) => s.b.vigil !== null && s.b.vigil >= 1);
  const mismatches = results.flatMap((r) =>
    r.queries.filter((q) => q.duck?.mismatch).map((q) => `${sizeName(r.events)} ${q.label}`),
  );
  const lines = [
    `Run ${largest.at.slice(0, 10)}: \`npm run bench analytics -- --scaling\` with ${results.map((r) => sizeName(r.events)).join(", ")} events for one project over 90 days`,
    `(the generator and loader of the standard run; one data directory per size: BENCH_ANALYTICS_SCALING_DIRS).`,
    `Vigil: medians of ${RUNS} runs after a first one, end to end over REST; PostgreSQL: the straightforward SQL on the plain table`,
    `bench_baseline (jsonb data, indexes on (project, timestamp) and (project, type, timestamp)), medians of ${BASE_RUNS} after a first;`,
    `DuckDB ${duckVersion()}: the same rows exported once (CSV, then Parquet ordered by time; ts, type, user_id and the properties plan, country,`,
    `amount as typed columns), queried in process by the Python client, medians of ${BASE_RUNS} after a first. Every Vigil answer was checked equal`,
    `to PostgreSQL's (the bench fails otherwise); DuckDB's answers were checked against Vigil's too${mismatches.length ? ` (differing: ${mismatches.join("; ")})` : " (all equal)"}.`,
    `Machine: ${os.cpus().length} cores shared with other helpers' builds, tests and loads during the run (1-minute load average when each size's`,
    `queries started: ${results.map((r) => `${sizeName(r.events)} ${r.loadAvg.toFixed(1)}`).join(", ")}); absolute times are inflated by that, unevenly.`,
    "",
    `| Query | Events | Vigil | PostgreSQL | DuckDB | PostgreSQL / Vigil | DuckDB / Vigil |`,
    `|---|---|---|---|---|---|---|`,
    ...labels.flatMap((label) =>
      results.map((r) => {
        const q = r.queries.find((x) => x.label === label)!;
        const ratio = (t: Timing | null) => (t ? `${(t.median / q.vigil.median).toFixed(1)}x` : "-");
        return `| ${label} | ${sizeName(r.events)} | ${fmt(q.vigil)} (first ${q.vigil.first.toFixed(0)}) | ${fmt(q.pg)} | ${fmt(q.duck)} | ${ratio(q.pg)} | ${ratio(q.duck)} |`;
      }),
    ),
    "",
    `Growth: the exponent b of t ~ N^b, least squares over the ${results.length} sizes (1 = linear in the project's size;`,
    "every query here has a fixed window, but the data are spread over a fixed 90 days, so the window holds a fixed share of the events).",
    "",
    "| Query | b Vigil | b PostgreSQL | b DuckDB |",
    "|---|---|---|---|",
    ...series.map((s) => `| ${s.label} | ${fmtB(s.b.vigil)} | ${fmtB(s.b.pg)} | ${fmtB(s.b.duck)} |`),
    "",
    "![Query time against events, log-log, one panel per query](images/analytics-scaling.png)",
    "",
    `Targets at ${sizeName(largest.events)} (the largest size here): every 7-day query under 100 ms: ${slow7.length ? `missed by ${slow7.map((q) => `${q.label} (${fmt(q.vigil)})`).join("; ")}` : "met"};`,
    `funnel and retention (30 and 56 days) under 1 s: ${slowJ.length ? `missed by ${slowJ.map((q) => `${q.label} (${fmt(q.vigil)})`).join("; ")}` : "met"};`,
    `fixed-window time growing sublinearly (b < 1): ${superlinear.length ? `not for ${superlinear.map((s) => `${s.label} (b = ${fmtB(s.b.vigil)})`).join("; ")}` : "met for every query"}.`,
    `Figures per size: docs/images/analytics-scaling.json.`,
  ];
  await writeBenchSection("Analytics scaling (`npm run bench analytics -- --scaling`)", lines.join("\n"));
  console.log("\n" + lines.join("\n"));
}

function duckVersion(): string {
  const r = spawnSync("python3", ["-c", "import duckdb; print(duckdb.__version__)"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "(not installed)";
}
