// The status-communication half of `npm run bench pages` (issue #34, Performance), run by
// bench/pages.ts: one Vigil process (node src/main.ts as npm start runs it, embedded deadline runner)
// on its own database of the bench's PostgreSQL, with the local SMTP server the email tests use
// (test/helpers/smtp_server.py, aiosmtpd).
//   1. Subscriber mails: a page with 1,000 confirmed subscribers (rows inserted straight into
//      page_subscribers as a confirmed subscriber's row looks: no confirmation round trips), a manual
//      incident created over REST: mails/s until the SMTP server has all 1,000, and the page's public
//      JSON latency during the send (autocannon at a fixed rate) against the same load before it.
//   2. Maintenance windows: 100 pages, 1,000 monitors, 500 windows (a third recurring every minute,
//      the rest one-off, spread over ~40 s): each start and end's delay from its due time to its
//      maintenance_occurrences row (the transition's commit time), against a baseline of the
//      bench process's own setTimeout lateness at the same due times (the machine's scheduling noise).
//      Run twice: on the embedded runner (the maintenance timer) and with TEMPORAL_ADDRESS set on a
//      dev server of the bench's own (the deadline scan applies the windows).
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { SmtpServer } from "../test/helpers/smtp.js";
import { freePort, setupProject, spawnVigil, waitHealthy } from "./_shared.js";
import { createDatabase, startBenchTemporal, startVigil, type BenchTemporal, type BenchVigil } from "./_temporal.js";

const SUBSCRIBERS = 1_000;
const PAGES = 100;
const MONITORS = 1_000;
const WINDOWS = 500;
const RECURRING = Math.round(WINDOWS / 3);
const ONE_OFF_SPREAD_MS = 40_000;
const RECURRING_MS = 5_000;
/** The public JSON reads during and before the send: a fixed rate over a few keep-alive connections. */
const READS_PER_SECOND = 200;
const READ_CONNECTIONS = 4;
const BASELINE_MS = 10_000;

interface Stats {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

function stats(xs: number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { n: s.length, p50: at(0.5), p99: at(0.99), max: s[s.length - 1] ?? NaN };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function json(
  base: string,
  method: string,
  pathname: string,
  body: unknown,
  auth: { cookie?: string; key?: string },
): Promise<{ status: number; body: { data?: { id: string } } & Record<string, unknown> }> {
  const r = await fetch(base + pathname, {
    method,
    headers: {
      "content-type": "application/json",
      ...(auth.cookie ? { cookie: auth.cookie } : {}),
      ...(auth.key ? { authorization: `Bearer ${auth.key}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json().catch(() => ({})) };
}

interface Reads {
  n: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  bad: number;
}

/**
 * GETs `url` at READS_PER_SECOND over READ_CONNECTIONS keep-alive connections (autocannon, gzip
 * accepted as browsers do, latencies corrected for coordinated omission) until `stop()` is called.
 */
function pacedReads(url: string): { stop(): Promise<Reads> } {
  let done!: (r: Reads) => void;
  let fail!: (e: unknown) => void;
  const result = new Promise<Reads>((resolve, reject) => ((done = resolve), (fail = reject)));
  const instance = autocannon(
    {
      url,
      connections: READ_CONNECTIONS,
      overallRate: READS_PER_SECOND,
      duration: 3_600,
      headers: { "accept-encoding": "gzip" },
    },
    (err, r) => {
      if (err) return fail(err);
      done({
        n: r.requests.total,
        p50: r.latency.p50,
        p99: r.latency.p99,
        p999: r.latency.p99_9,
        max: r.latency.max,
        bad: r.non2xx + r.errors + r.timeouts,
      });
    },
  );
  return {
    stop() {
      instance.stop();
      return result;
    },
  };
}

/** A project with 1,000 monitors (made by their first heartbeat) and 100 published pages of 10 monitors each. */
async function fixture(base: string, port: number, db: pg.Client) {
  const { key, projectId, cookie } = await setupProject(port);
  for (let i = 0; i < MONITORS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, async (_, j) => {
        const r = await json(
          base,
          "POST",
          `/v1/projects/${projectId}/heartbeats/svc-${String(i + j).padStart(4, "0")}`,
          { expectedIntervalMs: 3_600_000, gracePeriodMs: 600_000 },
          { key },
        );
        if (r.status >= 300) throw new Error(`heartbeat ${r.status} ${JSON.stringify(r.body)}`);
      }),
    );
  }
  const ids = (
    await db.query<{ id: string }>("SELECT id FROM monitors WHERE project_id = $1 ORDER BY slug", [projectId])
  ).rows.map((r) => r.id);
  if (ids.length !== MONITORS) throw new Error(`${ids.length} monitors`);
  const pageIds: string[] = [];
  for (let p = 0; p < PAGES; p++) {
    const r = await json(
      base,
      "POST",
      `/v1/projects/${projectId}/pages`,
      {
        slug: `bench-${p}`,
        title: `Bench ${p}`,
        published: true,
        monitors: ids.slice(p * 10, p * 10 + 10).map((monitorId, i) => ({ monitorId, name: `Service ${i}` })),
      },
      { cookie },
    );
    if (r.status !== 201) throw new Error(`create page ${r.status} ${JSON.stringify(r.body)}`);
    pageIds.push(r.body.data!.id);
  }
  return { projectId, cookie, ids, pageIds };
}

const VIGIL_ENV = {
  MAIL_FROM: "status@example.com",
  RATE_LIMIT_WRITES_PER_MINUTE: "100000000",
  RATE_LIMIT_STATUS_READS_PER_MINUTE: "100000000",
  RATE_LIMIT_HEARTBEATS_PER_MINUTE: "100000000",
  MAX_MAINTENANCES_PER_PROJECT: String(WINDOWS),
};

interface Windows {
  all: Stats;
  parts: [string, Stats][];
  quiet: Stats;
  burst: Stats;
  baseline: Stats;
  recorded: number;
  expected: number;
  stillIn: number;
}

/**
 * 500 windows over REST naming 4 monitors each (overlapping): one-off ones start from T0 (after the
 * creation) over ONE_OFF_SPREAD_MS and last 2-5 s; recurring ones run every minute for RECURRING_MS.
 * Their due times reach the runner as in production.
 */
async function measureWindows(
  base: string,
  db: pg.Client,
  f: { projectId: string; cookie: string; ids: string[] },
): Promise<Windows> {
  const { projectId, cookie, ids } = f;
  const T0 = Date.now() + 20_000;
  const creates: Promise<void>[] = [];
  const baselineLate: number[] = [];
  const baselineTimers: NodeJS.Timeout[] = [];
  const expectBaseline = (due: number) =>
    baselineTimers.push(setTimeout(() => baselineLate.push(Date.now() - due), due - Date.now()));
  for (let w = 0; w < WINDOWS; w++) {
    const monitorIds = [0, 1, 2, 3].map((k) => ids[(w * 2 + k * 250) % MONITORS]);
    const recurring = w < RECURRING;
    let body: Record<string, unknown>;
    if (recurring) body = { title: `Cron ${w}`, monitorIds, schedule: { cron: "* * * * *", durationMs: RECURRING_MS } };
    else {
      const k = w - RECURRING;
      const start = T0 + Math.floor((k * ONE_OFF_SPREAD_MS) / (WINDOWS - RECURRING));
      const end = start + 2_000 + (k % 4) * 1_000;
      expectBaseline(start);
      expectBaseline(end);
      body = {
        title: `One-off ${w}`,
        monitorIds,
        startsAt: new Date(start).toISOString(),
        endsAt: new Date(end).toISOString(),
      };
    }
    creates.push(
      json(base, "POST", `/v1/projects/${projectId}/maintenances`, body, { cookie }).then((r) => {
        if (r.status !== 201) throw new Error(`maintenance ${r.status} ${JSON.stringify(r.body)}`);
      }),
    );
    if (creates.length >= 20) await Promise.all(creates.splice(0));
  }
  await Promise.all(creates);
  const created = Date.now();
  if (created > T0) throw new Error(`creating the windows took until ${created - T0} ms after T0`);
  // The recurring windows' occurrences counted: those starting in [T0, end of run).
  const lastOneOffEnd = T0 + ONE_OFF_SPREAD_MS + 5_000;
  const minute = 60_000;
  const cronStart = Math.ceil(T0 / minute) * minute;
  const runEnd = Math.max(lastOneOffEnd, cronStart + RECURRING_MS) + 3_000;
  for (let t = cronStart; t + RECURRING_MS < runEnd; t += minute)
    for (let w = 0; w < RECURRING; w++) {
      expectBaseline(t);
      expectBaseline(t + RECURRING_MS);
    }
  console.log(`maintenance: ${WINDOWS} windows; waiting ${((runEnd - Date.now()) / 1000).toFixed(0)} s`);
  await sleep(runEnd - Date.now());
  for (const t of baselineTimers) clearTimeout(t);
  const occ = await db.query<{ kind: string; recurring: boolean; delay: number; due: Date }>(
    `SELECT o.kind, m.cron IS NOT NULL AS recurring,
            CASE WHEN o.kind = 'started' THEN o.starts_at
               ELSE o.starts_at + coalesce(m.ends_at - m.starts_at, m.duration_ms * interval '1 millisecond') END AS due,
            extract(epoch FROM o.created_at - CASE WHEN o.kind = 'started' THEN o.starts_at
               ELSE o.starts_at + coalesce(m.ends_at - m.starts_at, m.duration_ms * interval '1 millisecond') END) * 1000 AS delay
     FROM maintenance_occurrences o JOIN maintenances m ON m.id = o.maintenance_id
     WHERE m.project_id = $1 AND o.starts_at >= $2 AND o.starts_at < $3`,
    [projectId, new Date(T0), new Date(runEnd)],
  );
  const expected =
    (WINDOWS - RECURRING) * 2 + RECURRING * 2 * Math.floor((runEnd - RECURRING_MS - cronStart) / minute + 1);
  const part = (kind: string, recurring: boolean) =>
    stats(occ.rows.filter((r) => r.kind === kind && r.recurring === recurring).map((r) => Number(r.delay)));
  // One-off transitions due within 2 s after a recurring burst (a minute boundary or RECURRING_MS
  // after it) queue behind it; the others show the runner without a burst.
  const nearBurst = (due: Date) => {
    const inMinute = due.getTime() % minute;
    return inMinute < 2_000 || (inMinute >= RECURRING_MS && inMinute < RECURRING_MS + 2_000);
  };
  const stillIn = Number(
    (await db.query("SELECT count(*) AS n FROM monitors WHERE project_id = $1 AND in_maintenance", [projectId])).rows[0]
      .n,
  );
  const out: Windows = {
    all: stats(occ.rows.map((r) => Number(r.delay))),
    parts: [
      ["One-off starts", part("started", false)],
      ["One-off ends", part("completed", false)],
      ["Recurring starts", part("started", true)],
      ["Recurring ends", part("completed", true)],
    ],
    quiet: stats(occ.rows.filter((r) => !r.recurring && !nearBurst(r.due)).map((r) => Number(r.delay))),
    burst: part("started", true),
    baseline: stats(baselineLate),
    recorded: occ.rows.length,
    expected,
    stillIn,
  };
  console.log("maintenance transitions", out);
  return out;
}

/** The windows part on a Vigil with TEMPORAL_ADDRESS set (its own database and dev server). */
async function temporalWindows(pgUrl: string, tmp: string): Promise<Windows> {
  let temporal: BenchTemporal | undefined;
  let vigil: BenchVigil | undefined;
  const databaseUrl = await createDatabase(pgUrl, `bench_pages_windows_t${Date.now()}`);
  const db = new pg.Client({ connectionString: databaseUrl });
  try {
    temporal = await startBenchTemporal();
    vigil = await startVigil(databaseUrl, path.join(tmp, "windows-temporal"), {
      ...VIGIL_ENV,
      TEMPORAL_ADDRESS: temporal.server.address,
    });
    await db.connect();
    const base = `http://127.0.0.1:${vigil.port}`;
    const f = await fixture(base, vigil.port, db);
    const w = await measureWindows(base, db, f);
    // The deadline scan applied them, not a maintenance timer beside it: none runs with TEMPORAL_ADDRESS.
    const health = (await (await fetch(`${base}/health`)).json()) as { background?: Record<string, unknown> };
    if (!health.background || "maintenance transitions" in health.background)
      throw new Error("with TEMPORAL_ADDRESS set, a maintenance timer ran (or /health lists no background tasks)");
    return w;
  } finally {
    await db.end().catch(() => undefined);
    await vigil?.stop().catch(() => undefined);
    await temporal?.stop().catch(() => undefined);
  }
}

export async function pagesCommsSection(pgUrl: string, tmp: string): Promise<string> {
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query("DROP DATABASE IF EXISTS bench_pages_comms");
  await admin.query("CREATE DATABASE bench_pages_comms");
  await admin.end();
  const databaseUrl = Object.assign(new URL(pgUrl), { pathname: "/bench_pages_comms" }).toString();
  const smtp = await SmtpServer.start();
  const port = await freePort();
  const vigil = spawnVigil({
    databaseUrl,
    port,
    dataDir: path.join(tmp, "comms"),
    env: { ...VIGIL_ENV, SMTP_URL: smtp.url(), PUBLIC_URL: `http://127.0.0.1:${port}` },
  });
  const db = new pg.Client({ connectionString: databaseUrl });
  let mails: number, seconds: number, before: Reads, during: Reads, embedded: Windows;
  try {
    await waitHealthy(port, vigil);
    await db.connect();
    const base = `http://127.0.0.1:${port}`;
    const f = await fixture(base, port, db);

    // ---- 1. Subscriber mails ----
    await db.query(
      `INSERT INTO page_subscribers (id, page_id, project_id, email, confirm_hash, confirm_expires_at, confirmed_at, created_at)
       SELECT 'psub_bench' || i, $1, $2, 'reader' || i || '@example.com', NULL, NULL, now(), now()
       FROM generate_series(1, $3) AS i`,
      [f.pageIds[0], f.projectId, SUBSCRIBERS],
    );
    const jsonUrl = `${base}/v1/status/bench-0`;
    const warm = await fetch(jsonUrl);
    if (warm.status !== 200) throw new Error(`GET ${jsonUrl}: ${warm.status}`);
    const baseline = pacedReads(jsonUrl);
    await sleep(BASELINE_MS);
    before = await baseline.stop();
    const t0 = performance.now();
    const reads = pacedReads(jsonUrl);
    const inc = await json(
      base,
      "POST",
      `/v1/projects/${f.projectId}/incidents`,
      {
        title: "Checkout is slow",
        impact: "major",
        monitorIds: f.ids.slice(0, 3),
        status: "investigating",
        message: "We are looking into slow checkouts.",
      },
      { cookie: f.cookie },
    );
    if (inc.status !== 201) throw new Error(`manual incident ${inc.status} ${JSON.stringify(inc.body)}`);
    const cap = t0 + 300_000;
    while (smtp.messages.length < SUBSCRIBERS && performance.now() < cap) await sleep(10);
    seconds = (performance.now() - t0) / 1000;
    during = await reads.stop();
    mails = smtp.messages.length;
    console.log(`subscriber mails: ${mails}/${SUBSCRIBERS} in ${seconds.toFixed(1)} s`, { before, during });

    // ---- 2. Maintenance windows, embedded runner ----
    // The subscribers go first: windows naming page 0's monitors would otherwise mail them 1,000 times
    // per occurrence, and this part measures the transitions.
    await db.query("DELETE FROM page_subscribers WHERE page_id = $1", [f.pageIds[0]]);
    embedded = await measureWindows(base, db, f);
  } finally {
    await db.end().catch(() => undefined);
    if (vigil.exitCode === null) vigil.kill("SIGKILL");
    await smtp.close().catch(() => undefined);
  }
  // ---- 3. The same windows with TEMPORAL_ADDRESS set ----
  const temporal = await temporalWindows(pgUrl, tmp);

  const n = (x: number, d = 0) =>
    Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }) : "–";
  const row = (name: string, s: Stats) => `| ${name} | ${n(s.n)} | ${n(s.p50)} | **${n(s.p99)}** | ${n(s.max)} |`;
  const readRow = (name: string, r: Reads) =>
    `| ${name} | ${n(r.n)} | ${n(r.p50)} | **${n(r.p99)}** | ${n(r.p999)} | ${n(r.max)} | ${n(r.bad)} |`;
  const met = (w: Windows) => w.all.p99 < 1_000 && w.recorded === w.expected && w.stillIn === 0;
  const windowsTable = (w: Windows) => [
    "| Transitions | Count | p50 ms | p99 ms | max ms |",
    "|---|---|---|---|---|",
    row("All starts and ends", w.all),
    ...w.parts.map(([name, s]) => row(name, s)),
    row("One-off starts and ends not within 2 s after a recurring burst", w.quiet),
    row("Baseline: setTimeout lateness in the bench process", w.baseline),
    "",
    `Transitions recorded: ${n(w.recorded)} of ${n(w.expected)} due; monitors still in maintenance after the run: ${w.stillIn}.`,
    `The ${RECURRING} recurring starts of one minute: ${n(w.burst.n)} in ${n(w.burst.max)} ms after their due time.`,
    `Target p99 < 1 s, every transition applied: ${met(w) ? "met" : "**not met**"}.`,
  ];
  const budgetMet = during.p99 < 20 && during.bad === 0;
  return [
    "**Subscriber mails.** A published page of 10 monitors with 1,000 confirmed subscribers (rows inserted",
    "straight into `page_subscribers` as a confirmed subscriber's row looks, not 1,000 confirmation round trips),",
    "a manual incident created over REST on 3 of its monitors: every mail handed to the local SMTP server the",
    "email tests run (test/helpers/smtp_server.py, aiosmtpd, on 127.0.0.1, every mail parsed and printed), timed",
    "from the POST to the last message received.",
    "",
    "| Mails received | Time | Mails/s |",
    "|---|---|---|",
    `| ${n(mails)}/${n(SUBSCRIBERS)}${mails < SUBSCRIBERS ? " (cap reached)" : ""} | ${seconds.toFixed(1)} s | **${n(mails / seconds)} mails/s** |`,
    "",
    `**The page's public JSON during the send.** GET /v1/status/:slug at a fixed ${READS_PER_SECOND} requests/s over ${READ_CONNECTIONS}`,
    "keep-alive connections (autocannon in the bench process, gzip accepted, latencies corrected for coordinated",
    `omission), from the incident's POST until the last mail arrived; the baseline is the same load for ${BASELINE_MS / 1000} s`,
    "just before the incident, on the same process and page.",
    "",
    "| Public JSON reads | Requests | p50 ms | p99 ms | p99.9 ms | max ms | Errors and non-2xx |",
    "|---|---|---|---|---|---|---|",
    readRow("Baseline: before the incident", before),
    readRow("During the send", during),
    "",
    `Budget (the page JSON's, from the table above: p99 < 20 ms, no errors) during the send: ${budgetMet ? "met" : "**not met**"}.`,
    "",
    `**Maintenance windows.** ${PAGES} published pages of 10 monitors each (${n(MONITORS)} monitors), ${WINDOWS} windows created over`,
    `REST naming 4 monitors each (overlapping): ${WINDOWS - RECURRING} one-off windows of 2-5 s starting over ${ONE_OFF_SPREAD_MS / 1000} s, and`,
    `${RECURRING} recurring ones (\`* * * * *\`, ${RECURRING_MS / 1000} s long: all ${RECURRING} start in the same second, the burst case).`,
    "Delay of each start and end: its `maintenance_occurrences` row's `created_at` (the transition's time) minus its due",
    "time. Baseline: the bench process's own `setTimeout` lateness at the same due times (the machine's scheduling noise).",
    "",
    "Embedded runner (the maintenance timer, at most WINDOWS_AT_ONCE = 4 windows at once, one transaction each):",
    "",
    ...windowsTable(embedded),
    "",
    "With `TEMPORAL_ADDRESS` set (a `temporal server start-dev` of the bench's own, another database, default settings):",
    "the deadline scan applies the windows due before the overdue monitors, then sleeps until the earlier of the next",
    "deadline and the next window; no maintenance timer runs (checked on /health after the run).",
    "",
    ...windowsTable(temporal),
  ].join("\n");
}
