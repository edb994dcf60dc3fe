// `npm run bench webhooks`: webhook deliveries from a real Vigil process (node src/main.ts, embedded
// scheduler, its own PostgreSQL) to a local receiver (127.0.0.1, in this process).
//   A. baseline: batch ingestion throughput with no webhook
//   B. the same ingestion with a webhook watching every event: ingestion throughput (ratio to A),
//      and deliveries/s while the 20,000 deliveries drain
//   C. paced ingestion (well under capacity): delay from the 202 of an event to its first attempt
//      arriving at the receiver, p50 / p99
// Bounded in count and time; loopback only. `--quick` for a smaller run.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import { freePort, vigilArgs, writeBenchSection } from "./_shared.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const QUICK = process.argv.includes("--quick");
const EVENTS = QUICK ? 5_000 : 20_000;
const BATCH = 500;
const CONCURRENCY = 4;
const PACED_RATE = 1_000; // events/s in phase C
const PACED_SECONDS = QUICK ? 3 : 5;
const CAP_MS = 120_000;


const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function request(port: number, method: string, p: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ host: "127.0.0.1", port, method, path: p, agent, headers: { ...headers, ...(data ? { "content-type": "application/json" } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, headers: res.headers });
      });
    });
    req.on("error", reject);
    req.end(data);
  });
}

const accepted = new Map<string, number>(); // event id -> time its 202 arrived
const firstArrival = new Map<string, number>(); // event id -> first attempt at the receiver
let arrivals = 0;

async function ingest(port: number, key: string, type: string, total: number, batch: number, concurrency: number, paceMs = 0): Promise<number> {
  const started = performance.now();
  let sent = 0;
  const worker = async () => {
    while (sent < total) {
      const n = Math.min(batch, total - sent);
      sent += n;
      const t0 = performance.now();
      const r = await request(port, "POST", "/v1/events/batch", { events: Array.from({ length: n }, (_, i) => ({ type, userId: `u${i % 50}`, data: { i, plan: "pro", amount: 12.5 } })) }, { authorization: `Bearer ${key}` });
      if (r.status !== 202) throw new Error(`ingest ${r.status}: ${JSON.stringify(r.body)}`);
      const now = performance.now();
      for (const e of r.body.data.events) accepted.set(e.id, now);
      if (paceMs) await new Promise((res) => setTimeout(res, Math.max(0, paceMs - (now - t0))));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return total / ((performance.now() - started) / 1000);
}

function pct(sorted: number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN;
}

async function waitUntil(fn: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-bench-wh-"));
  const pgh = await startEmbeddedPostgres(tmp, pino({ level: "warn" }));
  const children: ChildProcess[] = [];
  const receiver = http.createServer((req, res) => {
    const id = String(req.headers["x-vigil-event-id"] ?? "");
    req.resume();
    req.on("end", () => {
      arrivals++;
      if (!firstArrival.has(id)) firstArrival.set(id, performance.now());
      res.writeHead(204).end();
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const rxPort = (receiver.address() as net.AddressInfo).port;
  try {
    const port = await freePort();
    const vigil = spawn(process.execPath, vigilArgs(), {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, DATABASE_URL: pgh.url, PORT: String(port), DATA_DIR: path.join(tmp, "vigil"), LOG_LEVEL: "warn", RATE_LIMIT_EVENTS_PER_MINUTE: "100000000", RATE_LIMIT_BATCHES_PER_MINUTE: "100000000", WEBHOOK_ALLOW_PRIVATE: "true", REDIS_URL: "", TEMPORAL_ADDRESS: "" },
    });
    children.push(vigil);
    if (!(await (async () => { for (let i = 0; i < 600; i++) { try { if ((await request(port, "GET", "/health", undefined, {})).status === 200) return true; } catch { /* starting */ } await new Promise((r) => setTimeout(r, 100)); } return false; })())) throw new Error("vigil did not start");
    const su = await request(port, "POST", "/v1/auth/signup", { email: `bench-${Date.now()}@example.com`, password: "correct horse battery" }, {});
    const cookie = String(su.headers["set-cookie"]?.[0]).split(";")[0];
    const prj = await request(port, "POST", "/v1/projects", { name: "bench", platform: "node" }, { cookie });
    const projectId = prj.body.data.id;
    const key = (await request(port, "POST", `/v1/projects/${projectId}/api-keys`, { name: "b", environment: "production" }, { cookie })).body.data.secret;

    // warm-up (JIT, partitions, pools)
    await ingest(port, key, "warmup", 2_000, BATCH, CONCURRENCY);

    // A. baseline: no webhook watches anything
    const baseline = await ingest(port, key, "order.paid", EVENTS, BATCH, CONCURRENCY);
    console.log(`A baseline ingestion: ${baseline.toFixed(0)} events/s`);

    // B. a webhook watches every event: ingestion throughput and delivery drain rate
    const wh = await request(port, "POST", `/v1/projects/${projectId}/webhooks`, { url: `http://127.0.0.1:${rxPort}/hook`, events: ["order.paid", "signup"] }, { cookie });
    if (wh.status !== 201) throw new Error(`webhook: ${wh.status}`);
    const before = arrivals;
    const bStart = performance.now();
    const withHooks = await ingest(port, key, "order.paid", EVENTS, BATCH, CONCURRENCY);
    console.log(`B ingestion with webhooks: ${withHooks.toFixed(0)} events/s`);
    const drained = await waitUntil(() => arrivals - before >= EVENTS, CAP_MS);
    const bEnd = performance.now();
    const delivered = arrivals - before;
    const deliveriesPerSecond = delivered / ((bEnd - bStart) / 1000);
    console.log(`B deliveries: ${delivered}/${EVENTS} in ${((bEnd - bStart) / 1000).toFixed(2)} s = ${deliveriesPerSecond.toFixed(0)} deliveries/s${drained ? "" : " (cap reached)"}`);

    // C. paced ingestion: acceptance -> first attempt delay
    accepted.clear();
    firstArrival.clear();
    const perTick = 50;
    await ingest(port, key, "signup", PACED_RATE * PACED_SECONDS, perTick, 1, (perTick / PACED_RATE) * 1000);
    await waitUntil(() => [...accepted.keys()].every((id) => firstArrival.has(id)), 30_000);
    const delays = [...accepted].filter(([id]) => firstArrival.has(id)).map(([id, t]) => Math.max(0, firstArrival.get(id)! - t)).sort((x, y) => x - y);
    const p50 = pct(delays, 0.5);
    const p99 = pct(delays, 0.99);
    console.log(`C first-attempt delay over ${delays.length} events at ${PACED_RATE}/s: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`);

    const ratio = withHooks / baseline;
    const section = [
      `Command: \`npm run bench webhooks\`${QUICK ? " --quick" : ""} (${new Date().toISOString().slice(0, 10)}; one Vigil process, embedded scheduler, embedded PostgreSQL, receiver on 127.0.0.1 answering 204).`,
      "",
      "| Measure | Value |",
      "|---|---|",
      `| A. Batch ingestion, no webhook (baseline; ${EVENTS} events, batches of ${BATCH}, ${CONCURRENCY} concurrent) | ${baseline.toFixed(0)} events/s |`,
      `| B. Same ingestion, one webhook watching every event | ${withHooks.toFixed(0)} events/s (**${ratio.toFixed(2)}x** of baseline) |`,
      `| B. Deliveries drained (${delivered} of ${EVENTS}, from first ingest request to last arrival) | **${deliveriesPerSecond.toFixed(0)} deliveries/s** |`,
      `| C. Acceptance (202) → first attempt at the receiver, paced ingestion at ${PACED_RATE} events/s, ${delays.length} events | p50 **${p50.toFixed(1)} ms**, p99 **${p99.toFixed(1)} ms** |`,
      "",
      `Targets: ingestion with webhooks within 20% of without (${ratio >= 0.8 ? "met" : "not met"}), >= 1,000 deliveries/s (${deliveriesPerSecond >= 1000 ? "met" : "not met"}), p99 first-attempt delay < 500 ms (${p99 < 500 ? "met" : "not met"}).`,
      "",
    ].join("\n");
    console.log("\n" + section);
    await writeBenchSection("Webhooks", section);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    receiver.closeAllConnections();
    receiver.close();
    await pgh.stop().catch(() => undefined);
    await rm(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
