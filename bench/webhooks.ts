// `npm run bench webhooks`: webhook deliveries from a real Vigil process (node src/main.ts, embedded
// scheduler, its own PostgreSQL) to a local receiver (127.0.0.1, in this process).
//   A. baseline: batch ingestion throughput with no webhook
//   B. the same ingestion with a webhook watching every event: ingestion throughput (ratio to A),
//      and deliveries/s while the 20,000 deliveries drain
//   C. paced ingestion (well under capacity): delay from the 202 of an event to its first attempt
//      arriving at the receiver, p50 / p99
//   Temporal mode (the "Temporal mode: webhooks" section): the drain (deliveries/s) and the first-attempt
//      delay for the embedded and the Temporal runner with the same counts, the Temporal one on a
//      `temporal server start-dev` of its own (bench/_temporal.ts), and their ratios.
// Bounded in count and time; loopback only. `--quick` for a smaller run; --temporal-only,
// --no-temporal; BENCH_SCALE scales the Temporal comparison's events (2,000 at 1).
import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import pg from "pg";
import { SmtpServer } from "../test/helpers/smtp.js";
import { freePort, postgresCpuSeconds, spawnVigil, writeBenchSection } from "./_shared.js";
import {
  createDatabase,
  startBenchTemporal,
  startVigil,
  workflowTaskDelta,
  workflowTaskStats,
  type BenchTemporal,
  type BenchVigil,
} from "./_temporal.js";

const QUICK = process.argv.includes("--quick");
const EVENTS = QUICK ? 5_000 : 20_000;
const BATCH = 500;
const CONCURRENCY = 4;
const PACED_RATE = 1_000; // events/s in phase C
const PACED_SECONDS = QUICK ? 3 : 5;
const CAP_MS = 120_000;
/** --temporal-only: only the Temporal comparison; --no-temporal: only the embedded runner's section. */
const EMBEDDED = !process.argv.includes("--temporal-only");
const TEMPORAL = !process.argv.includes("--no-temporal");
/** --no-email: skip the email drain (it needs Python's aiosmtpd, as the email tests do). */
const EMAIL = !process.argv.includes("--no-email") && !process.argv.includes("--temporal-only");
const MAILS = 1_000;
/** Events of the Temporal comparison's drain (both runners), scaled by BENCH_SCALE. */
const SCALE = Number(process.env.BENCH_SCALE ?? (QUICK ? 0.2 : 1));
const COMPARE_EVENTS = Math.max(100, Math.round(2_000 * SCALE));
const COMPARE_CAP_MS = 180_000;

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function request(
  port: number,
  method: string,
  p: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method,
        path: p,
        agent,
        headers: { ...headers, ...(data ? { "content-type": "application/json" } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, headers: res.headers });
        });
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

const accepted = new Map<string, number>(); // event id -> time its 202 arrived
const firstArrival = new Map<string, number>(); // event id -> first attempt at the receiver
let arrivals = 0;

async function ingest(
  port: number,
  key: string,
  type: string,
  total: number,
  batch: number,
  concurrency: number,
  paceMs = 0,
): Promise<number> {
  const started = performance.now();
  let sent = 0;
  const worker = async () => {
    while (sent < total) {
      const n = Math.min(batch, total - sent);
      sent += n;
      const t0 = performance.now();
      const r = await request(
        port,
        "POST",
        "/v1/events/batch",
        {
          events: Array.from({ length: n }, (_, i) => ({
            type,
            userId: `u${i % 50}`,
            data: { i, plan: "pro", amount: 12.5 },
          })),
        },
        { authorization: `Bearer ${key}` },
      );
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

/** One Vigil process (embedded runner): ingestion with and without a webhook, drain, first attempt. The "Webhooks" section. */
async function embeddedSection(
  databaseUrl: string,
  tmp: string,
  children: ChildProcess[],
  rxPort: number,
): Promise<void> {
  const port = await freePort();
  const vigil = spawnVigil({
    databaseUrl,
    port,
    dataDir: path.join(tmp, "vigil"),
    env: {
      RATE_LIMIT_EVENTS_PER_MINUTE: "100000000",
      RATE_LIMIT_BATCHES_PER_MINUTE: "100000000",
      WEBHOOK_ALLOW_PRIVATE: "true",
    },
  });
  children.push(vigil);
  if (
    !(await (async () => {
      for (let i = 0; i < 600; i++) {
        try {
          if ((await request(port, "GET", "/health", undefined, {})).status === 200) return true;
        } catch {
          /* starting */
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      return false;
    })())
  )
    throw new Error("vigil did not start");
  const su = await request(
    port,
    "POST",
    "/v1/auth/signup",
    { email: `bench-${Date.now()}@example.com`, password: "correct horse battery" },
    {},
  );
  const cookie = String(su.headers["set-cookie"]?.[0]).split(";")[0];
  const prj = await request(port, "POST", "/v1/projects", { name: "bench", platform: "node" }, { cookie });
  const projectId = prj.body.data.id;
  const key = (
    await request(
      port,
      "POST",
      `/v1/projects/${projectId}/api-keys`,
      { name: "b", environment: "production" },
      { cookie },
    )
  ).body.data.secret;

  // warm-up (JIT, partitions, pools)
  await ingest(port, key, "warmup", 2_000, BATCH, CONCURRENCY);

  // A. baseline: no webhook watches anything
  const baseline = await ingest(port, key, "order.paid", EVENTS, BATCH, CONCURRENCY);
  console.log(`A baseline ingestion: ${baseline.toFixed(0)} events/s`);

  // B. a webhook watches every event: ingestion throughput and delivery drain rate
  const wh = await request(
    port,
    "POST",
    `/v1/projects/${projectId}/webhooks`,
    { url: `http://127.0.0.1:${rxPort}/hook`, events: ["order.paid", "signup"] },
    { cookie },
  );
  if (wh.status !== 201) throw new Error(`webhook: ${wh.status}`);
  const before = arrivals;
  const bStart = performance.now();
  const withHooks = await ingest(port, key, "order.paid", EVENTS, BATCH, CONCURRENCY);
  console.log(`B ingestion with webhooks: ${withHooks.toFixed(0)} events/s`);
  const drained = await waitUntil(() => arrivals - before >= EVENTS, CAP_MS);
  const bEnd = performance.now();
  const delivered = arrivals - before;
  const deliveriesPerSecond = delivered / ((bEnd - bStart) / 1000);
  console.log(
    `B deliveries: ${delivered}/${EVENTS} in ${((bEnd - bStart) / 1000).toFixed(2)} s = ${deliveriesPerSecond.toFixed(0)} deliveries/s${drained ? "" : " (cap reached)"}`,
  );

  // C. paced ingestion: acceptance -> first attempt delay
  accepted.clear();
  firstArrival.clear();
  const perTick = 50;
  await ingest(port, key, "signup", PACED_RATE * PACED_SECONDS, perTick, 1, (perTick / PACED_RATE) * 1000);
  await waitUntil(() => [...accepted.keys()].every((id) => firstArrival.has(id)), 30_000);
  const delays = [...accepted]
    .filter(([id]) => firstArrival.has(id))
    .map(([id, t]) => Math.max(0, firstArrival.get(id)! - t))
    .sort((x, y) => x - y);
  const p50 = pct(delays, 0.5);
  const p99 = pct(delays, 0.99);
  console.log(
    `C first-attempt delay over ${delays.length} events at ${PACED_RATE}/s: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
  );

  const ratio = withHooks / baseline;
  const section = [
    `Command: \`npm run bench webhooks\`${QUICK ? " --quick" : ""} (${new Date().toISOString().slice(0, 10)}; one Vigil process, embedded scheduler, embedded PostgreSQL, receiver on 127.0.0.1 answering 200).`,
    "",
    "| Measure | Value |",
    "|---|---|",
    `| A. Batch ingestion, no webhook (baseline; ${EVENTS} events, batches of ${BATCH}, ${CONCURRENCY} concurrent) | ${baseline.toFixed(0)} events/s |`,
    `| B. Same ingestion, one webhook watching every event | ${withHooks.toFixed(0)} events/s (**${ratio.toFixed(2)}x** of baseline) |`,
    `| B. Deliveries drained (${delivered} of ${EVENTS}, from first ingest request to last arrival) | **${deliveriesPerSecond.toFixed(0)} deliveries/s** |`,
    `| C. Acceptance (202) → first attempt at the receiver, paced ingestion at ${PACED_RATE} events/s, ${delays.length} events | p50 **${p50.toFixed(1)} ms**, p99 **${p99.toFixed(1)} ms** |`,
    "",
    `Targets (issue #33): ingestion with webhooks within 10% of without (${ratio >= 0.9 ? "met" : "not met"}), >= 5,000 deliveries/s (${deliveriesPerSecond >= 5000 ? "met" : "not met"}), p99 first-attempt delay < 50 ms (${p99 < 50 ? "met" : "not met"}).`,
    "",
  ].join("\n");
  console.log("\n" + section);
  await writeBenchSection("Webhooks", section);
}

/** Signs up, creates a project, an API key and a webhook watching every event type the bench sends. */
async function account(port: number, rxPort: number): Promise<{ key: string; projectId: string }> {
  const su = await request(
    port,
    "POST",
    "/v1/auth/signup",
    { email: `bench-${Date.now()}-${port}@example.com`, password: "correct horse battery" },
    {},
  );
  const cookie = String(su.headers["set-cookie"]?.[0]).split(";")[0];
  const projectId = (await request(port, "POST", "/v1/projects", { name: "bench", platform: "node" }, { cookie })).body
    .data.id;
  const key = (
    await request(
      port,
      "POST",
      `/v1/projects/${projectId}/api-keys`,
      { name: "b", environment: "production" },
      { cookie },
    )
  ).body.data.secret;
  const wh = await request(
    port,
    "POST",
    `/v1/projects/${projectId}/webhooks`,
    { url: `http://127.0.0.1:${rxPort}/hook`, events: ["order.paid", "signup"] },
    { cookie },
  );
  if (wh.status !== 201) throw new Error(`webhook: ${wh.status}`);
  return { key, projectId };
}

interface Runner {
  name: "embedded" | "Temporal";
  vigil: BenchVigil;
  key: string;
}

interface Drain {
  delivered: number;
  seconds: number;
  perSecond: number;
  drained: boolean;
  cores: { vigil: number; temporal: number; pg: number };
  /** Temporal: workflow tasks of the webhooks queue during the drain (SDK metrics). */
  wft?: ReturnType<typeof workflowTaskDelta>;
  /** Temporal: delivery workflows started during the drain and their history events. */
  hist?: { workflows: number; events: number };
}

/** Delivery workflows on the dev server so far, and the sum of their histories' lengths (visibility). */
async function deliveryHistories(client: BenchTemporal["client"]): Promise<{ workflows: number; events: number }> {
  let workflows = 0;
  let events = 0;
  for await (const w of client.workflow.list({ query: `WorkflowType = 'webhookDeliveryWorkflow'` })) {
    workflows++;
    events += w.historyLength;
  }
  return { workflows, events };
}

/** Ingests n events (batches of BATCH, CONCURRENCY at a time) and waits for their deliveries: deliveries/s. */
async function drain(r: Runner, n: number, temporal: BenchTemporal): Promise<Drain> {
  const before = arrivals;
  const m0 = workflowTaskStats(await r.vigil.metrics(), ".webhooks");
  const h0 = r.name === "Temporal" ? await deliveryHistories(temporal.client) : undefined;
  const c0 = { v: r.vigil.cpu(), t: temporal.cpu(), pg: postgresCpuSeconds() };
  const t0 = performance.now();
  await ingest(r.vigil.port, r.key, "order.paid", n, BATCH, CONCURRENCY);
  const drained = await waitUntil(() => arrivals - before >= n, COMPARE_CAP_MS);
  const seconds = (performance.now() - t0) / 1000;
  const delivered = arrivals - before;
  const cores = {
    vigil: (r.vigil.cpu() - c0.v) / seconds,
    temporal: (temporal.cpu() - c0.t) / seconds,
    pg: (postgresCpuSeconds() - c0.pg) / seconds,
  };
  const wft = workflowTaskDelta(m0, workflowTaskStats(await r.vigil.metrics(), ".webhooks"));
  // Whatever is left must not run into the next measure.
  if (!drained) await waitUntil(() => arrivals - before >= n, COMPARE_CAP_MS);
  let hist: Drain["hist"];
  if (h0) {
    await new Promise((res) => setTimeout(res, 2_000)); // visibility catches up
    const h1 = await deliveryHistories(temporal.client);
    hist = { workflows: h1.workflows - h0.workflows, events: h1.events - h0.events };
  }
  console.log(
    `${r.name}: ${delivered}/${n} deliveries in ${seconds.toFixed(1)} s = ${(delivered / seconds).toFixed(0)}/s${drained ? "" : " (cap reached)"}`,
  );
  if (r.name === "Temporal")
    console.log(
      `  workflow tasks ${wft.tasks}, mean execution ${wft.execMs.toFixed(0)} ms, mean schedule-to-start ${wft.waitMs.toFixed(0)} ms`,
    );
  return {
    delivered,
    seconds,
    perSecond: delivered / seconds,
    drained,
    cores: r.name === "Temporal" ? cores : { ...cores, temporal: NaN },
    wft: r.name === "Temporal" ? wft : undefined,
    hist,
  };
}

/** Paced ingestion at `rate` events/s for PACED_SECONDS: acceptance (202) -> first attempt delays, sorted. */
async function firstAttempts(r: Runner, rate: number): Promise<{ delays: number[]; sent: number }> {
  accepted.clear();
  firstArrival.clear();
  const perTick = Math.max(1, Math.round(rate / 20));
  const sent = Math.round(rate * PACED_SECONDS);
  await ingest(r.vigil.port, r.key, "signup", sent, perTick, 1, (perTick / rate) * 1000);
  await waitUntil(() => [...accepted.keys()].every((id) => firstArrival.has(id)), 60_000);
  const delays = [...accepted]
    .filter(([id]) => firstArrival.has(id))
    .map(([id, t]) => Math.max(0, firstArrival.get(id)! - t))
    .sort((x, y) => x - y);
  console.log(
    `${r.name}: first attempt over ${delays.length}/${sent} events at ${rate}/s: p50 ${pct(delays, 0.5).toFixed(1)} ms, p99 ${pct(delays, 0.99).toFixed(1)} ms`,
  );
  return { delays, sent };
}

/**
 * Both runners, same counts, one after the other: two Vigil processes (one database each on the same
 * PostgreSQL), the Temporal one on a `temporal server start-dev` of its own. The "Temporal mode:
 * webhooks" section.
 */
async function temporalSection(pgUrl: string, tmp: string, rxPort: number): Promise<string> {
  const temporal = await startBenchTemporal();
  const runners: Runner[] = [];
  try {
    const env = {
      RATE_LIMIT_EVENTS_PER_MINUTE: "100000000",
      RATE_LIMIT_BATCHES_PER_MINUTE: "100000000",
      RATE_LIMIT_WRITES_PER_MINUTE: "100000000",
      WEBHOOK_ALLOW_PRIVATE: "true",
    };
    const [emb, tem] = await Promise.all([
      createDatabase(pgUrl, "bench_wh_embedded").then((u) => startVigil(u, path.join(tmp, "emb"), env)),
      createDatabase(pgUrl, "bench_wh_temporal").then((u) =>
        startVigil(u, path.join(tmp, "tem"), { ...env, TEMPORAL_ADDRESS: temporal.server.address }),
      ),
    ]);
    runners.push({ name: "embedded", vigil: emb, key: "" }, { name: "Temporal", vigil: tem, key: "" });
    for (const r of runners) {
      r.key = (await account(r.vigil.port, rxPort)).key;
      // warm-up: JIT, pools, the worker's first workflow tasks
      const before = arrivals;
      await ingest(r.vigil.port, r.key, "signup", 200, 50, 1);
      await waitUntil(() => arrivals - before >= 200, 60_000);
    }
    const drains: Drain[] = [];
    for (const r of runners) drains.push(await drain(r, COMPARE_EVENTS, temporal));
    // Paced well under the slower runner's capacity (half its drain rate), the same rate for both.
    const rate = Math.max(
      10,
      Math.min(PACED_RATE, Math.floor(Math.min(...drains.map((d) => d.perSecond)) / 2 / 10) * 10),
    );
    const firsts: { delays: number[]; sent: number }[] = [];
    for (const r of runners) firsts.push(await firstAttempts(r, rate));
    const [de, dt] = drains;
    const [fe, ft] = firsts;
    const cpu = (d: Drain) =>
      `Vigil ${d.cores.vigil.toFixed(2)}${Number.isFinite(d.cores.temporal) ? `, dev server ${d.cores.temporal.toFixed(2)}` : ""}, PostgreSQL ${d.cores.pg.toFixed(2)}`;
    const line = (name: string, d: Drain, f: { delays: number[]; sent: number }) =>
      `| ${name} | ${d.delivered}/${COMPARE_EVENTS} in ${d.seconds.toFixed(1)} s: **${d.perSecond.toFixed(0)} deliveries/s**${d.drained ? "" : " (cap reached)"} | ${cpu(d)} | ${f.delays.length}/${f.sent}: p50 ${pct(f.delays, 0.5).toFixed(1)} ms, p99 **${pct(f.delays, 0.99).toFixed(1)} ms** |`;
    const full = SCALE === 1;
    return [
      `Command: \`npm run bench webhooks\` (bench/webhooks.ts), run ${new Date().toISOString().slice(0, 16)}Z${full ? "" : ` — **reduced run** (BENCH_SCALE=${SCALE}): not the figures of record`}.`,
      "",
      "The same measures for both runners, one after the other: two Vigil processes (one database each on one embedded",
      "PostgreSQL), the Temporal one (`TEMPORAL_ADDRESS` set, default settings) on its own `temporal server start-dev` (in memory);",
      "one webhook watching every event, the receiver on 127.0.0.1 answering 200; the load generator, the dev server and both",
      `processes on the same 2 shared cores (1-minute load average when written: ${os.loadavg()[0].toFixed(1)}). CPU in cores over the drain.`,
      `Drain: ${COMPARE_EVENTS} events ingested (batches of ${BATCH}, ${CONCURRENCY} concurrent), from the first ingest request to the last delivery's arrival.`,
      `First attempt: paced ingestion at ${rate} events/s for ${PACED_SECONDS} s (half the slower runner's drain rate, at most ${PACED_RATE}/s), delay from`,
      "the 202 of an event to its first attempt arriving at the receiver.",
      "",
      "| Runner | Deliveries drained | CPU during the drain (cores) | Acceptance → first attempt |",
      "|---|---|---|---|",
      line("embedded", de, fe),
      line("Temporal", dt, ft),
      "",
      `Ratios Temporal / embedded: deliveries/s **${(dt.perSecond / de.perSecond).toFixed(2)}x**; first-attempt p99 **${(pct(ft.delays, 0.99) / pct(fe.delays, 0.99)).toFixed(1)}x**, p50 **${(pct(ft.delays, 0.5) / pct(fe.delays, 0.5)).toFixed(1)}x**.`,
      dt.wft
        ? `Temporal worker during the drain (SDK metrics, webhooks task queue): ${dt.wft.tasks} workflow tasks (${(dt.wft.tasks / Math.max(1, dt.delivered)).toFixed(1)} per delivery), mean execution ${dt.wft.execMs.toFixed(0)} ms (including the local activity that records the attempt), mean schedule-to-start ${dt.wft.waitMs.toFixed(0)} ms.`
        : "",
      dt.hist
        ? `Delivery workflows started during the drain: ${dt.hist.workflows}, with ${dt.hist.events} history events: **${(dt.hist.events / Math.max(1, dt.delivered)).toFixed(2)} history events per successful delivery** (a first attempt that succeeds is made without a workflow, docs/temporal.md).`
        : "",
      `Targets (issue #33): Temporal deliveries/s >= 0.8x embedded (${dt.perSecond >= 0.8 * de.perSecond ? "met" : "not met"}), Temporal first-attempt p99 < 100 ms (${pct(ft.delays, 0.99) < 100 ? "met" : "not met"}), history events per successful delivery < 1 (${dt.hist && dt.hist.events / Math.max(1, dt.delivered) < 1 ? "met" : "not met"}); embedded first-attempt p99 < 50 ms (${pct(fe.delays, 0.99) < 50 ? "met" : "not met"}).`,
      "",
    ].join("\n");
  } finally {
    await Promise.all(runners.map((r) => r.vigil.stop().catch(() => undefined)));
    await temporal.stop().catch(() => undefined);
  }
}

/**
 * 1,000 incident mails (incident.started deliveries of an email webhook, inserted as the triggers
 * insert them) drained by the embedded runner to the local SMTP server the email tests use
 * (test/helpers/smtp_server.py, aiosmtpd): mails/s from the insert to the last message received.
 */
async function emailSection(pgUrl: string, tmp: string): Promise<string> {
  const smtp = await SmtpServer.start();
  const databaseUrl = await createDatabase(pgUrl, "bench_wh_email");
  const vigil = await startVigil(databaseUrl, path.join(tmp, "email"), {
    RATE_LIMIT_WRITES_PER_MINUTE: "100000000",
    SMTP_URL: smtp.url(),
    MAIL_FROM: "vigil@example.com",
    WEBHOOK_ALLOW_PRIVATE: "true",
  });
  const sql = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    const su = await request(
      vigil.port,
      "POST",
      "/v1/auth/signup",
      { email: `bench-mail-${Date.now()}@example.com`, password: "correct horse battery" },
      {},
    );
    const cookie = String(su.headers["set-cookie"]?.[0]).split(";")[0];
    const prj = await request(vigil.port, "POST", "/v1/projects", { name: "mail", platform: "node" }, { cookie });
    const projectId = prj.body.data.id;
    const wh = await request(
      vigil.port,
      "POST",
      `/v1/projects/${projectId}/webhooks`,
      { type: "email", to: ["oncall@example.com"], events: ["incident.started"] },
      { cookie },
    );
    if (wh.status !== 201) throw new Error(`email webhook: ${wh.status} ${JSON.stringify(wh.body)}`);
    const t0 = performance.now();
    await sql.query(
      `WITH ins AS (
         INSERT INTO webhook_deliveries (id, webhook_id, project_id, event_id, event_type, payload, dedupe_key, attempt_limit, next_attempt_at, created_at, updated_at)
         SELECT 'whd_bench' || i, $1, $2, 'inc_bench' || i, 'incident.started',
                jsonb_build_object('incident', jsonb_build_object('id', 'inc_bench' || i, 'monitorId', 'mon_bench', 'status', 'open',
                  'startedAt', now(), 'title', 'Checkout API is down'), 'monitorName', 'Checkout API ' || i),
                'bench:' || i, 8, now(), now(), now()
         FROM generate_series(1, $3) AS i RETURNING 1)
       SELECT count(*), pg_notify('vigil_webhook_due', '') FROM ins`,
      [wh.body.data.id, projectId, MAILS],
    );
    const done = await waitUntil(() => smtp.messages.length >= MAILS, 300_000);
    const seconds = (performance.now() - t0) / 1000;
    const n = smtp.messages.length;
    console.log(`email: ${n}/${MAILS} mails in ${seconds.toFixed(1)} s = ${(n / seconds).toFixed(0)} mails/s`);
    return [
      `Command: \`npm run bench webhooks\` (bench/webhooks.ts), run ${new Date().toISOString().slice(0, 16)}Z. One Vigil process (embedded runner),`,
      `an email webhook watching \`incident.started\`, ${MAILS} incident deliveries inserted at once as the triggers insert them, the local`,
      "SMTP server the email tests run (test/helpers/smtp_server.py, aiosmtpd, on 127.0.0.1, every mail parsed and printed);",
      `all on the same 2 shared cores (1-minute load average when written: ${os.loadavg()[0].toFixed(1)}).`,
      "",
      `| Mails | Time | Rate |`,
      "|---|---|---|",
      `| ${n}/${MAILS}${done ? "" : " (cap reached)"} | ${seconds.toFixed(1)} s | **${(n / seconds).toFixed(0)} mails/s** |`,
      "",
    ].join("\n");
  } finally {
    await sql.end().catch(() => undefined);
    await vigil.stop().catch(() => undefined);
    await smtp.close().catch(() => undefined);
  }
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
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const rxPort = (receiver.address() as net.AddressInfo).port;
  try {
    if (EMBEDDED) await embeddedSection(pgh.url, tmp, children, rxPort);
    if (TEMPORAL) {
      const section = await temporalSection(pgh.url, tmp, rxPort);
      console.log("\n" + section);
      await writeBenchSection("Temporal mode: webhooks", section);
    }
    if (EMAIL) {
      const section = await emailSection(pgh.url, tmp);
      console.log("\n" + section);
      await writeBenchSection("Webhooks: email", section);
    }
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
