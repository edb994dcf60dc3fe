// The status-communication half of `npm run bench pages` (issue #34, Performance), run by
// bench/pages.ts: one Vigil process (node src/main.ts as npm start runs it, embedded deadline runner)
// on its own database of the bench's PostgreSQL, with the local SMTP server the email tests use
// (test/helpers/smtp_server.py, aiosmtpd).
//   1. Subscriber mails: a page with 1,000 confirmed subscribers (rows inserted straight into
//      page_subscribers as a confirmed subscriber's row looks: no confirmation round trips), a manual
//      incident created over REST: mails/s until the SMTP server has all 1,000, and the page's public
//      JSON latency during the send against before it (the baseline, same process, same pace).
//   2. Maintenance windows: 100 pages, 1,000 monitors, 500 windows (a third recurring every minute,
//      the rest one-off, spread over ~40 s): each start and end's delay from its due time to its
//      maintenance_occurrences row (the transition's commit time), against a baseline of the
//      bench process's own setTimeout lateness at the same due times (the machine's scheduling noise).
import path from "node:path";
import pg from "pg";
import { SmtpServer } from "../test/helpers/smtp.js";
import { freePort, setupProject, spawnVigil, waitHealthy } from "./_shared.js";

const SUBSCRIBERS = 1_000;
const PAGES = 100;
const MONITORS = 1_000;
const WINDOWS = 500;
const RECURRING = Math.round(WINDOWS / 3);
const ONE_OFF_SPREAD_MS = 40_000;
const RECURRING_MS = 5_000;
const SAMPLE_EVERY_MS = 20;

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

/** GETs `url` every SAMPLE_EVERY_MS (one at a time) until `stop()`; the latencies in ms. */
async function sampleLatency(url: string, stop: () => boolean): Promise<number[]> {
  const out: number[] = [];
  while (!stop()) {
    const t0 = performance.now();
    const r = await fetch(url);
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`GET ${url}: ${r.status}`);
    out.push(performance.now() - t0);
    await sleep(SAMPLE_EVERY_MS);
  }
  return out;
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
    env: {
      SMTP_URL: smtp.url(),
      MAIL_FROM: "status@example.com",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      RATE_LIMIT_WRITES_PER_MINUTE: "100000000",
      RATE_LIMIT_STATUS_READS_PER_MINUTE: "100000000",
      RATE_LIMIT_HEARTBEATS_PER_MINUTE: "100000000",
      MAX_MAINTENANCES_PER_PROJECT: String(WINDOWS),
    },
  });
  const db = new pg.Client({ connectionString: databaseUrl });
  try {
    await waitHealthy(port, vigil);
    await db.connect();
    const base = `http://127.0.0.1:${port}`;
    const { key, projectId, cookie } = await setupProject(port);

    // 1,000 monitors made by their first heartbeat; 100 published pages of 10 monitors each.
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

    // ---- 1. Subscriber mails ----
    await db.query(
      `INSERT INTO page_subscribers (id, page_id, project_id, email, confirm_hash, confirm_expires_at, confirmed_at, created_at)
       SELECT 'psub_bench' || i, $1, $2, 'reader' || i || '@example.com', NULL, NULL, now(), now()
       FROM generate_series(1, $3) AS i`,
      [pageIds[0], projectId, SUBSCRIBERS],
    );
    const jsonUrl = `${base}/v1/status/bench-0`;
    const warm = await fetch(jsonUrl);
    if (warm.status !== 200) throw new Error(`GET ${jsonUrl}: ${warm.status}`);
    const beforeEnd = performance.now() + 5_000;
    const before = stats(await sampleLatency(jsonUrl, () => performance.now() > beforeEnd));
    let sent = false;
    const t0 = performance.now();
    const during = sampleLatency(jsonUrl, () => sent);
    const inc = await json(
      base,
      "POST",
      `/v1/projects/${projectId}/incidents`,
      {
        title: "Checkout is slow",
        impact: "major",
        monitorIds: ids.slice(0, 3),
        status: "investigating",
        message: "We are looking into slow checkouts.",
      },
      { cookie },
    );
    if (inc.status !== 201) throw new Error(`manual incident ${inc.status} ${JSON.stringify(inc.body)}`);
    const cap = t0 + 300_000;
    while (smtp.messages.length < SUBSCRIBERS && performance.now() < cap) await sleep(10);
    const seconds = (performance.now() - t0) / 1000;
    sent = true;
    const duringStats = stats(await during);
    const mails = smtp.messages.length;
    console.log(`subscriber mails: ${mails}/${SUBSCRIBERS} in ${seconds.toFixed(1)} s`, { before, duringStats });

    // ---- 2. Maintenance windows ----
    // The subscribers go first: windows naming page 0's monitors would otherwise mail them 1,000 times
    // per occurrence, and this part measures the transitions.
    await db.query("DELETE FROM page_subscribers WHERE page_id = $1", [pageIds[0]]);
    // Created over REST (their due times reach the timer as in production); one-off windows start
    // from T0 (after the creation) over ONE_OFF_SPREAD_MS and last 2-5 s; recurring ones run every
    // minute for RECURRING_MS. Each names 4 monitors (overlapping: a monitor is in several windows).
    const T0 = Date.now() + 20_000;
    const windowIds: string[] = [];
    const creates: Promise<void>[] = [];
    const baselineLate: number[] = [];
    const baselineTimers: NodeJS.Timeout[] = [];
    const expectBaseline = (due: number) =>
      baselineTimers.push(setTimeout(() => baselineLate.push(Date.now() - due), due - Date.now()));
    for (let w = 0; w < WINDOWS; w++) {
      const monitorIds = [0, 1, 2, 3].map((k) => ids[(w * 2 + k * 250) % MONITORS]);
      const recurring = w < RECURRING;
      let body: Record<string, unknown>;
      if (recurring)
        body = { title: `Cron ${w}`, monitorIds, schedule: { cron: "* * * * *", durationMs: RECURRING_MS } };
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
          windowIds.push(r.body.data!.id);
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
    console.log(`maintenance: ${windowIds.length} windows; waiting ${((runEnd - Date.now()) / 1000).toFixed(0)} s`);
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
    const all = stats(occ.rows.map((r) => Number(r.delay)));
    const part = (kind: string, recurring: boolean) =>
      stats(occ.rows.filter((r) => r.kind === kind && r.recurring === recurring).map((r) => Number(r.delay)));
    // One-off transitions due within 2 s after a recurring burst (a minute boundary or RECURRING_MS
    // after it) queue behind it; the others show the timer without a burst.
    const nearBurst = (due: Date) => {
      const inMinute = due.getTime() % minute;
      return inMinute < 2_000 || (inMinute >= RECURRING_MS && inMinute < RECURRING_MS + 2_000);
    };
    const quiet = stats(occ.rows.filter((r) => !r.recurring && !nearBurst(r.due)).map((r) => Number(r.delay)));
    const burst = part("started", true);
    const base0 = stats(baselineLate);
    const stillIn = Number(
      (await db.query("SELECT count(*) AS n FROM monitors WHERE project_id = $1 AND in_maintenance", [projectId]))
        .rows[0].n,
    );
    console.log("maintenance transitions", { n: occ.rows.length, expected, all, base0, stillIn });

    const f = (n: number, d = 0) =>
      Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }) : "–";
    const row = (name: string, s: Stats) => `| ${name} | ${f(s.n)} | ${f(s.p50)} | **${f(s.p99)}** | ${f(s.max)} |`;
    const met = all.p99 < 1_000 && occ.rows.length === expected;
    return [
      "**Subscriber mails.** A published page of 10 monitors with 1,000 confirmed subscribers (rows inserted",
      "straight into `page_subscribers` as a confirmed subscriber's row looks, not 1,000 confirmation round trips),",
      "a manual incident created over REST on 3 of its monitors: every mail handed to the local SMTP server the",
      "email tests run (test/helpers/smtp_server.py, aiosmtpd, on 127.0.0.1, every mail parsed and printed), timed",
      "from the POST to the last message received. Meanwhile the bench reads the page's public JSON",
      `(GET /v1/status/:slug) one request at a time every ${SAMPLE_EVERY_MS} ms; the baseline is the same reads for 5 s before the incident.`,
      "",
      "| Mails received | Time | Mails/s |",
      "|---|---|---|",
      `| ${f(mails)}/${f(SUBSCRIBERS)}${mails < SUBSCRIBERS ? " (cap reached)" : ""} | ${seconds.toFixed(1)} s | **${f(mails / seconds)} mails/s** |`,
      "",
      "| Public JSON reads | Requests | p50 ms | p99 ms | max ms |",
      "|---|---|---|---|---|",
      row("Baseline: before the incident", before),
      row("During the send", duringStats),
      "",
      `**Maintenance windows.** ${PAGES} published pages of 10 monitors each (${f(MONITORS)} monitors), ${WINDOWS} windows created over`,
      `REST naming 4 monitors each (overlapping): ${WINDOWS - RECURRING} one-off windows of 2-5 s starting over ${ONE_OFF_SPREAD_MS / 1000} s, and`,
      `${RECURRING} recurring ones (\`* * * * *\`, ${RECURRING_MS / 1000} s long: all ${RECURRING} start in the same second, the burst case).`,
      "Delay of each start and end: its `maintenance_occurrences` row's `created_at` (the transition's time) minus its due",
      "time. Baseline: the bench process's own `setTimeout` lateness at the same due times (the machine's scheduling noise).",
      "",
      "| Transitions | Count | p50 ms | p99 ms | max ms |",
      "|---|---|---|---|---|",
      row("All starts and ends", all),
      row("One-off starts", part("started", false)),
      row("One-off ends", part("completed", false)),
      row("Recurring starts", part("started", true)),
      row("Recurring ends", part("completed", true)),
      row("One-off starts and ends not within 2 s after a recurring burst", quiet),
      row("Baseline: setTimeout lateness in the bench process", base0),
      "",
      `The ${RECURRING} recurring windows all fall due in the same second: the timer applies them at most 4 at once (MaintenanceTimer's`,
      `WINDOWS_AT_ONCE), one transaction each, so the last of the burst waits for the others: ${f(burst.n)} starts in ${f(burst.max)} ms`,
      `(about ${f(burst.n / Math.max(0.001, burst.max / 1000))} transitions/s), and one-off transitions due during a burst queue behind it.`,
      `Transitions recorded: ${f(occ.rows.length)} of ${f(expected)} due; monitors still in maintenance after the run: ${stillIn}.`,
      `Target p99 < 1 s, every transition applied: ${met ? "met" : "**not met**"}.`,
    ].join("\n");
  } finally {
    await db.end().catch(() => undefined);
    if (vigil.exitCode === null) vigil.kill("SIGKILL");
    await smtp.close().catch(() => undefined);
  }
}
