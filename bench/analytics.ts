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
import { writeBenchSection } from "./_shared.js";

const EVENTS = Number(process.env.BENCH_ANALYTICS_EVENTS ?? 10_000_000);
const DAYS = Number(process.env.BENCH_ANALYTICS_DAYS ?? 90);
const RUNS = Number(process.env.BENCH_ANALYTICS_RUNS ?? 7);
const HOUR = 3_600_000,
  DAY = 24 * HOUR,
  WEEK = 7 * DAY;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function timeIt(fn: () => Promise<unknown>, runs = RUNS): Promise<{ median: number; first: number }> {
  const t = performance.now();
  await fn();
  const first = performance.now() - t;
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return { median: median(ms), first };
}

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

/** Loads EVENTS generated events for a new project, with rollups, slots and statistics. */
async function load(db: import("../src/storage/db.js").Db, rest: RestClient): Promise<Loaded> {
  const p = await project(rest);
  const pid = p.projectId;
  const now = Date.now();
  const start = now - DAYS * DAY;
  await db.query(
    `CREATE TABLE bench_baseline (id uuid PRIMARY KEY, project_id text NOT NULL, type text NOT NULL, "timestamp" timestamptz NOT NULL, user_id text, data jsonb NOT NULL, context jsonb NOT NULL, tags jsonb NOT NULL)`,
  );
  console.log(`loading ${EVENTS.toLocaleString("en-US")} events over ${DAYS} days...`);
  let t0 = performance.now();
  // Row g lands at a quasi-random time of the range (bench/_events-load.ts).
  const { weeks, assigned } = await loadGenerated(db, pid, GEN, { events: EVENTS, start, spanMs: DAYS * DAY });
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
  return { pid, key: p.key, now, start, events: EVENTS, assigned, loadS, backfillS };
}

async function main() {
  const dataDir = KEEP_DIR ? path.resolve(KEEP_DIR) : await mkdtemp(path.join(os.tmpdir(), "vigil-bench-analytics-"));
  if (KEEP_DIR) await mkdir(dataDir, { recursive: true });
  const markerFile = path.join(dataDir, "bench-analytics.json");
  const previous: Loaded | null =
    KEEP_DIR && existsSync(markerFile) ? JSON.parse(await readFile(markerFile, "utf8")) : null;
  if (previous && previous.events !== EVENTS)
    throw new Error(`${dataDir} holds ${previous.events} events, not ${EVENTS}: remove it or use another directory`);
  // The loader's bulk statements (copies, index builds, VACUUM) run on this pool: no statement timeout.
  const config = parseConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    SESSION_SECRET: "bench-session-secret-0123456789abcdef",
    LOG_LEVEL: "warn",
    PG_POOL_SIZE: "4",
    ANALYTICS_SLOT_INTERVAL_MS: "0",
    ANALYTICS_BLOCK_INTERVAL_MS: "0",
    STATEMENT_TIMEOUT_MS: "0",
  });
  const app = await buildApp(config, { log: pino({ level: "warn" }) });
  const port = await app.listen(0);
  const rest = new RestClient(`http://127.0.0.1:${port}`);
  const db = app.deps.db;
  try {
    const loaded = previous ?? (await load(db, rest));
    if (!previous && KEEP_DIR) await writeFile(markerFile, JSON.stringify(loaded));
    const { pid, now, assigned, loadS, backfillS } = loaded;
    const p = { key: loaded.key };
    // Column blocks of every ended hour, as the background builder makes them (idempotent: a reused
    // directory keeps its blocks).
    let t0 = performance.now();
    const blocks = await buildPending(db, pid, () => new Date(), { sealMs: 0, rebuildMs: 0 });
    const blocksS = (performance.now() - t0) / 1000;
    const blockStats = (
      await db.query<{ n: number; mb: number }>(
        "SELECT (SELECT count(*)::int FROM analytics_blocks WHERE project_id = $1) AS n, (SELECT sum(pg_column_size(body)) / 1e6 FROM analytics_block_columns WHERE project_id = $1)::float8 AS mb",
        [pid],
      )
    ).rows[0];
    console.log(
      `blocks: ${blocks.built} built in ${blocksS.toFixed(0)} s; ${blockStats.n} blocks, ${blockStats.mb.toFixed(0)} MB stored`,
    );

    const iso = (ms: number) => new Date(ms).toISOString();
    const d30 = { start: iso(now - 30 * DAY), end: iso(now) };
    const d7 = { start: iso(now - 7 * DAY), end: iso(now) };
    const post = async (route: string, body: unknown) => {
      const r = await rest.post(`/v1/projects/${pid}/${route}`, body, { key: p.key });
      if (r.status !== 200) throw new Error(`${route}: ${r.status} ${r.text}`);
      return r.body;
    };
    // The baseline runs on its own connection with PostgreSQL's default settings (Vigil's pool sets
    // random_page_cost=1.1), as a typical service would.
    const baseDb = new pg.Pool({
      connectionString: (db as unknown as { options: { connectionString: string } }).options.connectionString,
      max: 1,
    });
    baseDb.on("error", () => undefined);
    const base = (sql: string, params: unknown[]) => baseDb.query(sql, params);
    const W30 = [pid, new Date(now - 30 * DAY), new Date(now)];
    const W7 = [pid, new Date(now - 7 * DAY), new Date(now)];
    // Each case also checks that Vigil's answer equals the baseline's (same rows, same question).
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    type Check = (ours: any, base: pg.QueryResult<any>) => string | null;
    const eq = (a: unknown, b: unknown) =>
      JSON.stringify(a) === JSON.stringify(b)
        ? null
        : `Vigil ${JSON.stringify(a).slice(0, 300)} != baseline ${JSON.stringify(b).slice(0, 300)}`;
    const cases: {
      label: string;
      target: number;
      ours: () => Promise<unknown>;
      baseline: () => Promise<pg.QueryResult>;
      check: Check;
    }[] = [
      {
        label: "count of one type, 30 days",
        target: 30,
        ours: () =>
          post("analytics/count", { time: d30, filters: { field: "event", operator: "equals", value: "view" } }),
        baseline: () =>
          base(
            `SELECT count(*) FROM bench_baseline WHERE project_id = $1 AND type = 'view' AND "timestamp" >= $2 AND "timestamp" <= $3`,
            W30,
          ),
        check: (o, b) => eq(o.data.count, Number(b.rows[0].count)),
      },
      {
        label: "hourly timeseries, 7 days",
        target: 30,
        ours: () => post("analytics/timeseries", { time: d7, interval: "hour" }),
        baseline: () =>
          base(
            `SELECT date_trunc('hour', "timestamp", 'UTC') b, count(*) FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3 GROUP BY 1`,
            W7,
          ),
        check: (o, b) =>
          eq(
            o.data.buckets
              .filter((x: { count: number }) => x.count > 0)
              .map((x: { time: string; count: number }) => [x.time, x.count]),
            b.rows.map((r) => [r.b.toISOString(), Number(r.count)]).sort((x, y) => (x[0] < y[0] ? -1 : 1)),
          ),
      },
      {
        label: "group by plan, country (7 days)",
        target: 400,
        ours: () => post("analytics/group", { time: d7, groupBy: ["plan", "country"] }),
        baseline: () =>
          base(
            `SELECT data->'plan' AS plan, data->'country' AS country, count(*) c FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3 GROUP BY 1, 2 ORDER BY c DESC LIMIT 100`,
            W7,
          ),
        check: (o, b) =>
          eq(
            o.data.groups
              .map((g: { plan: string; country: string; count: number }) => `${g.plan}|${g.country}|${g.count}`)
              .sort(),
            b.rows.map((r) => `${r.plan}|${r.country}|${Number(r.c)}`).sort(),
          ),
      },
      {
        label: "count_unique userId (7 days)",
        target: 400,
        ours: () =>
          post("analytics/aggregate", {
            time: d7,
            aggregations: [{ name: "users", operation: "count_unique", field: "userId" }],
          }),
        baseline: () =>
          base(
            `SELECT count(DISTINCT user_id) FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3`,
            W7,
          ),
        check: (o, b) => eq(o.data.results[0].value, Number(b.rows[0].count)),
      },
      {
        label: "p95 of amount where plan = pro (7 days)",
        target: 400,
        ours: () =>
          post("analytics/aggregate", {
            time: d7,
            filters: { field: "plan", operator: "equals", value: "pro" },
            aggregations: [{ name: "p95", operation: "p95", field: "amount" }],
          }),
        baseline: () =>
          base(
            `SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY (data->>'amount')::float8) AS p FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3 AND data->>'plan' = 'pro' AND jsonb_typeof(data->'amount') = 'number'`,
            W7,
          ),
        check: (o, b) => eq(o.data.results[0].value, b.rows[0].p),
      },
      {
        label: "or filter on data paths, count (7 days)",
        target: 400,
        ours: () =>
          post("analytics/count", {
            time: d7,
            filters: {
              or: [
                { field: "plan", operator: "equals", value: "team" },
                { field: "data.country", operator: "in", value: ["de", "fr"] },
              ],
            },
          }),
        baseline: () =>
          base(
            `SELECT count(*) FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3 AND (data->>'plan' = 'team' OR data->>'country' IN ('de', 'fr'))`,
            W7,
          ),
        check: (o, b) => eq(o.data.count, Number(b.rows[0].count)),
      },
    ];
    const loadAvg = os.loadavg()[0];
    const rows: { label: string; target: number; ours: number; first: number; base: number }[] = [];
    if (process.env.BENCH_ANALYTICS_EXPLAIN) await explainCases(db, cases);
    for (const k of cases) {
      const o = await timeIt(k.ours);
      const b = (await timeIt(k.baseline, Math.max(3, Math.min(RUNS, 5)))).median;
      const mismatch = k.check(await k.ours(), await k.baseline());
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
      `Column blocks of every ended hour built by the service's builder (\`buildPending\`, what the background worker runs): ${blockStats.n} blocks, ${blockStats.mb.toFixed(0)} MB stored${blocks.built ? `, built in ${blocksS.toFixed(0)} s` : " (built by an earlier run on the same BENCH_ANALYTICS_DIR)"}.`,
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
    await app.close();
    if (!KEEP_DIR) await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
