// `npm run bench dashboard`: the dashboard's three budgets (issue 18), measured in headless Chromium
// (Debian's /usr/bin/chromium through playwright-core) against a real Vigil (a child process, as
// `npm start` runs it) serving a fresh Vite build of web/ (DASHBOARD_DIR):
//
// 1. First load: the compressed JavaScript (and CSS) a cold browser fetches to show a signed-in
//    project screen, summed from the responses' bytes as served (gzip); budget 300 KB.
// 2. Chart: the analytics screen's 7-day hourly count chart over DASHBOARD_BENCH_EVENTS (default
//    10,000,000) events of the last 7 days, from navigation start to the chart's
//    `data-rendered` attribute (uPlot has drawn); budget 1 s. Next to it, the same RPC alone (the
//    query's own latency, over REST from Node) and as the page saw it (Resource Timing).
// 3. Live tail: the events screen's tail while 1,000 events/s arrive over REST (100-event batches
//    every 100 ms, due times fixed from the start so a slow send does not slow the rate); in the page:
//    long tasks, the worst gap between animation frames and the lag from an event's timestamp to
//    the newest one shown (`data-newest-ts`), next to the same page idle.
//
// The events are bulk-loaded with SQL into the weekly partitions (slot columns filled as the
// ingest hook does), then the rollups are rebuilt from the events (rebuildRollups,
// test/helpers/backfill.ts) and the service's own backfill makes the slots and column blocks
// (assignSlots/backfillSlots, buildPending: what the background workers do), then
// VACUUM ANALYZE; the measuring starts once all of that is done. DASHBOARD_BENCH_DIR=<dir> keeps the
// data directory and reuses a loaded set of the same size (a 10M load takes a long while on 2 cores).
// Flags: --load-only (load and stop), --only=first,chart,tail (some parts).
import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { buildPending } from "../src/analytics/blocks/build.js";
import { finishBackfill, loadGenerated } from "./_events-load.js";
import { createPool, type Db } from "../src/storage/db.js";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import { GENEROUS_LIMITS } from "../test/helpers/app.js";
import { buildDashboard, CHROMIUM } from "../test/helpers/dashboard.js";
import { freePort, post, setupProject, spawnVigil, waitHealthy, writeBenchSection } from "./_shared.js";

const EVENTS = Number(process.env.DASHBOARD_BENCH_EVENTS ?? 10_000_000);
const RUNS = Number(process.env.DASHBOARD_BENCH_RUNS ?? 7);
const TAIL_RATE = Number(process.env.DASHBOARD_BENCH_TAIL_RATE ?? 1000);
const TAIL_SECONDS = Number(process.env.DASHBOARD_BENCH_TAIL_SECONDS ?? 20);
const KEEP_DIR = process.env.DASHBOARD_BENCH_DIR;
const LOAD_ONLY = process.argv.includes("--load-only");
const ONLY = (process.argv.find((a) => a.startsWith("--only="))?.slice(7) ?? "first,chart,tail").split(",");
const DAYS = 7;
const HOUR = 3_600_000,
  DAY = 24 * HOUR;
const JS_BUDGET_KB = 300;
const CHART_BUDGET_MS = 1000;
const PASSWORD = "bench password 1";

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)];
const quantile = (xs: number[], q: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * q))];
const kb = (bytes: number) => bytes / 1024;
const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

// One generated event per row number g, spread quasi-randomly over [start, start + span): skewed
// types, users and properties from deterministic hashes of g (the analytics bench's generator).
const GEN = `
  WITH s AS (
    SELECT g, $2::timestamptz + (($3::float8 * ((g * 0.6180339887) - floor(g * 0.6180339887))) * interval '1 millisecond') AS ts,
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
           'durationMs', floor(r1 * 5000)::int) AS data,
         jsonb_build_object('receivedAt', ts) AS context,
         jsonb_build_object('env', CASE WHEN r1 < 0.9 THEN 'production' ELSE 'preview' END) AS tags
  FROM s`;

interface Loaded {
  events: number;
  projectId: string;
  key: string;
  email: string;
  /** When the set was loaded: its events cover [now - 7 days, now). */
  now: number;
  loadS: number;
  rollupsS: number;
  slotsS: number;
  blocksS: number;
  blocks: number;
}

/** Signs up (or, on a reused directory, in) and answers the session cookie. */
async function signIn(base: string, email: string, signup: boolean): Promise<string> {
  const r = await fetch(`${base}/v1/auth/${signup ? "signup" : "login"}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  if (r.status >= 300) throw new Error(`${signup ? "signup" : "login"}: ${r.status} ${await r.text()}`);
  return (r.headers.getSetCookie()[0] ?? "").split(";")[0];
}

/** EVENTS events over the last 7 days in a new project, with rollups, slots, blocks and statistics. */
async function load(db: Db, base: string): Promise<Loaded> {
  const email = `dashboard-bench-${Date.now()}@example.com`;
  const cookie = await signIn(base, email, true);
  const json = async (r: Response) => {
    if (r.status >= 300) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
    return r.json();
  };
  const proj = await json(
    await fetch(`${base}/v1/projects`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "Ten million", platform: "node" }),
    }),
  );
  const projectId: string = proj.data.id;
  const keyBody = await json(
    await fetch(`${base}/v1/projects/${projectId}/api-keys`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "bench", environment: "production" }),
    }),
  );
  const now = Date.now();
  const start = now - DAYS * DAY;
  console.log(`loading ${fmt(EVENTS)} events over the last ${DAYS} days...`);
  const { assigned, loadS } = await loadGenerated(db, projectId, GEN, { events: EVENTS, start, spanMs: DAYS * DAY });
  console.log(`\nloaded in ${loadS.toFixed(0)} s`);
  const { rollupsS, slotsS } = await finishBackfill(db, projectId, { start, end: now });
  console.log(`rollups in ${rollupsS.toFixed(0)} s`);
  console.log(`slots (${assigned.join(", ")}) in ${slotsS.toFixed(0)} s`);
  await db.query("VACUUM ANALYZE events");
  await db.query("VACUUM ANALYZE analytics_rollups");
  const t0 = performance.now();
  const built = await buildPending(db, projectId, () => new Date(), { sealMs: 0, rebuildMs: 0 });
  const blocksS = (performance.now() - t0) / 1000;
  console.log(`${built.built} column blocks in ${blocksS.toFixed(0)} s`);
  return {
    events: EVENTS,
    projectId,
    key: keyBody.data.secret,
    email,
    now,
    loadS,
    rollupsS,
    slotsS,
    blocksS,
    blocks: built.built,
  };
}

// ---- 1. First load ----------------------------------------------------------------------------

interface Transfer {
  url: string;
  kind: "js" | "css" | "other";
  /** Body bytes as sent (compressed when content-encoding says so). */
  bytes: number;
  encoding: string;
}

/** Opens `pathname` in a new (cold) context and sums what was transferred until the network is idle. */
async function firstLoad(browser: Browser, base: string, cookie: string, pathname: string): Promise<Transfer[]> {
  const context = await signedInContext(browser, base, cookie);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  const reqs = new Map<string, { url: string; type: string; length?: number; encoding: string; done?: number }>();
  let last = performance.now();
  cdp.on("Network.requestWillBeSent", (e) => {
    reqs.set(e.requestId, { url: e.request.url, type: e.type ?? "", encoding: "" });
    last = performance.now();
  });
  cdp.on("Network.responseReceived", (e) => {
    const r = reqs.get(e.requestId);
    if (!r) return;
    const h = Object.fromEntries(Object.entries(e.response.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
    r.encoding = h["content-encoding"] ?? "";
    if (h["content-length"] !== undefined) r.length = Number(h["content-length"]);
    r.type = e.type ?? r.type;
  });
  cdp.on("Network.loadingFinished", (e) => {
    const r = reqs.get(e.requestId);
    if (!r) return;
    r.done = e.encodedDataLength;
    last = performance.now();
  });
  await page.goto(base + pathname, { waitUntil: "load" });
  // Idle: every request finished and none started for 1.5 s (lazy chunks come after `load`).
  for (let i = 0; i < 200; i++) {
    const open = [...reqs.values()].some((r) => r.done === undefined && /Script|Stylesheet|Document/.test(r.type));
    if (!open && performance.now() - last > 1500) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await context.close();
  return [...reqs.values()]
    .filter((r) => r.done !== undefined)
    .map((r) => ({
      url: r.url.replace(base, ""),
      kind: r.type === "Script" ? "js" : r.type === "Stylesheet" ? "css" : "other",
      bytes: r.length ?? r.done ?? 0,
      encoding: r.encoding,
    }));
}

async function signedInContext(browser: Browser, base: string, cookie: string): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: base });
  await context.addCookies([{ name: "vigil_session", value: cookie.split("=").slice(1).join("="), url: base }]);
  return context;
}

// ---- 2. The 7-day hourly chart ------------------------------------------------------------------

/** Runs in the page before its own scripts: when a chart first carries data-rendered="<points>". */
const CHART_PROBE = `(() => {
  const seen = () => {
    const el = document.querySelector("[data-rendered]");
    const points = el ? Number(el.getAttribute("data-rendered")) : 0;
    if (points > 0 && !window.__chart) window.__chart = { ms: performance.now(), points };
  };
  new MutationObserver(seen).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-rendered"] });
})();`;

interface ChartRun {
  ms: number;
  points: number;
  /** The timeseries RPC as the page saw it (Resource Timing), ms. */
  rpcMs: number;
  steps: [string, number, number][];
}

/** The median start and end of each step over the runs (steps keyed by name, in the first run's order). */
function waterfall(runs: ChartRun[]): string[] {
  const names = [...new Set(runs.flatMap((r) => r.steps.map((x) => x[0])))];
  return names.map((n) => {
    const xs = runs.flatMap((r) => r.steps.filter((x) => x[0] === n));
    return `| ${n} | ${fmt(median(xs.map((x) => x[1])))} | ${fmt(median(xs.map((x) => x[2])))} | ${xs.length}/${runs.length} |`;
  });
}

async function chartRun(context: BrowserContext, url: string): Promise<ChartRun> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url, { waitUntil: "commit" });
  await page.waitForFunction(() => (window as unknown as { __chart?: unknown }).__chart, undefined, {
    timeout: 60_000,
    polling: 50,
  });
  const r = await page.evaluate(() => {
    const c = (window as unknown as { __chart: { ms: number; points: number } }).__chart;
    const rpc = performance
      .getEntriesByType("resource")
      .filter((e) => /timeseries/i.test(e.name))
      .map((e) => e.duration);
    // The page's waterfall: what the chart waited for, [start, end] ms from navigation start.
    const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    const steps: [string, number, number][] = [
      ["page (HTML)", nav.requestStart, nav.responseEnd],
      ["scripts run (DOMContentLoaded)", nav.domContentLoadedEventStart, nav.domContentLoadedEventEnd],
    ];
    for (const e of performance.getEntriesByType("resource") as PerformanceResourceTiming[]) {
      const name = e.name
        .replace(/^https?:\/\/[^/]+/, "")
        .replace(/^\/vigil\.v1\./, "")
        .replace(/-[\w-]{8}\./, ".");
      if (e.startTime < c.ms) steps.push([name, e.startTime, e.responseEnd]);
    }
    steps.push(["chart drawn", c.ms, c.ms]);
    return { ms: c.ms, points: c.points, rpcMs: rpc.length ? Math.max(...rpc) : NaN, steps };
  });
  await page.close();
  if (errors.length) throw new Error(`chart page errors: ${errors.join("; ")}`);
  return r;
}

// ---- 3. The live tail ---------------------------------------------------------------------------

/** Frame gaps, long tasks and the tail's lag, recorded in the page from its first script on. */
const TAIL_PROBE = `(() => {
  const m = (window.__tail = { gaps: [], longTasks: [], lags: [], recording: false, since: 0 });
  try {
    new PerformanceObserver((l) => { if (m.recording) for (const e of l.getEntries()) m.longTasks.push(e.duration); })
      .observe({ type: "longtask", buffered: false });
  } catch {}
  let prev = 0;
  const frame = (t) => {
    if (m.recording && prev) m.gaps.push(t - prev);
    prev = t;
    if (m.recording) {
      const el = document.querySelector('[data-testid="tail"]');
      const v = el ? el.getAttribute("data-newest-ts") || "" : "";
      const newest = /^[0-9]+$/.test(v) ? Number(v) : Date.parse(v);
      // Nothing sent before the phase started counts as shown late (idle, this is the age of the
      // newest event; under load, the time since the newest shown event was sent).
      if (newest > 0) m.lags.push(Date.now() - Math.max(newest, m.since));
    }
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
})();`;

interface TailStats {
  seconds: number;
  frames: number;
  worstGapMs: number;
  p99GapMs: number;
  gapsOver100: number;
  longTasks: number;
  longTaskMs: number;
  worstLongTaskMs: number;
  lagP50: number;
  lagP95: number;
  lagMax: number;
  /** Median lag over the first and the last quarter of the phase: does it grow? */
  lagFirstQ: number;
  lagLastQ: number;
  rows: number;
  sent: number;
  latePacerP99: number;
  /** Share of the main thread (seconds per second) in all tasks, script, layout, style. */
  taskShare: number;
  scriptShare: number;
  layoutShare: number;
  styleShare: number;
  heapMb: number;
  nodes: number;
}

async function tailPhase(
  page: Page,
  seconds: number,
  send?: (ms: number) => Promise<{ sent: number; late: number[] }>,
) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const metrics = async () =>
    Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((x) => [x.name, x.value]));
  const before = await metrics();
  const profile = !!process.env.DASHBOARD_BENCH_PROFILE && !!send;
  if (profile) {
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
    await cdp.send("Profiler.start");
  }
  await page.evaluate(() => {
    const m = (window as unknown as { __tail: { recording: boolean; since: number } }).__tail;
    m.recording = true;
    m.since = Date.now();
  });
  const sent = send ? await send(seconds * 1000) : (await new Promise((r) => setTimeout(r, seconds * 1000)), null);
  const m = await page.evaluate(() => {
    const t = (
      window as unknown as {
        __tail: { gaps: number[]; longTasks: number[]; lags: number[]; recording: boolean };
      }
    ).__tail;
    t.recording = false;
    const rows = document.querySelectorAll('[data-testid="tail-row"]').length;
    const out = { gaps: t.gaps, longTasks: t.longTasks, lags: t.lags, rows };
    t.gaps = [];
    t.longTasks = [];
    t.lags = [];
    return out;
  });
  if (profile) printProfile((await cdp.send("Profiler.stop")).profile);
  const after = await metrics();
  await cdp.detach();
  // Main-thread seconds per second spent in script, layout and style (Chromium's own counters).
  const busy = (k: string) => (after[k] - before[k]) / seconds;
  const q = Math.max(1, Math.floor(m.lags.length / 4));
  const stats: TailStats = {
    seconds,
    frames: m.gaps.length,
    worstGapMs: m.gaps.length ? Math.max(...m.gaps) : NaN,
    p99GapMs: m.gaps.length ? quantile(m.gaps, 0.99) : NaN,
    gapsOver100: m.gaps.filter((g) => g > 100).length,
    longTasks: m.longTasks.length,
    longTaskMs: m.longTasks.reduce((a, b) => a + b, 0),
    worstLongTaskMs: m.longTasks.length ? Math.max(...m.longTasks) : 0,
    lagP50: m.lags.length ? quantile(m.lags, 0.5) : NaN,
    lagP95: m.lags.length ? quantile(m.lags, 0.95) : NaN,
    lagMax: m.lags.length ? Math.max(...m.lags) : NaN,
    lagFirstQ: m.lags.length ? median(m.lags.slice(0, q)) : NaN,
    lagLastQ: m.lags.length ? median(m.lags.slice(-q)) : NaN,
    rows: m.rows,
    sent: sent?.sent ?? 0,
    latePacerP99: sent?.late.length ? quantile(sent.late, 0.99) : 0,
    scriptShare: busy("ScriptDuration"),
    layoutShare: busy("LayoutDuration"),
    styleShare: busy("RecalcStyleDuration"),
    taskShare: busy("TaskDuration"),
    heapMb: after.JSHeapUsedSize / 1e6,
    nodes: after.Nodes,
  };
  return stats;
}

/** DASHBOARD_BENCH_PROFILE=1: the page's CPU profile under load, self time per function (top 25). */
function printProfile(p: {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples?: number[];
  timeDeltas?: number[];
}): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  (p.samples ?? []).forEach((id, i) => {
    const f = byId.get(id)!.callFrame;
    const k = `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\//, "")}:${f.lineNumber}`;
    self.set(k, (self.get(k) ?? 0) + (p.timeDeltas?.[i] ?? 0) / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(`page CPU profile under load (self ms of ${total.toFixed(0)} ms sampled):`);
  for (const [k, v] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`  ${v.toFixed(0).padStart(7)} ms  ${k}`);
}

/** Sends `rate` events/s for `ms` as 10 batches a second, each due at a fixed time from the start. */
function pacedSender(port: number, key: string, rate: number) {
  return async (ms: number) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const perBatch = Math.max(1, Math.round(rate / 10));
    const batches = Math.round((ms / 1000) * 10);
    const start = performance.now();
    const late: number[] = [];
    let sent = 0;
    let seq = 0;
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < batches; i++) {
      const due = start + i * 100;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      late.push(performance.now() - due);
      const ts = new Date().toISOString();
      const events = Array.from({ length: perBatch }, () => {
        seq++;
        return {
          type: ["view", "click", "signup", "purchase"][seq % 4],
          timestamp: ts,
          userId: `user-${seq % 500}`,
          data: { path: `/p/${seq % 100}`, amount: seq % 97, plan: seq % 3 ? "free" : "pro" },
        };
      });
      inflight.push(
        post(agent, port, "/v1/events/batch", JSON.stringify({ events }), key).then((r) => {
          if (r.status !== 202) throw new Error(`events/batch: ${r.status} ${r.text.slice(0, 200)}`);
          sent += perBatch;
        }),
      );
    }
    await Promise.all(inflight);
    agent.destroy();
    return { sent, late };
  };
}

// ---- main -----------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const dataDir = KEEP_DIR ? path.resolve(KEEP_DIR) : await mkdtemp(path.join(os.tmpdir(), "vigil-bench-dashboard-"));
  await mkdir(dataDir, { recursive: true });
  const markerFile = path.join(dataDir, "bench-dashboard.json");
  const previous: Loaded | null =
    KEEP_DIR && existsSync(markerFile) ? JSON.parse(await readFile(markerFile, "utf8")) : null;
  if (previous && previous.events !== EVENTS)
    throw new Error(`${dataDir} holds ${previous.events} events, not ${EVENTS}: remove it or use another directory`);
  const log = pino({ level: "warn" });
  const pgh = await startEmbeddedPostgres(dataDir, log);
  // The loader's bulk statements run on this pool: no statement timeout.
  const db = createPool(pgh.url, 4);
  db.on("error", () => undefined);
  let vigil: ChildProcess | undefined;
  let browser: Browser | undefined;
  let dashDir: string | undefined;
  try {
    const t0 = performance.now();
    dashDir = await buildDashboard();
    const buildS = (performance.now() - t0) / 1000;
    const port = await freePort();
    vigil = spawnVigil({
      databaseUrl: pgh.url,
      port,
      dataDir: path.join(dataDir, "vigil"),
      env: {
        DASHBOARD_DIR: dashDir,
        // The bench builds rollups, slots and blocks itself before measuring (nothing left for
        // the background passes to do; none runs during the measurements).
        ANALYTICS_SLOT_INTERVAL_MS: "0",
        ANALYTICS_BLOCK_INTERVAL_MS: "0",
        ...GENEROUS_LIMITS,
      },
    });
    await waitHealthy(port, vigil);
    const base = `http://127.0.0.1:${port}`;
    const loaded = previous ?? (await load(db, base));
    if (!previous && KEEP_DIR) await writeFile(markerFile, JSON.stringify(loaded));
    if (LOAD_ONLY) return;
    const cookie = await signIn(base, loaded.email, false);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    const out: string[] = [];
    /** One sentence per budget, for the section's summary. */
    const verdicts: string[] = [];
    const loadAvg = os.loadavg()[0];

    // 1. First load.
    if (ONLY.includes("first")) {
      const screens = ["events", "analytics"];
      const rows: string[] = [];
      const detail: string[] = [];
      let worstJs = 0;
      for (const s of screens) {
        const t = await firstLoad(browser, base, cookie, `/projects/${loaded.projectId}/${s}`);
        const sum = (k: Transfer["kind"]) => t.filter((x) => x.kind === k).reduce((a, x) => a + x.bytes, 0);
        const js = sum("js"),
          css = sum("css");
        const notGzip = t.filter((x) => x.kind !== "other" && x.encoding !== "gzip").map((x) => x.url);
        worstJs = Math.max(worstJs, js);
        console.log(`first load /${s}: JS ${kb(js).toFixed(1)} KB, CSS ${kb(css).toFixed(1)} KB`, t);
        rows.push(
          `| \`/projects/:id/${s}\` | **${kb(js).toFixed(1)} KB** (${t.filter((x) => x.kind === "js").length} files) | ${kb(css).toFixed(1)} KB | ${kb(js + css + sum("other")).toFixed(1)} KB (${t.length} responses) | ${js <= JS_BUDGET_KB * 1024 ? "met" : "**missed**"} |`,
        );
        if (notGzip.length) detail.push(`Not gzip-encoded on /${s}: ${notGzip.join(", ")}.`);
      }
      out.push(
        "### First load",
        "",
        `A new browser context (empty cache) opens the screen signed in; every response until the network is idle (no request for 1.5 s after \`load\`) is summed, body bytes as served (gzip, \`content-length\`). Budget: < ${JS_BUDGET_KB} KB of compressed JavaScript. "Total" includes the page, the API answers and the favicon.`,
        "",
        "| Screen | JavaScript (gzip) | CSS (gzip) | Total transferred | Budget |",
        "|---|---|---|---|---|",
        ...rows,
        ...(detail.length ? ["", ...detail] : []),
        "",
      );
      console.log(`worst JS ${kb(worstJs).toFixed(1)} KB`);
      verdicts.push(
        `first load ${worstJs <= JS_BUDGET_KB * 1024 ? "**met**" : "**missed**"} (${kb(worstJs).toFixed(0)} KB of compressed JavaScript at most, budget ${JS_BUDGET_KB} KB)`,
      );
    }

    // 2. The 7-day hourly chart.
    if (ONLY.includes("chart")) {
      const url = `${base}/projects/${loaded.projectId}/analytics?range=7d&interval=hour`;
      const rpcBody = () => {
        const now = Date.now();
        return JSON.stringify({
          time: { start: new Date(now - DAYS * DAY).toISOString(), end: new Date(now).toISOString() },
          interval: "hour",
        });
      };
      const agent = new http.Agent({ keepAlive: true });
      const rpc = async () => {
        const t = performance.now();
        const r = await post(
          agent,
          port,
          `/v1/projects/${loaded.projectId}/analytics/timeseries`,
          rpcBody(),
          loaded.key,
        );
        if (r.status !== 200) throw new Error(`timeseries: ${r.status} ${r.text.slice(0, 200)}`);
        return { ms: performance.now() - t, body: JSON.parse(r.text) };
      };
      const first = await rpc();
      const total = JSON.stringify(first.body)
        .match(/"count":\s*"?(\d+)/g)
        ?.reduce((a, m) => a + Number(m.replace(/\D/g, "")), 0);
      console.log(`timeseries first ${first.ms.toFixed(1)} ms; ${total} events in the window`);
      const cold: ChartRun[] = [];
      const warm: ChartRun[] = [];
      const queryMs: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        // Cold: a new context (nothing cached); warm: the same context's second page (the scripts
        // cached, as for a person coming back).
        const ctx = await signedInContext(browser, base, cookie);
        await ctx.addInitScript(CHART_PROBE);
        cold.push(await chartRun(ctx, url));
        warm.push(await chartRun(ctx, url));
        await ctx.close();
        queryMs.push((await rpc()).ms);
        console.log(
          `chart run ${i + 1}: cold`,
          cold.at(-1),
          "warm",
          warm.at(-1),
          `query ${queryMs.at(-1)!.toFixed(1)} ms`,
        );
      }
      agent.destroy();
      const q = median(queryMs);
      const worst = Math.max(...cold.map((r) => r.ms), ...warm.map((r) => r.ms));
      verdicts.push(
        `7-day hourly chart ${worst < CHART_BUDGET_MS ? "**met**" : "**missed**"} (cold median ${fmt(median(cold.map((r) => r.ms)))} ms, slowest of all ${fmt(worst)} ms, budget ${CHART_BUDGET_MS} ms; the query alone ${fmt(q, 1)} ms)`,
      );
      const row = (label: string, runs: ChartRun[]) => {
        const ms = runs.map((r) => r.ms);
        return `| ${label} | **${fmt(median(ms))} ms** | ${fmt(Math.max(...ms))} ms | ${fmt(median(runs.map((r) => r.rpcMs)), 1)} ms | ${(median(ms) / q).toFixed(1)}x | ${runs[0].points} | ${Math.max(...ms) < CHART_BUDGET_MS ? "met" : median(ms) < CHART_BUDGET_MS ? "median met, max missed" : "**missed**"} |`;
      };
      out.push(
        "### The 7-day hourly chart",
        "",
        `\`/projects/:id/analytics?range=7d&interval=hour\` over ${fmt(loaded.events)} events loaded for the last 7 days (${total !== undefined ? `${fmt(total)} in the chart's window at the time of the run` : "window count unknown"}), from navigation start to the chart's \`data-rendered\` attribute (uPlot has drawn; recorded in the page by a MutationObserver, \`performance.now()\`). ${RUNS} runs: cold = a new browser context (no cache), warm = a second page of the same context (scripts cached). The query alone = the same TimeSeries RPC over REST from Node with the API key, median ${fmt(q, 1)} ms (first ${fmt(first.ms, 1)} ms); "in page" = the RPC's Resource Timing duration in the page. Budget: < ${CHART_BUDGET_MS} ms.`,
        "",
        "| Page | Median | Max | RPC in page (median) | Page / query | Points | Budget |",
        "|---|---|---|---|---|---|---|",
        row("cold cache", cold),
        row("warm cache", warm),
        "",
        "Where the time goes (cold runs; medians, ms from navigation start; the requests the page made before the chart was drawn):",
        "",
        "| Step | Start | End | In runs |",
        "|---|---|---|---|",
        ...waterfall(cold),
        "",
      );
    }

    // 3. The live tail.
    if (ONLY.includes("tail")) {
      const tp = await setupProject(port);
      const ctx = await signedInContext(browser, base, tp.cookie);
      await ctx.addInitScript(TAIL_PROBE);
      const page = await ctx.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      // A first event so that the tail has something to show, then the page.
      await pacedSender(port, tp.key, 10)(100);
      await page.goto(`${base}/projects/${tp.projectId}/events?live=1`, { waitUntil: "load" });
      await page.locator('[data-testid="tail"]').waitFor({ timeout: 30_000 });
      await new Promise((r) => setTimeout(r, 2000));
      const idle = await tailPhase(page, Math.min(10, TAIL_SECONDS));
      const busy = await tailPhase(page, TAIL_SECONDS, pacedSender(port, tp.key, TAIL_RATE));
      await ctx.close();
      if (errors.length) throw new Error(`tail page errors: ${errors.join("; ")}`);
      console.log("tail idle", idle, "busy", busy);
      // The bench's reading of "keeps up without freezing": the lag stays bounded (p95 under 2.5 s,
      // the tail polls once a second; the last quarter's median no more than 1 s above the first's)
      // and no frame waits 500 ms or more.
      const keepsUp = busy.lagP95 < 2500 && busy.lagLastQ - busy.lagFirstQ < 1000;
      const frozen = busy.worstGapMs >= 500;
      verdicts.push(
        `live tail at ${fmt(TAIL_RATE)} events/s ${keepsUp && !frozen ? "**met**" : "**missed**"} (${keepsUp ? "keeps up" : "falls behind"}: lag p95 ${fmt(busy.lagP95)} ms, ${fmt(busy.lagFirstQ)} → ${fmt(busy.lagLastQ)} ms; worst frame gap ${fmt(busy.worstGapMs)} ms, idle ${fmt(idle.worstGapMs)} ms; ${busy.longTasks} long tasks in ${busy.seconds} s, worst ${fmt(busy.worstLongTaskMs)} ms, idle ${idle.longTasks})`,
      );
      const ms = (n: number) => (Number.isFinite(n) ? `${fmt(n)} ms` : "-");
      const r = (label: string, s: TailStats) =>
        `| ${label} | ${s.seconds} s | ${fmt(s.frames)} (${fmt(s.frames / s.seconds)}/s) | ${ms(s.worstGapMs)} | ${ms(s.p99GapMs)} | ${s.gapsOver100} | ${s.longTasks} (${ms(s.longTaskMs)}, worst ${ms(s.worstLongTaskMs)}) | ${pct(s.taskShare)} (${pct(s.scriptShare)} / ${pct(s.layoutShare)} / ${pct(s.styleShare)}) | ${label.startsWith("idle") ? "-" : `${ms(s.lagP50)} / ${ms(s.lagP95)} / ${ms(s.lagMax)}`} | ${label.startsWith("idle") ? "-" : `${ms(s.lagFirstQ)} → ${ms(s.lagLastQ)}`} |`;
      const pct = (x: number) => `${Math.round(100 * x)} %`;
      out.push(
        "### The live tail at 1,000 events/s",
        "",
        `The events screen's live tail in a new project (\`/projects/:id/events?live=1\`) while ${fmt(TAIL_RATE)} events/s arrive over REST for ${TAIL_SECONDS} s (${fmt(busy.sent)} events in batches of ${Math.round(TAIL_RATE / 10)} every 100 ms, due times fixed from the start; the sender's lateness p99 ${fmt(busy.latePacerP99, 1)} ms), against the same page idle. Measured in the page: every animation frame's gap (requestAnimationFrame), long tasks (PerformanceObserver 'longtask', > 50 ms), and the main thread's busy share (Chromium's TaskDuration, ScriptDuration, LayoutDuration, RecalcStyleDuration per second), and on every frame the lag from the newest shown event's timestamp (\`data-newest-ts\`, or the phase's start when none sent since is shown yet) to now (it includes the tail's 1 s poll and the up to 100 ms of batching). ${busy.rows} rows on screen at the end (${fmt(busy.nodes)} DOM nodes, JS heap ${fmt(busy.heapMb)} MB; idle ${fmt(idle.nodes)} nodes).`,
        "",
        "| Page | Time | Frames | Worst frame gap | p99 frame gap | Gaps > 100 ms | Long tasks (total, worst) | Main thread busy (script / layout / style) | Lag p50 / p95 / max | Lag first → last quarter |",
        "|---|---|---|---|---|---|---|---|---|---|",
        r("idle (baseline)", idle),
        r(`${fmt(TAIL_RATE)} events/s`, busy),
        "",
      );
    }

    const full = EVENTS >= 10_000_000;
    const head = [
      `Run ${new Date().toISOString().slice(0, 16)}Z: \`${full ? "" : `DASHBOARD_BENCH_EVENTS=${EVENTS} `}${KEEP_DIR ? "DASHBOARD_BENCH_DIR=<dir> " : ""}npm run bench dashboard\`${full ? "" : " (**smaller than the issue's 10,000,000 events**)"}${previous ? `; the events were loaded at ${new Date(loaded.now).toISOString().slice(0, 16)}Z by an earlier run on the same directory (the timings below are that run's)` : ""}.`,
      `Headless Chromium (${CHROMIUM}, \`--headless --no-sandbox --disable-gpu --disable-background-networking\`, through playwright-core) against Vigil run as \`npm start\` runs it (a child process, embedded PostgreSQL) serving a fresh \`vite build\` of web/ (built in ${buildS.toFixed(0)} s).`,
      `Data: ${fmt(loaded.events)} events bulk-loaded with SQL over 7 days into one project (${loaded.loadS.toFixed(0)} s), then the service's own backfill: rollups ${loaded.rollupsS.toFixed(0)} s, slots ${loaded.slotsS.toFixed(0)} s, ${loaded.blocks} column blocks ${loaded.blocksS.toFixed(0)} s, VACUUM ANALYZE; the measurements start after all of it (the background passes are off during the run).`,
      `Machine: ${os.cpus().length} cores, shared with other work (1-minute load average ${loadAvg.toFixed(1)} when the measurements started); the browser, Vigil and PostgreSQL share them.`,
      "",
      `Budgets: ${verdicts.join("; ")}. The tail's criterion is this bench's reading of "keeps up without freezing": lag p95 under 2.5 s and not growing by 1 s over the phase, no frame gap of 500 ms or more.`,
      "",
    ];
    const body = [...head, ...out].join("\n");
    if (ONLY.length === 3) await writeBenchSection("Dashboard (`npm run bench dashboard`)", body);
    console.log("\n" + body);
  } finally {
    await browser?.close().catch(() => undefined);
    if (vigil && vigil.exitCode === null) {
      vigil.kill("SIGTERM");
      await new Promise((r) => vigil!.once("exit", r));
    }
    await db.end().catch(() => undefined);
    await pgh.stop().catch(() => undefined);
    if (dashDir) await rm(dashDir, { recursive: true, force: true }).catch(() => undefined);
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
