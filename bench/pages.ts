// `npm run bench pages`: the public status page of 50 monitors with 90 days of history, read by
// concurrent clients (autocannon, keep-alive HTTP/1.1, gzip accepted as browsers do): the JSON
// (GET /v1/status/:slug) and the HTML (GET /status/:slug). Targets (issue #16): >= 5,000
// requests/s and p99 < 20 ms on the 2-core machine, the database touched at most once per refresh
// interval — shown by the service's own counter `vigil_status_page_builds_total` and by
// PostgreSQL's committed transactions during the load.
// Baselines, same script, same machine: (1) a bare node:http server in its own process answering the
// same bytes (the ceiling of Node's HTTP on this machine: Vigil's cost is what it adds to it); (2) one page computed
// without the cache (the build: what every request would cost if pages were computed per request).
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import pino from "pino";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import { pagesCommsSection } from "./_pages-comms.js";
import { freePort, processCpuSeconds, setupProject, spawnVigil, waitHealthy, writeBenchSection } from "./_shared.js";

/** --comms-only: only the subscriber mails and maintenance windows part (bench/_pages-comms.ts). */
const COMMS_ONLY = process.argv.includes("--comms-only");
const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1";
const MONITORS = 50;
const DAYS = 90;
const SECONDS = QUICK ? 5 : 15;
const CONNECTIONS = Number(process.env.BENCH_PAGES_CONNECTIONS ?? 64);
const REFRESH_MS = 5_000;
const SLUG = "bench-status";
const DAY = 86_400_000;

interface Load {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
  bytesPerRequest: number;
  vigilCores?: number;
}

async function load(url: string, pid?: number): Promise<Load> {
  const cpu0 = pid ? processCpuSeconds(pid) : 0;
  const t0 = performance.now();
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: { "accept-encoding": "gzip" },
  });
  const seconds = (performance.now() - t0) / 1000;
  return {
    rps: r.requests.total / seconds,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    bytesPerRequest: r.throughput.total / Math.max(1, r.requests.total),
    vigilCores: pid ? (processCpuSeconds(pid) - cpu0) / seconds : undefined,
  };
}

async function builds(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  // Every outcome counts: each build reads the database once, whatever it found.
  const lines = [...text.matchAll(/^vigil_status_page_builds_total(?:\{[^}]*\})? (\d+(?:\.\d+)?)$/gm)];
  if (!lines.length) throw new Error("vigil_status_page_builds_total not found on /metrics");
  return lines.reduce((n, m) => n + Number(m[1]), 0);
}

/**
 * A bare node:http server in its own process (as Vigil is: not sharing the load generator's event
 * loop) answering `body` (gzip bytes) to every request: the ceiling baseline.
 */
async function bareServer(body: Buffer, type: string, dir: string): Promise<{ url: string; close(): Promise<void> }> {
  const file = path.join(dir, `bare-${Date.now()}.bin`);
  await writeFile(file, body);
  const port = await freePort();
  const script = `
    const http = require("node:http");
    const body = require("node:fs").readFileSync(${JSON.stringify(file)});
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": ${JSON.stringify(type)}, "content-encoding": "gzip", "content-length": body.length });
      res.end(body);
    });
    server.keepAliveTimeout = 60000;
    server.listen(${port}, "127.0.0.1", () => process.stdout.write("ready\\n"));`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/`,
    close: async () => {
      child.kill("SIGKILL");
      await once(child, "exit").catch(() => undefined);
    },
  };
}

/** The response's raw (still compressed) bytes. */
function rawGet(url: string): Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { "accept-encoding": "gzip" } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }),
        );
      })
      .on("error", reject);
  });
}

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-bench-pages-"));
  const pgh = await startEmbeddedPostgres(tmp, pino({ level: "warn" }));
  try {
    if (!COMMS_ONLY) await serving(pgh.url, tmp);
    const comms = await pagesCommsSection(pgh.url, tmp);
    const section = [
      `Command: \`npm run bench pages\` (bench/pages.ts, this part bench/_pages-comms.ts; \`-- --comms-only\` runs this part alone),`,
      `run ${new Date().toISOString().slice(0, 16)}Z on the 2 cores of the development machine`,
      `(1-minute load average when written: ${os.loadavg()[0].toFixed(1)}; above 2, other work shared the cores).`,
      "",
      comms,
      "",
    ].join("\n");
    console.log("\n" + section);
    await writeBenchSection("Status pages: subscriber mails and maintenance windows (`npm run bench pages`)", section);
  } finally {
    await pgh.stop().catch(() => undefined);
    await rm(tmp, { recursive: true, force: true });
  }
}

/** The public page read by concurrent clients, and its baselines: the "Status pages" section. */
async function serving(pgUrl: string, tmp: string): Promise<void> {
  let vigil: ChildProcess | undefined;
  const db = new pg.Client({ connectionString: pgUrl });
  try {
    const port = await freePort();
    const metricsPort = await freePort();
    vigil = spawnVigil({
      databaseUrl: pgUrl,
      port,
      dataDir: path.join(tmp, "vigil"),
      env: {
        METRICS_PORT: String(metricsPort),
        STATUS_PAGE_REFRESH_MS: String(REFRESH_MS),
        RATE_LIMIT_STATUS_READS_PER_MINUTE: "1000000000",
      },
    });
    await waitHealthy(port, vigil);
    const { key, projectId, cookie } = await setupProject(port);
    await db.connect();
    const base = `http://127.0.0.1:${port}`;

    // 50 monitors made by their first heartbeat, then given 90 days of history: created and first
    // beating 90 days ago, with a resolved incident on about one day in six (5 to 90 minutes).
    for (let i = 0; i < MONITORS; i++) {
      const r = await fetch(`${base}/v1/projects/${projectId}/heartbeats/service-${i}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify({ expectedIntervalMs: 3_600_000, gracePeriodMs: 600_000 }),
      });
      if (r.status >= 300) throw new Error(`heartbeat ${r.status} ${await r.text()}`);
    }
    const now = Date.now();
    const since = new Date(now - DAYS * DAY - DAY);
    await db.query("UPDATE monitors SET created_at = $2, first_heartbeat_at = $2 WHERE project_id = $1", [
      projectId,
      since,
    ]);
    const ids = (
      await db.query<{ id: string }>("SELECT id FROM monitors WHERE project_id = $1 ORDER BY slug", [projectId])
    ).rows.map((r) => r.id);
    let incidents = 0;
    for (const [i, id] of ids.entries()) {
      for (let d = 1; d < DAYS; d++) {
        if ((i * 31 + d * 17) % 6 !== 0) continue;
        const start = new Date(now - d * DAY + ((i * 7919 + d * 104_729) % (20 * 3_600_000)));
        const ms = (5 + ((i + d) % 86)) * 60_000;
        await db.query(
          `INSERT INTO incidents (id, monitor_id, project_id, started_at, ended_at, duration_ms, title, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $4, $5)`,
          [`inc_bench_${i}_${d}`, id, projectId, start, new Date(start.getTime() + ms), ms, `Outage ${d}`],
        );
        incidents++;
      }
    }
    const page = await fetch(`${base}/v1/projects/${projectId}/pages`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({
        slug: SLUG,
        title: "Bench status",
        description: "Fifty services with ninety days of history.",
        published: true,
        monitors: ids.map((monitorId, i) => ({ monitorId, name: `Service ${i}`, section: `Region ${i % 5}` })),
      }),
    });
    if (page.status !== 201) throw new Error(`create page ${page.status} ${await page.text()}`);

    const jsonUrl = `${base}/v1/status/${SLUG}`;
    const htmlUrl = `${base}/status/${SLUG}`;
    // Sizes and the cold build: the first request computes the page.
    const t0 = performance.now();
    const firstJson = await rawGet(jsonUrl);
    const coldMs = performance.now() - t0;
    if (firstJson.status !== 200) throw new Error(`GET ${jsonUrl}: ${firstJson.status}`);
    const firstHtml = await rawGet(htmlUrl);
    if (firstHtml.status !== 200) throw new Error(`GET ${htmlUrl}: ${firstHtml.status}`);
    // Builds without the cache: wait out the refresh interval and time the request that rebuilds.
    const rebuild: number[] = [];
    for (let i = 0; i < (QUICK ? 2 : 5); i++) {
      await new Promise((r) => setTimeout(r, REFRESH_MS + 200));
      const b0 = await builds(metricsPort);
      const s = performance.now();
      await rawGet(jsonUrl); // serves the stale page and starts the refresh
      await new Promise<void>(function wait(r) {
        void builds(metricsPort).then((b) => (b > b0 ? r() : setTimeout(() => wait(r), 2)));
      });
      rebuild.push(performance.now() - s);
    }
    rebuild.sort((a, b) => a - b);
    const buildMs = rebuild[Math.floor(rebuild.length / 2)];

    const xacts = async () =>
      Number(
        (await db.query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")).rows[0]
          .xact_commit,
      );
    const results: { name: string; l: Load; builds: number; xacts: number }[] = [];
    for (const [name, url] of [
      ["Vigil, JSON (GET /v1/status/:slug)", jsonUrl],
      ["Vigil, HTML (GET /status/:slug)", htmlUrl],
    ] as const) {
      const b0 = await builds(metricsPort);
      const x0 = await xacts();
      const l = await load(url, vigil.pid);
      results.push({ name, l, builds: (await builds(metricsPort)) - b0, xacts: (await xacts()) - x0 - 1 });
      console.log(name, l);
    }
    const bare: { name: string; l: Load }[] = [];
    for (const [name, body, type] of [
      ["Baseline: bare node:http (own process), the same JSON bytes", firstJson.body, "application/json"],
      ["Baseline: bare node:http (own process), the same HTML bytes", firstHtml.body, "text/html; charset=utf-8"],
    ] as const) {
      const s = await bareServer(body, type, tmp);
      const l = await load(s.url);
      await s.close();
      bare.push({ name, l });
      console.log(name, l);
    }

    const f = (n: number, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
    const intervals = Math.ceil((SECONDS * 1000) / REFRESH_MS) + 1;
    const row = (name: string, l: Load, extra: string) =>
      `| ${name} | ${f(l.total)} | **${f(l.rps)}** | ${f(l.p50, 1)} | **${f(l.p99, 1)}** | ${f(l.non2xx + l.errors)} | ${f(l.bytesPerRequest / 1024, 1)} | ${extra} |`;
    const met = results.every((r) => r.l.rps >= 5000 && r.l.p99 < 20 && r.builds <= intervals);
    const section = [
      `Command: \`npm run bench pages${QUICK ? " -- --quick" : ""}\` (bench/pages.ts), run ${new Date().toISOString().slice(0, 16)}Z.`,
      "",
      `One published page of ${MONITORS} monitors in 5 sections, each with ${DAYS} days of history (${f(incidents)} resolved incidents),`,
      `STATUS_PAGE_REFRESH_MS=${REFRESH_MS}. Load: autocannon in the bench process, ${CONNECTIONS} keep-alive connections, ${SECONDS} s`,
      "per run, `Accept-Encoding: gzip` (what browsers send), on the same 2 shared cores as Vigil and PostgreSQL",
      `(1-minute load average when written: ${os.loadavg()[0].toFixed(1)}). Sizes as sent (gzip): JSON ${f(firstJson.body.length / 1024, 1)} KB,`,
      `HTML ${f(firstHtml.body.length / 1024, 1)} KB.`,
      "",
      "| Run | Requests | Requests/s | p50 ms | p99 ms | Errors and non-2xx | KB / request | Page builds (PostgreSQL commits) during the run |",
      "|---|---|---|---|---|---|---|---|",
      ...results.map((r) =>
        row(r.name, r.l, `${f(r.builds)} (${f(r.xacts)}) in ${SECONDS} s, at most ${intervals} allowed`),
      ),
      ...bare.map((b) => row(b.name, b.l, "–")),
      "",
      `Ratios, Vigil / bare server (requests/s): JSON **${(results[0].l.rps / bare[0].l.rps).toFixed(2)}x**, HTML **${(results[1].l.rps / bare[1].l.rps).toFixed(2)}x**.`,
      `Vigil CPU during the runs: JSON ${results[0].l.vigilCores!.toFixed(2)} cores, HTML ${results[1].l.vigilCores!.toFixed(2)} cores.`,
      "PostgreSQL commits count the page builds and the node's own background passes (about 1.4 per second when idle).",
      `Building the page (what every request would cost without the snapshot): cold ${f(coldMs, 1)} ms, rebuild median ${f(buildMs, 1)} ms —`,
      `at most ${f(1000 / buildMs)} pages/s per core, against ${f(results[0].l.rps)} requests/s served from the snapshot.`,
      `Targets: >= 5,000 requests/s, p99 < 20 ms, at most one build per refresh interval: ${met ? "met" : "**not met**"}.`,
      "",
    ].join("\n");
    console.log("\n" + section);
    await writeBenchSection("Status pages (`npm run bench pages`)", section);
  } finally {
    await db.end().catch(() => undefined);
    if (vigil && vigil.exitCode === null) vigil.kill("SIGKILL");
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
