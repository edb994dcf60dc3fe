// `npm test`: first the preflight (test/preflight.ts: redis-server and PostgreSQL found, installed
// or named in one line each, at once), then one PostgreSQL for the whole run (embedded in .tmp/,
// or DATABASE_URL when set), a migrated template database that every test file clones, one
// Temporal dev server for the whole run
// (test/helpers/temporal.ts: the `temporal` CLI from TEMPORAL_CLI or PATH, else obtained; the run
// fails, saying how to get it, when it cannot be), then node's test runner in two passes:
//   pass 1  every test/**/*.test.ts (or only the files given: `npm test -- test/x/y.test.ts`), two
//           files at a time; those of test/temporal/ (live Temporal suites) after, one at a time
//   pass 2  the uptime and webhook tests again with Temporal as the runner (VIGIL_TEST_TEMPORAL=1:
//           startTestApp and startNode add TEMPORAL_ADDRESS of the shared server). It runs when no
//           files are given, or with `--temporal` (then on the files given, if any):
//           `npm test -- --temporal test/uptime/lifecycle.test.ts`. `--temporal-only` skips pass 1.
// Test files get VIGIL_TEST_TEMPORAL_ADDRESS (the shared server) and TEMPORAL_CLI in both passes.
// The run fails when either pass fails.
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import pino from "pino";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import { createPool } from "../src/storage/db.js";
import { migrate } from "../src/storage/migrate.js";
import { startTemporal, temporalCli, type TemporalServer } from "./helpers/temporal.js";
import { preflight, PreflightError } from "./preflight.js";
import { buildDashboard } from "./helpers/dashboard.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);

/** Pass 2 runs these directories' test files with Temporal as the runner... */
const TEMPORAL_PASS_DIRS = ["test/uptime", "test/webhooks"];
/** ...except the pure unit tests (no service, so nothing for Temporal to run). */
const NOT_IN_TEMPORAL_PASS = new Set(["test/uptime/model.test.ts", "test/webhooks/decisions.test.ts"]);

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (statSync(p).isDirectory()) return f === "helpers" ? [] : testFiles(p);
    return f.endsWith(".test.ts") ? [p] : [];
  });
}

async function main(): Promise<number> {
  // What the machine must provide (test/preflight.ts: redis-server, PostgreSQL), obtained or named
  // in one line each before anything starts.
  let machineEnv: Record<string, string>;
  try {
    const given = args.filter((a) => !a.startsWith("--"));
    machineEnv = await preflight({ files: given.length ? given : testFiles(path.join(root, "test")) });
  } catch (err) {
    if (!(err instanceof PreflightError)) throw err;
    console.error(err.message);
    return 1;
  }
  Object.assign(process.env, machineEnv); // REDIS_SERVER for test/helpers/redis.ts in the test processes
  // The Temporal CLI and server next: no silent skip of the Temporal tests.
  let cli: string;
  let temporal: TemporalServer;
  try {
    cli = await temporalCli();
    temporal = await startTemporal();
  } catch (err) {
    // One line, like the preflight's (the helper's message lists the ways to get the CLI).
    console.error(`npm test: ${err instanceof Error ? err.message : String(err)}`.replace(/\s+/g, " "));
    return 1;
  }
  console.log(`npm test: Temporal dev server ${temporal.address} (${cli})`);
  try {
    return await runAll(cli, temporal);
  } finally {
    await temporal.stop();
  }
}

async function runAll(cli: string, temporal: TemporalServer): Promise<number> {
  const log = pino({ level: "warn" });
  let adminUrl = process.env.DATABASE_URL;
  let stop: (() => Promise<void>) | undefined;
  let tmp: string | undefined;
  if (!adminUrl) {
    tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-test-pg-"));
    const h = await startEmbeddedPostgres(tmp, log);
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
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  const tplUrl = new URL(adminUrl);
  tplUrl.pathname = `/${template}`;
  const pool = createPool(tplUrl.toString(), 2);
  await migrate(pool);
  await pool.end();

  const given = args.filter((a) => !a.startsWith("--"));
  const flags = args.filter((a) => a.startsWith("--") && a !== "--temporal" && a !== "--temporal-only");
  const temporalOnly = args.includes("--temporal-only");
  const files = given.length ? given : testFiles(path.join(root, "test"));
  const temporalPass = !given.length || temporalOnly || args.includes("--temporal");
  const rel = (f: string) => path.relative(root, path.resolve(root, f));
  const temporalFiles = given.length
    ? given
    : TEMPORAL_PASS_DIRS.flatMap((d) => testFiles(path.join(root, d))).filter((f) => !NOT_IN_TEMPORAL_PASS.has(rel(f)));

  // The dashboard (web/), built once for the run from the current sources: every test app serves
  // it (test/helpers/app.ts), the browser tests drive it (test/helpers/dashboard.ts).
  if (!process.env.VIGIL_TEST_DASHBOARD_DIR) {
    const started = Date.now();
    process.env.VIGIL_TEST_DASHBOARD_DIR = await buildDashboard();
    console.log(`npm test: dashboard built in ${Date.now() - started} ms (${process.env.VIGIL_TEST_DASHBOARD_DIR})`);
  }

  const runPass = (title: string, list: string[], extraEnv: Record<string, string>, concurrency = 2) => {
    console.log(`\n=== ${title}: ${list.length} file(s) ===\n`);
    const started = Date.now();
    return new Promise<number>((resolve) => {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, ...flags, ...list],
        {
          stdio: "inherit",
          cwd: root,
          env: {
            ...process.env,
            VIGIL_TEST_ADMIN_URL: adminUrl,
            VIGIL_TEST_TEMPLATE: template,
            VIGIL_TEST_TEMPORAL_ADDRESS: temporal.address,
            TEMPORAL_CLI: cli,
            ...extraEnv,
          },
        },
      );
      child.on("exit", (c) => {
        console.log(
          `\n=== ${title}: ${c === 0 ? "passed" : "FAILED"} in ${Math.round((Date.now() - started) / 1000)} s ===`,
        );
        resolve(c ?? 1);
      });
    });
  };
  const results: [string, number][] = [];
  // The live Temporal suites measure detection delays against a shared 2-core budget: one file at a
  // time, after the rest (which run two at a time).
  const live = files.filter((f) => rel(f).startsWith("test/temporal/"));
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
  if (results.length > 1)
    for (const [title, c] of results) console.log(`npm test: ${title} ${c === 0 ? "passed" : "FAILED"}`);
  const code = results.find(([, c]) => c !== 0)?.[1] ?? 0;
  await cleanup(admin, template, stop, tmp);
  return code;
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
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
