// Records Temporal workflow histories of the CURRENT workflow code into test/temporal/histories/,
// for test/workflows/replay.test.ts (issue #14 point 11: a change to workflows/ must replay every saved history).
//
//   npx tsx test/temporal/record-histories.ts <N> [--force]
//
// writes v<N>-<flow>.json (the output of `temporal workflow show --output json`). Record a new N
// each time workflows/ changes in a way old histories would not show (a new `patched()` branch, a
// new signal, ...), and commit the files: test/workflows/replay.test.ts then replays old and new histories against
// the code. It starts its own dev server (test/helpers/temporal.ts), an embedded PostgreSQL and a
// Vigil with TEMPORAL_ADDRESS (ROLE=all, so it runs the worker), and drives it over REST:
//   monitor-down        checked a few times under steady heartbeats, then down (deadline missed) and
//                       waiting: a running workflow's partial history, as a new worker replays it
//   monitor-recovered   the same workflow after a recovery heartbeat (wake signal), sleeping again
//   monitor-deleted     monitor deleted while its workflow slept: the workflow ended
//   deadline-scan       the deadline scan (v3 on) of the above: scans, the take-down, wake signals,
//                       sleeping until the next deadline
//   webhook-retried     receiver answered 500 then 200: a durable backoff sleep, then success (since
//                       delivery-v3 the first attempt is the scheduler's: the run begins with the sleep)
//   webhook-sleeping    receiver answered 503 Retry-After: 300: sleeping until the next attempt
//   webhook-manual-retry the same delivery after a manual retry (retryNow signal) cut the sleep
//                       short and the second attempt succeeded
// About 20 s (it prints the SDK worker's logs). Needs nothing running; the temporal CLI is found or obtained as in `npm test`.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Client, Connection } from "@temporalio/client";
import pino from "pino";
import { createPool } from "../../src/storage/db.js";
import { startEmbeddedPostgres } from "../../src/storage/embedded.js";
import { migrate } from "../../src/storage/migrate.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { startTemporal, temporalCli } from "../helpers/temporal.js";
import { Receiver } from "../webhooks/receiver.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const outDir = path.join(root, "test/temporal/histories");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, ok: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await sleep(100);
  }
}

async function main(): Promise<void> {
  const version = process.argv[2];
  const force = process.argv.includes("--force");
  if (!version || !/^\d+$/.test(version))
    throw new Error("usage: npx tsx test/temporal/record-histories.ts <N> [--force]");
  const name = (flow: string) => path.join(outDir, `v${version}-${flow}.json`);
  const flows = [
    "monitor-down",
    "monitor-recovered",
    "monitor-deleted",
    "deadline-scan",
    "webhook-retried",
    "webhook-sleeping",
    "webhook-manual-retry",
  ];
  if (!force && flows.some((f) => existsSync(name(f))))
    throw new Error(`v${version}-*.json exist already in ${outDir} (--force overwrites)`);
  await mkdir(outDir, { recursive: true });

  const cli = await temporalCli();
  const server = await startTemporal();
  const tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-record-"));
  const pgh = await startEmbeddedPostgres(tmp, pino({ level: "warn" }));
  let app: TestApp | undefined;
  const rx = await Receiver.start();
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  try {
    const pool = createPool(pgh.url, 2);
    await migrate(pool);
    await pool.end();
    app = await startTestApp(
      {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_MIN_DEADLINE_MS: "0",
        WEBHOOK_ALLOW_PRIVATE: "true",
        WEBHOOK_BACKOFF_BASE_MS: "1000",
        WEBHOOK_TIMEOUT_MS: "2000",
        RATE_LIMIT_WEBHOOK_SENDS_PER_MINUTE: "10000",
      },
      { databaseUrl: pgh.url },
    );
    const { rest } = app;
    const p = await project(rest);
    const key = { key: p.key };
    const owner = { cookie: p.owner.cookie };
    const mon = `/v1/projects/${p.projectId}/monitors`;

    const events = async (id: string) => (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const status = async (id: string) => (await client.workflow.getHandle(id).describe()).status.name;
    const signals = async (id: string) =>
      (await events(id)).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
    /** Running, no activity pending, no workflow task outstanding, history unchanged for 600 ms. */
    const quiet = (id: string) =>
      waitFor(`${id} waiting quietly`, async () => {
        const d = await client.workflow.getHandle(id).describe();
        if (d.status.name !== "RUNNING" || (d.raw.pendingActivities ?? []).length) return false;
        const a = await events(id);
        const last = a.at(-1);
        if (!last || last.workflowTaskScheduledEventAttributes || last.workflowTaskStartedEventAttributes) return false;
        await sleep(600);
        return (await events(id)).length === a.length;
      });
    const save = async (workflowId: string, flow: string) => {
      const { stdout } = await promisify(execFile)(
        cli,
        ["workflow", "show", "-w", workflowId, "--address", server.address, "--output", "json"],
        { maxBuffer: 64 << 20 },
      );
      JSON.parse(stdout); // a history, not an error message
      await writeFile(name(flow), stdout);
      console.log(
        `${name(flow)}: ${workflowId}, ${(await events(workflowId)).length} events, ${await status(workflowId)}`,
      );
    };

    // a. steady heartbeats (a few checks find a later deadline), down, recovery heartbeat (wake)
    const hb = (body: object = {}) => rest.post(`/v1/projects/${p.projectId}/heartbeats/recovered`, body, key);
    const first = await hb({ expectedIntervalMs: 400, gracePeriodMs: 0 });
    const a = first.body.data.monitor.id as string;
    for (let i = 0; i < 10; i++) {
      await sleep(150);
      await hb();
    }
    await waitFor("monitor down", async () => (await rest.get(`${mon}/${a}/status`, key)).body.data.status === "down");
    await quiet(`monitor-${a}`);
    await save(`monitor-${a}`, "monitor-down");
    const before = await signals(`monitor-${a}`);
    await hb({ expectedIntervalMs: 300_000 }); // up again; then sleeps about five minutes
    await waitFor("recovery wake signal", async () => (await signals(`monitor-${a}`)) > before);
    await quiet(`monitor-${a}`);
    await save(`monitor-${a}`, "monitor-recovered");

    // b. a deleted monitor's workflow ends
    const b = (await rest.post(`/v1/projects/${p.projectId}/heartbeats/deleted`, { expectedIntervalMs: 300_000 }, key))
      .body.data.monitor.id as string;
    await waitFor(
      "monitor workflow started",
      async () => (await status(`monitor-${b}`).catch(() => "none")) === "RUNNING",
    );
    await quiet(`monitor-${b}`);
    if ((await rest.del(`${mon}/${b}`, key)).status !== 204) throw new Error("delete monitor failed");
    await waitFor("monitor workflow completed", async () => (await status(`monitor-${b}`)) === "COMPLETED");
    await save(`monitor-${b}`, "monitor-deleted");
    const scan = (await app.app.deps.temporal!.queues()).deadlines;
    await quiet(scan);
    await save(scan, "deadline-scan");

    // c. a failed attempt, a durable backoff sleep (WEBHOOK_BACKOFF_BASE_MS ± 20%), then success
    const hook = async (route: string, reply: (n: number) => { status: number; headers?: Record<string, string> }) => {
      const url = rx.on(route, (_r, n) => reply(n));
      const w = await rest.post(`/v1/projects/${p.projectId}/webhooks`, { url, events: ["x"] }, owner);
      if (w.status !== 201) throw new Error(`create webhook failed: ${w.text}`);
      const d = await rest.post(`/v1/projects/${p.projectId}/webhooks/${w.body.data.id}/test`, {}, owner);
      if (d.status !== 202) throw new Error(`test delivery failed: ${d.text}`);
      return { webhookId: w.body.data.id as string, deliveryId: d.body.data.id as string };
    };
    const c = await hook("/retried", (n) => ({ status: n === 1 ? 500 : 200 }));
    await waitFor(
      "delivery workflow completed",
      async () => (await status(`webhook-${c.deliveryId}`).catch(() => "none")) === "COMPLETED",
    );
    if (rx.at("/retried").length !== 2) throw new Error("expected two attempts");
    await save(`webhook-${c.deliveryId}`, "webhook-retried");

    // d. 503 Retry-After: 300 (a five-minute sleep), then a manual retry (retryNow) succeeds
    const d = await hook("/manual", (n) =>
      n === 1 ? { status: 503, headers: { "retry-after": "300" } } : { status: 200 },
    );
    const wd = `webhook-${d.deliveryId}`;
    await waitFor(
      "first attempt recorded, sleeping",
      async () => rx.at("/manual").length === 1 && (await status(wd).catch(() => "none")) === "RUNNING",
    );
    await quiet(wd);
    await save(wd, "webhook-sleeping");
    const r = await rest.post(
      `/v1/projects/${p.projectId}/webhooks/${d.webhookId}/deliveries/${d.deliveryId}/retry`,
      {},
      owner,
    );
    if (r.status !== 202) throw new Error(`manual retry failed: ${r.status} ${r.text}`);
    await waitFor("delivery workflow completed after the manual retry", async () => (await status(wd)) === "COMPLETED");
    if ((await signals(wd)) < 1) throw new Error("the manual retry did not signal the workflow");
    await save(wd, "webhook-manual-retry");
  } finally {
    await app?.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await rx.close();
    await server.stop();
    await pgh.stop();
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
