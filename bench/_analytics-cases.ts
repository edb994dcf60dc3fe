// The query set of `npm run bench analytics` (bench/analytics.ts): each case asks Vigil over REST and
// the same question of a plain PostgreSQL table (bench_baseline), and, in the scaling run
// (bench/_analytics-scaling.ts), of DuckDB over the same rows exported to Parquet. Every answer is
// checked equal to the PostgreSQL baseline's.
import type pg from "pg";

const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

const RUNS = Number(process.env.BENCH_ANALYTICS_RUNS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A first run (shown apart: caches cold), then the median of `runs` more. */
export async function timeIt(fn: () => Promise<unknown>, runs = RUNS): Promise<{ median: number; first: number }> {
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

/** Result rows as the checks read them (a pg result's rows, or DuckDB's with timestamps revived as Dates). */
export type Rows = Record<string, unknown>[];
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Check = (ours: any, rows: any[]) => string | null;

export interface Case {
  label: string;
  /** The time target in ms (docs/benchmarks.md), and the window's length in days (for the scaling run's targets). */
  target: number;
  days: number;
  ours: () => Promise<unknown>;
  baseline: () => Promise<pg.QueryResult>;
  /** The same question in DuckDB SQL over the table `ev` (ts TIMESTAMP in UTC, type, user_id, plan, country, amount). */
  duck: string;
  check: Check;
}

export interface CaseContext {
  now: number;
  pid: string;
  post: (route: string, body: unknown) => Promise<unknown>;
  base: (sql: string, params: unknown[]) => Promise<pg.QueryResult>;
}

const eq = (a: unknown, b: unknown) =>
  JSON.stringify(a) === JSON.stringify(b)
    ? null
    : `Vigil ${JSON.stringify(a).slice(0, 300)} != baseline ${JSON.stringify(b).slice(0, 300)}`;
const near = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

/**
 * The six queries of the standard run; with `extended`, also a 3-step funnel over 30 days, an 8-week
 * retention and a daily sum series over 7 days (issue #35's scaling run).
 */
export function makeCases(c: CaseContext, extended: boolean): Case[] {
  const { now, pid, post, base } = c;
  const iso = (ms: number) => new Date(ms).toISOString();
  // DuckDB's table holds UTC wall-clock TIMESTAMPs (no time zone extension needed).
  const lit = (ms: number) => `TIMESTAMP '${iso(ms).replace("T", " ").replace("Z", "")}'`;
  const span = (days: number) => ({
    time: { start: iso(now - days * DAY), end: iso(now) },
    params: [pid, new Date(now - days * DAY), new Date(now)],
    duck: `ts >= ${lit(now - days * DAY)} AND ts <= ${lit(now)}`,
  });
  const d30 = span(30),
    d7 = span(7),
    d56 = span(56);
  const cases: Case[] = [
    {
      label: "count of one type, 30 days",
      target: 30,
      days: 30,
      ours: () =>
        post("analytics/count", { time: d30.time, filters: { field: "event", operator: "equals", value: "view" } }),
      baseline: () =>
        base(
          `SELECT count(*) FROM bench_baseline WHERE project_id = $1 AND type = 'view' AND "timestamp" >= $2 AND "timestamp" <= $3`,
          d30.params,
        ),
      duck: `SELECT count(*) AS count FROM ev WHERE type = 'view' AND ${d30.duck}`,
      check: (o, b) => eq(o.data.count, Number(b[0].count)),
    },
    {
      label: "hourly timeseries, 7 days",
      target: 30,
      days: 7,
      ours: () => post("analytics/timeseries", { time: d7.time, interval: "hour" }),
      baseline: () =>
        base(
          `SELECT date_trunc('hour', "timestamp", 'UTC') b, count(*) FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3 GROUP BY 1`,
          d7.params,
        ),
      duck: `SELECT date_trunc('hour', ts) AS b, count(*) AS count FROM ev WHERE ${d7.duck} GROUP BY 1`,
      check: (o, b) =>
        eq(
          o.data.buckets
            .filter((x: { count: number }) => x.count > 0)
            .map((x: { time: string; count: number }) => [x.time, x.count]),
          b.map((r) => [r.b.toISOString(), Number(r.count)]).sort((x, y) => (x[0] < y[0] ? -1 : 1)),
        ),
    },
    {
      label: "group by plan, country (7 days)",
      target: 400,
      days: 7,
      ours: () => post("analytics/group", { time: d7.time, groupBy: ["plan", "country"] }),
      baseline: () =>
        base(
          `SELECT data->'plan' AS plan, data->'country' AS country, count(*) c FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3 GROUP BY 1, 2 ORDER BY c DESC LIMIT 100`,
          d7.params,
        ),
      duck: `SELECT plan, country, count(*) AS c FROM ev WHERE ${d7.duck} GROUP BY 1, 2 ORDER BY c DESC LIMIT 100`,
      check: (o, b) =>
        eq(
          o.data.groups
            .map((g: { plan: string; country: string; count: number }) => `${g.plan}|${g.country}|${g.count}`)
            .sort(),
          b.map((r) => `${r.plan}|${r.country}|${Number(r.c)}`).sort(),
        ),
    },
    {
      label: "count_unique userId (7 days)",
      target: 400,
      days: 7,
      ours: () =>
        post("analytics/aggregate", {
          time: d7.time,
          aggregations: [{ name: "users", operation: "count_unique", field: "userId" }],
        }),
      baseline: () =>
        base(
          `SELECT count(DISTINCT user_id) FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3`,
          d7.params,
        ),
      duck: `SELECT count(DISTINCT user_id) AS count FROM ev WHERE ${d7.duck}`,
      check: (o, b) => eq(o.data.results[0].value, Number(b[0].count)),
    },
    {
      label: "p95 of amount where plan = pro (7 days)",
      target: 400,
      days: 7,
      ours: () =>
        post("analytics/aggregate", {
          time: d7.time,
          filters: { field: "plan", operator: "equals", value: "pro" },
          aggregations: [{ name: "p95", operation: "p95", field: "amount" }],
        }),
      baseline: () =>
        base(
          `SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY (data->>'amount')::float8) AS p FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3 AND data->>'plan' = 'pro' AND jsonb_typeof(data->'amount') = 'number'`,
          d7.params,
        ),
      duck: `SELECT quantile_cont(amount, 0.95) AS p FROM ev WHERE ${d7.duck} AND plan = 'pro' AND amount IS NOT NULL`,
      check: (o, b) => (near(o.data.results[0].value, b[0].p) ? null : eq(o.data.results[0].value, b[0].p)),
    },
    {
      label: "or filter on data paths, count (7 days)",
      target: 400,
      days: 7,
      ours: () =>
        post("analytics/count", {
          time: d7.time,
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
          d7.params,
        ),
      duck: `SELECT count(*) AS count FROM ev WHERE ${d7.duck} AND (plan = 'team' OR country IN ('de', 'fr'))`,
      check: (o, b) => eq(o.data.count, Number(b[0].count)),
    },
  ];
  if (!extended) return cases;
  const type = (value: string) => ({ filters: { field: "event", operator: "equals", value } });
  // Funnel view -> signup -> purchase, window one day: for each view t1 in `time`, the earliest
  // signup at or after it (t2) and the earliest purchase at or after that signup (t3, the minimum over
  // the signups from t1 on, since "earliest purchase from s" grows with s); the actor reaches step 3 when
  // t3 <= t1 + 1 day. The three types are disjoint, so "each a different event" holds by itself.
  // The frames run newest first (UNBOUNDED PRECEDING .. CURRENT ROW, peers included: the rows at or after t1)
  // so that min() aggregates incrementally; "CURRENT ROW .. UNBOUNDED FOLLOWING" restarts per row (quadratic).
  const funnelSql = (from: string, src: string, ts: string, interval: (s: string) => string) => `
    WITH e AS (SELECT user_id, ${ts} AS ts, type FROM ${src} WHERE ${from}),
    n3 AS (SELECT *, min(CASE WHEN type = 'purchase' THEN ts END) OVER (PARTITION BY user_id ORDER BY ts DESC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS np FROM e),
    n2 AS (SELECT *, min(CASE WHEN type = 'signup' THEN ts END) OVER w AS ns, min(CASE WHEN type = 'signup' THEN np END) OVER w AS nsp
             FROM n3 WINDOW w AS (PARTITION BY user_id ORDER BY ts DESC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
    SELECT count(DISTINCT user_id) AS s1, count(DISTINCT CASE WHEN ns <= ${interval("ts")} THEN user_id END) AS s2,
           count(DISTINCT CASE WHEN nsp <= ${interval("ts")} THEN user_id END) AS s3
      FROM n2 WHERE type = 'view' AND ts <= ${from.includes("$3") ? "$3" : lit(now)}`;
  const retentionSql = (src: string, ts: string, where: string, week: (s: string) => string, plus8: string) => `
    WITH firsts AS (SELECT user_id AS a, ${week(`min(${ts})`)} AS c FROM ${src} WHERE ${where} AND type = 'signup' AND user_id IS NOT NULL GROUP BY 1),
         backs AS (SELECT DISTINCT user_id AS a, ${week(ts)} AS b FROM ${src} WHERE ${where} AND user_id IS NOT NULL)
    SELECT f.c, NULL AS b, count(*) AS n FROM firsts f GROUP BY f.c
    UNION ALL
    SELECT f.c, k.b, count(*) AS n FROM firsts f JOIN backs k ON k.a = f.a AND k.b >= f.c AND k.b < f.c + ${plus8} GROUP BY f.c, k.b`;
  const WEEK = 7 * DAY;
  cases.push(
    {
      label: "funnel view -> signup -> purchase, 1-day window (30 days)",
      target: 1000,
      days: 30,
      ours: () =>
        post("analytics/funnel", { time: d30.time, windowMs: DAY, steps: ["view", "signup", "purchase"].map(type) }),
      baseline: () =>
        base(
          funnelSql(
            `project_id = $1 AND user_id IS NOT NULL AND type IN ('view', 'signup', 'purchase') AND "timestamp" >= $2 AND "timestamp" <= $3::timestamptz + interval '86400 seconds'`,
            "bench_baseline",
            `"timestamp"`,
            (s) => `${s} + interval '86400 seconds'`,
          ),
          d30.params,
        ),
      duck: funnelSql(
        `user_id IS NOT NULL AND type IN ('view', 'signup', 'purchase') AND ts >= ${lit(now - 30 * DAY)} AND ts <= ${lit(now + DAY)}`,
        "ev",
        "ts",
        (s) => `${s} + INTERVAL 86400 SECOND`,
      ),
      check: (o, b) =>
        eq(
          o.data.steps.map((s: { count: number }) => s.count),
          [b[0].s1, b[0].s2, b[0].s3].map(Number),
        ),
    },
    {
      label: "retention signup -> any event, 8 weeks (56 days)",
      target: 1000,
      days: 56,
      ours: () =>
        post("analytics/retention", {
          time: d56.time,
          start: type("signup"),
          return: {},
          interval: "week",
          periods: 8,
        }),
      baseline: () =>
        base(
          retentionSql(
            "bench_baseline",
            `"timestamp"`,
            `project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3`,
            (s) => `date_trunc('week', ${s}, 'UTC')`,
            "interval '8 weeks'",
          ),
          d56.params,
        ),
      duck: retentionSql("ev", "ts", d56.duck, (s) => `date_trunc('week', ${s})`, "INTERVAL 56 DAY"),
      check: (o, b) => {
        const sizes = new Map<number, number>();
        const cells = new Map<string, number>();
        for (const r of b) {
          if (r.b === null) sizes.set(r.c.getTime(), Number(r.n));
          else cells.set(`${r.c.getTime()}/${r.b.getTime()}`, Number(r.n));
        }
        const expected = [...sizes.keys()]
          .sort((x, y) => x - y)
          .map((c) => ({
            start: new Date(c).toISOString(),
            size: sizes.get(c),
            values: Array.from({ length: 8 }, (_, p) =>
              c + p * WEEK > now ? null : (cells.get(`${c}/${c + p * WEEK}`) ?? 0),
            ),
          }));
        return eq(o.data.cohorts, expected);
      },
    },
    {
      label: "daily sum of amount, 7 days",
      target: 100,
      days: 7,
      ours: () =>
        post("analytics/timeseries", {
          time: d7.time,
          interval: "day",
          aggregation: { operation: "sum", field: "amount" },
        }),
      baseline: () =>
        base(
          `SELECT date_trunc('day', "timestamp", 'UTC') b, count(*), sum((data->>'amount')::float8) FILTER (WHERE jsonb_typeof(data->'amount') = 'number') AS v
             FROM bench_baseline WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" <= $3 GROUP BY 1`,
          d7.params,
        ),
      duck: `SELECT date_trunc('day', ts) AS b, count(*) AS count, sum(amount) AS v FROM ev WHERE ${d7.duck} GROUP BY 1`,
      check: (o, b) => {
        const ours = o.data.buckets.filter((x: { count: number }) => x.count > 0);
        const theirs = [...b].sort((x, y) => x.b.getTime() - y.b.getTime());
        const bad =
          ours.length !== theirs.length
            ? "bucket count"
            : ours.findIndex(
                (x: { time: string; count: number; value: number }, i: number) =>
                  x.time !== theirs[i].b.toISOString() ||
                  x.count !== Number(theirs[i].count) ||
                  !near(x.value, Number(theirs[i].v)),
              );
        return bad === -1 ? null : eq(ours, theirs);
      },
    },
  );
  return cases;
}
