// `npm run bench analytics`: the analytics queries over a large event set, against a baseline of
// the same questions on a plain table with a jsonb column and indexes on (project, timestamp) and
// (project, type, timestamp), in the same run, on the same PostgreSQL. Targets 127.0.0.1 only.
//
// Size: BENCH_ANALYTICS_EVENTS (default 10,000,000) events for one project over BENCH_ANALYTICS_DAYS
// (default 90) days, skewed (types, users, plans, countries, paths Zipf-like; traffic growing over
// time). Bulk-loaded with SQL (generate_series) into the events partitions (slots assigned by the registry
// on a first 20k sample, the rest loaded with slots filled; the baseline copied from the same rows);
// rollups rebuilt from the events (rebuildRollups, test/helpers/backfill.ts) and the sample's slots by
// the service's own backfill (backfillSlots).
//
// Flags: --load-only (load and build blocks into BENCH_ANALYTICS_DIR, then stop: no queries, no docs);
// --scaling (issue #35: the query set at several sizes against PostgreSQL and DuckDB, with growth
// exponents and a plot; bench/_analytics-scaling.ts). The queries: bench/_analytics-cases.ts.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import pino from "pino";
import { buildPending } from "../src/analytics/blocks/build.js";
import { finishBackfill, loadGenerated } from "./_events-load.js";
import { parseConfig } from "../src/config/index.js";
import { buildApp } from "../src/server/app.js";
import { project } from "../test/helpers/fixtures.js";
import { RestClient } from "../test/helpers/rest.js";
import { makeCases, timeIt } from "./_analytics-cases.js";
import { runScaling } from "./_analytics-scaling.js";
import { writeBenchSection } from "./_shared.js";

const EVENTS = Number(process.env.BENCH_ANALYTICS_EVENTS ?? 10_000_000);
const DAYS = Number(process.env.BENCH_ANALYTICS_DAYS ?? 90);
const HOUR = 3_600_000,
  DAY = 24 * HOUR,
  WEEK = 7 * DAY;

// One generated event per row number g: skewed fields from deterministic hashes of g.
const GEN = `
  WITH s AS (
    SELECT g, $2::timestamptz + (($3::float8 * sqrt(((g * 0.6180339887) - floor(g * 0.6180339887)))) * interval '1 millisecond') AS ts,
           (hashint8(g)::bigint + 2147483648) / 4294967296.0 AS r1, (hashint8(g + 7919)::bigint + 2147483648) / 4294967296.0 AS r2,
           (hashint8(g + 104729)::bigint + 2147483648) / 4294967296.0 AS r3, (hashint8(g + 1299709)::bigint + 2147483648) / 4294967296.0 AS r4
    FROM generate_series($4::bigint, $5::bigint) AS g
  )
  SELECT $1::text AS project_id, ts,
         (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid AS id,
         (ARRAY['view','view','view','view','view','click','click','click','signup','purchase','error','$page'])[1 + floor(r1 * 12)::int] AS type,
         CASE WHEN r2 < 0.95 THEN 'user_' || floor(100000 * r2 ^ 3)::int END AS user_id,
         jsonb_build_object(
           'plan', (ARRAY['free','free','free','free','pro','pro','team','enterprise'])[1 + floor(r3 * 8)::int],
           'country', (ARRAY['us','us','us','de','de','fr','gb','in','br','jp','ca','es','it','nl','se','pl'])[1 + floor(r4 * 16)::int],
           'path', '/p/' || floor(200 * r3 ^ 2)::int,
           'amount', round((r4 * 200)::numeric, 2),
           'durationMs', floor(r1 * 5000)::int,
           'browser', (ARRAY['chrome','chrome','safari','firefox','edge'])[1 + floor(r2 * 5)::int]) AS data,
         jsonb_build_object('userAgent', 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
           'ip', '10.0.' || (g % 250) || '.' || (g % 200), 'receivedAt', ts, 'page', jsonb_build_object('title', 'Page ' || (g % 97), 'referrer', 'https://example.com/')) AS context,
         jsonb_build_object('env', CASE WHEN r1 < 0.9 THEN 'production' ELSE 'preview' END) AS tags
  FROM s`;

/**
 * BENCH_ANALYTICS_EXPLAIN=1: for each case, captures the SQL the service sends (the app runs in this
 * process) and prints EXPLAIN (ANALYZE, BUFFERS) of the slowest statement.
 */
async function explainCases(
  db: import("../src/storage/db.js").Db,
  cases: { label: string; ours: () => Promise<unknown> }[],
): Promise<void> {
  const original = db.query.bind(db);
  for (const k of cases) {
    const seen: { text: string; values: unknown[]; ms: number }[] = [];
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    (db as any).query = async (text: any, values?: any) => {
      const t0 = performance.now();
      const r = await original(text, values);
      if (typeof text === "string") seen.push({ text, values: values ?? [], ms: performance.now() - t0 });
      return r;
    };
    await k.ours();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    (db as any).query = original;
    const slow = seen.sort((a, b) => b.ms - a.ms)[0];
    if (!slow) continue;
    const plan = await original(`EXPLAIN (ANALYZE, BUFFERS) ${slow.text}`, slow.values);
    console.log(
      `\n=== ${k.label} (${slow.ms.toFixed(1)} ms)\n${slow.text}\n${plan.rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n")}`,
    );
  }
}

interface Loaded {
  pid: string;
  key: string;
  now: number;
  start: number;
  events: number;
  assigned: string[];
  loadS: number;
  backfillS: number;
}

/**
 * BENCH_ANALYTICS_DIR=<dir> keeps the data directory (embedded PostgreSQL) after the run and reuses
 * it: when it already holds a loaded set of the same size, the load is skipped (a 10M load takes
 * about 25 minutes). Without it, a temporary directory is used and removed.
 */
const KEEP_DIR = process.env.BENCH_ANALYTICS_DIR;
const RUNS = Number(process.env.BENCH_ANALYTICS_RUNS ?? 7);

/** Loads `events` generated events for a new project, with rollups, slots and statistics. */
async function load(db: import("../src/storage/db.js").Db, rest: RestClient, events: number): Promise<Loaded> {
  const p = await project(rest);
  const pid = p.projectId;
  const now = Date.now();
  const start = now - DAYS * DAY;
  await db.query(
    `CREATE TABLE bench_baseline (id uuid PRIMARY KEY, project_id text NOT NULL, type text NOT NULL, "timestamp" timestamptz NOT NULL, user_id text, data jsonb NOT NULL, context jsonb NOT NULL, tags jsonb NOT NULL)`,
  );
  console.log(`loading ${events.toLocaleString("en-US")} events over ${DAYS} days...`);
  let t0 = performance.now();
  // Row g lands at a quasi-random time of the range (bench/_events-load.ts).
  const { weeks, assigned } = await loadGenerated(db, pid, GEN, { events, start, spanMs: DAYS * DAY });
  // The baseline holds the very same rows, copied per weekly partition (no second generation).
  for (const w of weeks) {
    await db.query(
      `INSERT INTO bench_baseline (project_id, "timestamp", id, type, user_id, data, context, tags)
      SELECT project_id, ts, id, type, user_id, data, context, tags FROM events WHERE project_id = $1 AND ts >= $2 AND ts < $3`,
      [pid, new Date(w), new Date(w + WEEK)],
    );
  }
  await db.query(`CREATE INDEX ON bench_baseline (project_id, "timestamp")`);
  await db.query(`CREATE INDEX ON bench_baseline (project_id, type, "timestamp")`);
  const loadS = (performance.now() - t0) / 1000;
  t0 = performance.now();
  await finishBackfill(db, pid, { start, end: now });
  const backfillS = (performance.now() - t0) / 1000;
  // Index-only scans need the visibility map set; after a bulk load that is VACUUM's job (in
  // production autovacuum does it for insert-only partitions: autovacuum_vacuum_insert_threshold).
  await db.query("VACUUM ANALYZE events");
  await db.query("VACUUM ANALYZE bench_baseline");
  await db.query("VACUUM ANALYZE analytics_rollups");
  console.log(`\nloaded in ${loadS.toFixed(0)} s, rollups+slots (${assigned.join(", ")}) in ${backfillS.toFixed(0)} s`);
  return { pid, key: p.key, now, start, events, assigned, loadS, backfillS };
}

/** A loaded event set, served by a Vigil in this process on its own data directory. */
export interface EventSet {
  loaded: Loaded;
  db: import("../src/storage/db.js").Db;
  /** The connection string of the embedded PostgreSQL (the baselines open their own connections). */
  url: string;
  dataDir: string;
  blocks: { built: number; seconds: number; n: number; mb: number };
  /** Vigil's REST answer (a 200's body; anything else throws). */
  post: (route: string, body: unknown) => Promise<unknown>;
  close: () => Promise<void>;
}

/**
 * Opens the event set of `dir` (loading `events` events into it first when it holds none; a
 * temporary directory, removed on close, when `dir` is undefined) and builds the column blocks of
 * every ended hour, as the background builder does (idempotent: a reused directory keeps its blocks).
 */
export async function openSet(dir: string | undefined, events: number): Promise<EventSet> {
  const dataDir = dir ? path.resolve(dir) : await mkdtemp(path.join(os.tmpdir(), "vigil-bench-analytics-"));
  if (dir) await mkdir(dataDir, { recursive: true });
  const markerFile = path.join(dataDir, "bench-analytics.json");
  const previous: Loaded | null = dir && existsSync(markerFile) ? JSON.parse(await readFile(markerFile, "utf8")) : null;
  if (previous && previous.events !== events)
    throw new Error(`${dataDir} holds ${previous.events} events, not ${events}: remove it or use another directory`);
  // The loader's bulk statements (copies, index builds, VACUUM) run on this pool: no statement timeout.
  const config = parseConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    SESSION_SECRET: "bench-session-secret-0123456789abcdef",
    LOG_LEVEL: "warn",
    METRICS_PORT: "off",
    PG_POOL_SIZE: "4",
    ANALYTICS_SLOT_INTERVAL_MS: "0",
    ANALYTICS_BLOCK_INTERVAL_MS: "0",
    STATEMENT_TIMEOUT_MS: "0",
  });
  const app = await buildApp(config, { log: pino({ level: "warn" }) });
  const close = async () => {
    await app.close();
    if (!dir) await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
  };
  try {
    const port = await app.listen(0);
    const rest = new RestClient(`http://127.0.0.1:${port}`);
    const db = app.deps.db;
    const loaded = previous ?? (await load(db, rest, events));
    if (!previous && dir) await writeFile(markerFile, JSON.stringify(loaded));
    const t0 = performance.now();
    const built = await buildPending(db, loaded.pid, () => new Date(), { sealMs: 0, rebuildMs: 0 });
    const seconds = (performance.now() - t0) / 1000;
    const stats = (
      await db.query<{ n: number; mb: number }>(
        "SELECT (SELECT count(*)::int FROM analytics_blocks WHERE project_id = $1) AS n, (SELECT sum(pg_column_size(body)) / 1e6 FROM analytics_block_columns WHERE project_id = $1)::float8 AS mb",
        [loaded.pid],
      )
    ).rows[0];
    console.log(
      `blocks: ${built.built} built in ${seconds.toFixed(0)} s; ${stats.n} blocks, ${stats.mb.toFixed(0)} MB stored`,
    );
    const post = async (route: string, body: unknown) => {
      const r = await rest.post(`/v1/projects/${loaded.pid}/${route}`, body, { key: loaded.key });
      if (r.status !== 200) throw new Error(`${route}: ${r.status} ${r.text}`);
      return r.body;
    };
    const url = (db as unknown as { options: { connectionString: string } }).options.connectionString;
    return { loaded, db, url, dataDir, blocks: { built: built.built, seconds, ...stats }, post, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A pool of one connection with PostgreSQL's default settings (Vigil's pool sets random_page_cost=1.1), as a typical service would. */
export function baselinePool(url: string): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max: 1 });
  p.on("error", () => undefined);
  return p;
}

async function main() {
  if (process.argv.includes("--scaling")) return runScaling(openSet, baselinePool);
  const set = await openSet(KEEP_DIR, EVENTS);
  try {
    // --load-only: prepare a BENCH_ANALYTICS_DIR (events, rollups, slots, blocks) for later runs; no queries, no docs.
    if (process.argv.includes("--load-only")) return;
    const { pid, now, assigned, loadS, backfillS } = set.loaded;
    const blocks = set.blocks;
    const baseDb = baselinePool(set.url);
    const cases = makeCases({ now, pid, post: set.post, base: (sql, params) => baseDb.query(sql, params) }, false);
    const loadAvg = os.loadavg()[0];
    const rows: { label: string; target: number; ours: number; first: number; base: number }[] = [];
    if (process.env.BENCH_ANALYTICS_EXPLAIN) await explainCases(set.db, cases);
    for (const k of cases) {
      const o = await timeIt(k.ours, RUNS);
      const b = (await timeIt(k.baseline, Math.max(3, Math.min(RUNS, 5)))).median;
      const mismatch = k.check(await k.ours(), (await k.baseline()).rows);
      if (mismatch) throw new Error(`${k.label}: answers differ: ${mismatch}`);
      rows.push({ label: k.label, target: k.target, ours: o.median, first: o.first, base: b });
      console.log(
        `${k.label}: ours ${o.median.toFixed(1)} ms (first ${o.first.toFixed(1)} ms), baseline ${b.toFixed(1)} ms, ${(b / o.median).toFixed(1)}x`,
      );
    }
    await baseDb.end();
    const full = EVENTS >= 10_000_000;
    const lines = [
      `Run ${new Date().toISOString().slice(0, 10)}: \`${full ? "" : `BENCH_ANALYTICS_EVENTS=${EVENTS} `}npm run bench analytics\` with ${EVENTS.toLocaleString("en-US")} events for one project over ${DAYS} days`,
      full
        ? "(the full size of the issue)."
        : `(**smaller than the issue's 10,000,000**: the full load did not fit the time available; run without the variable for the full size).`,
      `Bulk-loaded with SQL into the weekly partitions in ${loadS.toFixed(0)} s (slots assigned by \`assignSlots\` on a first 20k sample, the rest loaded with slots filled, the baseline table copied from the same rows);`,
      `rollups rebuilt from the events (\`rebuildRollups\`) and the sample's slots by the service's backfill (\`backfillSlots\`; slots: ${assigned.join(", ")}) in ${backfillS.toFixed(0)} s, then VACUUM ANALYZE.`,
      `Column blocks of every ended hour built by the service's builder (\`buildPending\`, what the background worker runs): ${blocks.n} blocks, ${blocks.mb.toFixed(0)} MB stored${blocks.built ? `, built in ${blocks.seconds.toFixed(0)} s` : " (built by an earlier run on the same BENCH_ANALYTICS_DIR)"}.`,
      `Medians of ${RUNS} runs after a first run; the first run (the service's block cache empty: blocks read from PostgreSQL and decoded) is shown apart.`,
      "Every answer of Vigil was checked equal to the baseline's (counts, buckets, groups, distinct users, the p95 value); the bench fails otherwise.",
      '"Vigil" is end to end over REST on 127.0.0.1 (auth, validation, planning, JSON); the baseline is the bare SQL on a plain table',
      "with a jsonb column and indexes on (project, timestamp) and (project, type, timestamp), without HTTP, on its own connection",
      "with PostgreSQL's default planner settings (Vigil's connections set random_page_cost=1.1).",
      `Machine: ${os.cpus().length} cores, shared with other work during the run (1-minute load average ${loadAvg.toFixed(1)} when the queries started).`,
      "",
      "| Query | Target | Vigil (REST) median | Vigil first run | Baseline median | Baseline / Vigil |",
      "|---|---|---|---|---|---|",
      ...rows.map(
        (r) =>
          `| ${r.label} | < ${r.target} ms | ${r.ours.toFixed(1)} ms | ${r.first.toFixed(1)} ms | ${r.base.toFixed(1)} ms | ${(r.base / r.ours).toFixed(1)}x |`,
      ),
      "",
      `Time targets: ${
        rows.every((r) => r.ours < r.target)
          ? "all met"
          : "missed by " +
            rows
              .filter((r) => r.ours >= r.target)
              .map((r) => r.label)
              .join("; ")
      }. ` +
        `10x over baseline: ${
          rows.every((r) => r.base / r.ours >= 10)
            ? "all"
            : rows
                .filter((r) => r.base / r.ours < 10)
                .map((r) => r.label)
                .join("; ") + " not reached"
        }.`,
    ];
    await writeBenchSection("Analytics (`npm run bench analytics`)", lines.join("\n"));
    console.log("\n" + lines.join("\n"));
  } finally {
    await set.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
