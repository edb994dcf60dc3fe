import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { writeFile, mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { freePort } from "../../src/shared/net.js";
import { DEFAULT_METRICS_PORT } from "../../src/config/index.js";
import { startNode } from "../helpers/cluster.js";

// A failed start leaves nothing running: real `src/main.ts` processes with the embedded PostgreSQL
// in a temporary DATA_DIR, started on a port that is taken (and with a DATA_DIR whose session
// secret is unusable, a failure after the cluster started). Each must exit 1 with one line on
// stderr, and no process of that DATA_DIR (postgres) may be left the moment it has exited.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const run = promisify(execFile);

interface Exit {
  code: number | null;
  stderr: string;
  /** Processes whose command line names the DATA_DIR, listed right after the exit. */
  left: string;
  ms: number;
}

async function leftovers(dir: string): Promise<string> {
  try {
    return (await run("pgrep", ["-af", dir])).stdout.trim();
  } catch {
    return ""; // pgrep exits 1 when nothing matches
  }
}

function start(env: Record<string, string>, dataDir: string): Promise<Exit> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: root,
      // The embedded default whatever the suite runs against (CI's external pass sets both).
      env: {
        ...process.env,
        DATABASE_URL: "",
        REDIS_URL: "",
        LOG_LEVEL: "warn",
        HOST: "127.0.0.1",
        DATA_DIR: dataDir,
        ...env,
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("exit", async (code) => {
      clearTimeout(timer);
      const left = await leftovers(dataDir);
      resolve({ code, stderr: stderr.trim(), left, ms: Date.now() - started });
    });
  });
}

function assertCleanFailure(r: Exit, message: RegExp): void {
  assert.equal(r.code, 1, `exit code (stderr: ${r.stderr})`);
  const lines = r.stderr.split("\n").filter((l) => l.trim());
  assert.equal(lines.length, 1, `one line on stderr, got:\n${r.stderr}`);
  assert.match(lines[0], /^Vigil failed to start: /);
  assert.match(lines[0], message);
  assert.equal(r.left, "", "no process of the DATA_DIR outlives Vigil");
}

describe("a failed start leaves nothing running", () => {
  let dataDir: string;
  let taken: net.Server;
  let takenPort: number;
  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "vigil-startfail-"));
    taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", () => r()));
    takenPort = (taken.address() as net.AddressInfo).port;
  });
  after(async () => {
    taken.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("exits 1 naming PORT when the port is taken, with the embedded PostgreSQL stopped and Redis let go", async () => {
    // REDIS_URL points at nothing: the client that keeps reconnecting must not hold the exit.
    const r = await start(
      { PORT: String(takenPort), METRICS_PORT: "off", REDIS_URL: `redis://127.0.0.1:${await freePort()}` },
      dataDir,
    );
    assertCleanFailure(
      r,
      new RegExp(`127\\.0\\.0\\.1:${takenPort} is already in use \\(EADDRINUSE\\); set PORT to another port`),
    );
  });

  it("exits 1 naming METRICS_PORT when the metrics port is taken, after stopping the started workers", async () => {
    const r = await start({ PORT: String(await freePort()), METRICS_PORT: String(takenPort), ROLE: "all" }, dataDir);
    assertCleanFailure(r, new RegExp(`metrics on 127\\.0\\.0\\.1:${takenPort} \\(METRICS_PORT.*EADDRINUSE`));
  });

  it("stops the embedded PostgreSQL when a later start-up step fails (an unusable session secret)", async () => {
    await writeFile(path.join(dataDir, "session-secret"), "short\n", { mode: 0o600 });
    const r = await start({ PORT: String(await freePort()), METRICS_PORT: "off" }, dataDir);
    assertCleanFailure(r, /session-secret holds no usable session secret/);
  });
});

// METRICS_PORT unset means 9464, the OpenTelemetry Prometheus exporter's default, which another
// process's exporter may well hold: that is a warning and Vigil serves without /metrics. A
// METRICS_PORT the operator set (even to 9464) is held to: taken, the start fails as above.
describe("the default metrics port taken by another process", () => {
  let holder: net.Server | undefined;
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "vigil-metricsport-"));
    const server = net.createServer((s) => s.end());
    holder = await new Promise<net.Server | undefined>((resolve, reject) => {
      server.once("error", (err: NodeJS.ErrnoException) =>
        err.code === "EADDRINUSE" ? resolve(undefined) : reject(err),
      ); // already held by another process: taken all the same
      server.listen(DEFAULT_METRICS_PORT, "127.0.0.1", () => resolve(server));
    });
  });
  after(async () => {
    holder?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("is a warning: Vigil starts, serves the API, and names METRICS_PORT in one log line", async () => {
    const node = await startNode({ METRICS_PORT: undefined, METRICS_HOST: undefined, LOG_LEVEL: "info" });
    try {
      const health = await node.rest.get("/health");
      assert.equal(health.status, 200);
      const warnings = node
        .stdout()
        .split("\n")
        .filter((l) => l.includes('"level":40') && l.includes("METRICS_PORT"));
      assert.equal(warnings.length, 1, `one warning about the metrics port, got:\n${node.stdout()}`);
      assert.match(warnings[0], new RegExp(`127\\.0\\.0\\.1:${DEFAULT_METRICS_PORT} is in use`));
      assert.doesNotMatch(node.stdout(), /metrics on http:/);
    } finally {
      assert.equal(await node.kill("SIGTERM"), 0, node.stderr());
    }
  });

  it("set explicitly (METRICS_PORT=9464), the same taken port still refuses to start, naming METRICS_PORT", async () => {
    const r = await start({ PORT: String(await freePort()), METRICS_PORT: String(DEFAULT_METRICS_PORT) }, dataDir);
    assertCleanFailure(r, new RegExp(`metrics on 127\\.0\\.0\\.1:${DEFAULT_METRICS_PORT} \\(METRICS_PORT.*EADDRINUSE`));
  });
});
