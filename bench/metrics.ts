// `npm run bench metrics`: metric queries over a large point set, against a baseline of the same
// questions answered from the raw points alone, in the same run, on the same database.
//
// Size: BENCH_METRICS_POINTS (default 5,000,000) points across BENCH_METRICS_NAMES (default 50)
// names over BENCH_METRICS_DAYS (default 35) days, half measurements, half counters. Points are
// bulk-loaded with SQL (generate_series) straight into metric_points, interleaved across names as
// live ingestion would store them; rollups and registry totals are then rebuilt from the points
// (rebuildDerived, test/helpers/backfill.ts: derived.test.ts checks it equals the ingest hook's). Everything targets 127.0.0.1 only.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { parseConfig } from "../src/config/index.js";
import { rebuildDerived } from "../test/helpers/backfill.js";
import { aggregate, timeseries } from "../src/metrics/query.js";
import { buildApp } from "../src/server/app.js";
import { RestClient } from "../test/helpers/rest.js";
import { project } from "../test/helpers/fixtures.js";
import { writeBenchSection } from "./_shared.js";

const POINTS = Number(process.env.BENCH_METRICS_POINTS ?? 5_000_000);
const NAMES = Number(process.env.BENCH_METRICS_NAMES ?? 50);
const DAYS = Number(process.env.BENCH_METRICS_DAYS ?? 35);
const RUNS = Number(process.env.BENCH_METRICS_RUNS ?? 25);
const HOUR = 3600_000,
  DAY = 24 * HOUR;

const log = (...a: unknown[]) => console.log(...a);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * p;
  const lo = Math.floor(pos);
  return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (pos - lo);
}

async function timeIt(runs: number, fn: (i: number) => Promise<unknown>): Promise<{ median: number; p95: number }> {
  for (let i = 0; i < 3; i++) await fn(i);
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn(i);
    ms.push(performance.now() - t0);
  }
  return { median: pct(ms, 0.5), p95: pct(ms, 0.95) };
}

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "vigil-bench-metrics-"));
  // The loader's bulk statements (copies, index builds, VACUUM) run on this pool: no statement timeout.
  const config = parseConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    SESSION_SECRET: "bench-session-secret-0123456789abcdef",
    LOG_LEVEL: "warn",
    PG_POOL_SIZE: "4",
    STATEMENT_TIMEOUT_MS: "0",
  });
  const app = await buildApp(config, { log: pino({ level: "warn" }) });
  const port = await app.listen(0);
  const rest = new RestClient(`http://127.0.0.1:${port}`);
  const db = app.deps.db;
  try {
    const p = await project(rest);
    const now = Date.now();
    const start = now - DAYS * DAY;
    const names = Array.from({ length: NAMES }, (_, i) => (i % 2 === 0 ? `bench.m${i}` : `bench.c${i}`));
    const reg = await db.query<{ id: string; name: string }>(
      "INSERT INTO metrics (project_id, name, type, unit) SELECT $1, n, CASE WHEN n LIKE 'bench.m%' THEN 'measurement' ELSE 'counter' END, 'ms' FROM unnest($2::text[]) n RETURNING id::text, name",
      [p.projectId, names],
    );
    const ids = reg.rows.map((r) => r.id).sort((a, b) => Number(a) - Number(b));
    const idOf = new Map(reg.rows.map((r) => [r.name, r.id]));
    const firstId = Number(ids[0]);

    log(`loading ${POINTS.toLocaleString()} points, ${NAMES} names, ${DAYS} days...`);
    const tLoad = performance.now();
    const CHUNK = 500_000;
    const step = (DAYS * DAY) / Math.ceil(POINTS / NAMES); // ms between two points of one name
    for (let off = 0; off < POINTS; off += CHUNK) {
      const n = Math.min(CHUNK, POINTS - off);
      // Point i belongs to name i % NAMES; even names are measurements (op 0), odd ones counters
      // (70 % increments, 30 % decrements, stored signed).
      await db.query(
        `INSERT INTO metric_points (metric_id, ts, event_id, v, op, tags)
         SELECT $1::bigint + (i % $2), to_timestamp(($3::float8 + (i / $2) * $4::float8 + random() * $4::float8) / 1000), gen_random_uuid(),
                CASE WHEN (i % $2) % 2 = 0 THEN round((random() * 500)::numeric, 2)::float8
                     WHEN r < 0.7 THEN floor(random() * 10) + 1 ELSE -(floor(random() * 5) + 1) END,
                CASE WHEN (i % $2) % 2 = 0 THEN 0 WHEN r < 0.7 THEN 1 ELSE 2 END,
                jsonb_build_object('host', 'h' || (i % 8))
         FROM (SELECT i, random() AS r FROM generate_series($5::bigint, $6::bigint) i) g`,
        [firstId, NAMES, start, step, off, off + n - 1],
      );
      process.stdout.write(`  ${(off + n).toLocaleString()}\r`);
    }
    const loadS = (performance.now() - tLoad) / 1000;
    const tBackfill = performance.now();
    await rebuildDerived(db, ids);
    const backfillS = (performance.now() - tBackfill) / 1000;
    await db.query("VACUUM ANALYZE metric_points");
    await db.query("VACUUM ANALYZE metric_rollups");
    await db.query("VACUUM ANALYZE metrics");
    const sizes = await db.query<{ points: number; rollups: number; pts_size: string; roll_size: string }>(
      "SELECT (SELECT count(*) FROM metric_points) AS points, (SELECT count(*) FROM metric_rollups) AS rollups, pg_size_pretty(pg_total_relation_size('metric_points')) AS pts_size, pg_size_pretty(pg_total_relation_size('metric_rollups')) AS roll_size",
    );
    log(`\nloaded in ${loadS.toFixed(1)} s; backfill (rollups + totals) ${backfillS.toFixed(1)} s;`, sizes.rows[0]);

    const measure = (i: number) => names[(2 * i) % NAMES];
    const counter = (i: number) => names[(2 * i + 1) % NAMES];
    const day30 = { start: new Date(now - 30 * DAY).toISOString(), end: new Date(now).toISOString() };
    const day7 = { start: new Date(now - 7 * DAY).toISOString(), end: new Date(now).toISOString() };
    const range30 = { from: now - 30 * DAY, to: now + 1 };
    const range7 = { from: now - 7 * DAY, to: now + 1 };
    const post = async (route: string, body: object) => {
      const r = await rest.post(`/v1/projects/${p.projectId}/metrics/${route}`, body, { key: p.key });
      if (r.status !== 200) throw new Error(`${route}: ${r.status} ${r.text}`);
      return r.body.data;
    };
    const sel = (name: string, ops: number[], r: { from: number; to: number }) => ({
      metricId: idOf.get(name)!,
      ops,
      negate: false,
      ...r,
    });

    type Row = {
      label: string;
      target: number;
      rest: { median: number; p95: number };
      direct: { median: number; p95: number };
      raw: { median: number; p95: number };
    };
    const rows: Row[] = [];
    const bench = async (
      label: string,
      target: number,
      viaRest: (i: number) => Promise<unknown>,
      direct: (i: number) => Promise<unknown>,
      raw: (i: number) => Promise<unknown>,
    ) => {
      const r = {
        label,
        target,
        rest: await timeIt(RUNS, viaRest),
        direct: await timeIt(RUNS, direct),
        raw: await timeIt(RUNS, raw),
      };
      rows.push(r);
      log(
        `${label}: REST median ${r.rest.median.toFixed(1)} ms (p95 ${r.rest.p95.toFixed(1)}), direct ${r.direct.median.toFixed(2)} ms, raw baseline ${r.raw.median.toFixed(1)} ms -> ${(r.raw.median / r.direct.median).toFixed(1)}x`,
      );
    };

    // Sanity: the rollup path and the raw path agree.
    const a = await post("query", { name: measure(0), aggregation: "avg", time: day30 });
    const b = await db.query(
      "SELECT avg(v) AS v, count(*) AS n FROM metric_points WHERE metric_id = $1 AND ts >= $2 AND ts < $3",
      [idOf.get(measure(0)), new Date(range30.from), new Date(range30.to)],
    );
    if (a.count !== b.rows[0].n || Math.abs(a.value - b.rows[0].v) > 1e-6 * Math.abs(b.rows[0].v))
      throw new Error(`rollup avg ${a.value}/${a.count} != raw ${b.rows[0].v}/${b.rows[0].n}`);

    await bench(
      "current (counter)",
      50,
      (i) => post("current", { name: counter(i) }),
      (i) =>
        db.query("SELECT total, last_ts FROM metrics WHERE project_id = $1 AND name = $2", [p.projectId, counter(i)]),
      (i) => db.query("SELECT sum(v), max(ts) FROM metric_points WHERE metric_id = $1", [idOf.get(counter(i))]),
    );
    await bench(
      "current (measurement)",
      50,
      (i) => post("current", { name: measure(i) }),
      (i) =>
        db.query("SELECT last_value, last_ts FROM metrics WHERE project_id = $1 AND name = $2", [
          p.projectId,
          measure(i),
        ]),
      (i) =>
        db.query("SELECT v, ts FROM metric_points WHERE metric_id = $1 ORDER BY ts DESC LIMIT 1", [
          idOf.get(measure(i)),
        ]),
    );
    await bench(
      "30-day avg (measurement)",
      50,
      (i) => post("query", { name: measure(i), aggregation: "avg", time: day30 }),
      (i) => aggregate(db, sel(measure(i), [0], range30), "avg"),
      (i) =>
        db.query(
          "SELECT avg(v), count(*) FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= $3 AND ts < $4",
          [idOf.get(measure(i)), [0], new Date(range30.from), new Date(range30.to)],
        ),
    );
    await bench(
      "30-day net change (counter sum)",
      50,
      (i) => post("query", { name: counter(i), time: day30 }),
      (i) => aggregate(db, sel(counter(i), [1, 2], range30), "sum"),
      (i) =>
        db.query(
          "SELECT sum(v), count(*) FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= $3 AND ts < $4",
          [idOf.get(counter(i)), [1, 2], new Date(range30.from), new Date(range30.to)],
        ),
    );
    await bench(
      "7-day hourly timeseries (avg)",
      50,
      (i) => post("timeseries", { name: measure(i), interval: "1h", aggregation: "avg", time: day7 }),
      (i) => timeseries(db, sel(measure(i), [0], range7), "avg", HOUR),
      (i) =>
        db.query(
          "SELECT date_bin('1 hour', ts, '1970-01-05T00:00:00Z') AS b, avg(v), count(*) FROM metric_points WHERE metric_id = $1 AND op = ANY($2::int2[]) AND ts >= $3 AND ts < $4 GROUP BY 1 ORDER BY 1",
          [idOf.get(measure(i)), [0], new Date(range7.from), new Date(range7.to)],
        ),
    );
    await bench(
      "30-day p95 (exact, raw points)",
      500,
      (i) => post("query", { name: measure(i), aggregation: "p95", time: day30 }),
      (i) => aggregate(db, sel(measure(i), [0], range30), "p95"),
      (i) =>
        db.query(
          "SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY v) FROM metric_points WHERE metric_id = $1 AND ts >= $2 AND ts < $3",
          [idOf.get(measure(i)), new Date(range30.from), new Date(range30.to)],
        ),
    );

    const perName = Math.round(POINTS / NAMES);
    const lines = [
      `Run ${new Date().toISOString().slice(0, 10)}: \`npm run bench metrics\` with ${POINTS.toLocaleString("en-US")} points, ${NAMES} names (half measurements, half counters), ${DAYS} days`,
      `(about ${perName.toLocaleString("en-US")} points per name, ${Math.round((perName * 30) / DAYS).toLocaleString("en-US")} in a 30-day window). Points bulk-loaded with SQL into \`metric_points\``,
      `in ${loadS.toFixed(0)} s; rollups and totals rebuilt from the points (\`rebuildDerived\`) in ${backfillS.toFixed(0)} s;`,
      `${Number(sizes.rows[0].rollups).toLocaleString("en-US")} rollup rows (${sizes.rows[0].roll_size}) beside ${sizes.rows[0].pts_size} of points. ${RUNS} timed runs per query after 3 warm-ups, rotating over the names.`,
      "",
      '"REST" is end to end over HTTP on 127.0.0.1 (auth, validation, JSON); "direct" is the same query code without HTTP;',
      '"raw baseline" answers the same question from `metric_points` alone (sum/avg/percentile over the range, or the',
      "latest row), also without HTTP. The ratio compares direct with raw baseline (medians).",
      "",
      "| Query | Target | REST median | REST p95 | Direct median | Raw baseline median | Baseline / direct |",
      "|---|---|---|---|---|---|---|",
      ...rows.map(
        (r) =>
          `| ${r.label} | < ${r.target} ms | ${r.rest.median.toFixed(1)} ms | ${r.rest.p95.toFixed(1)} ms | ${r.direct.median.toFixed(2)} ms | ${r.raw.median.toFixed(1)} ms | ${(r.raw.median / r.direct.median).toFixed(1)}x |`,
      ),
      "",
      `Targets met (REST p95 under target): ${
        rows.every((r) => r.rest.p95 < r.target)
          ? "yes, all"
          : rows
              .filter((r) => r.rest.p95 >= r.target)
              .map((r) => r.label)
              .join(", ") + " missed"
      }.`,
      "Percentiles are exact, so they read raw points by design (index-only range scan over `(metric_id, ts) INCLUDE (v, op)`);",
      "their baseline is the same scan, hence a ratio near 1.",
    ];
    await writeBenchSection("Metrics (`npm run bench metrics`)", lines.join("\n"));
    log("\n" + lines.join("\n"));
  } finally {
    await app.close();
    await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
