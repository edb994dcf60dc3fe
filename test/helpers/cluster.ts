import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { RestClient } from "./rest.js";
import { temporalPassEnv } from "./temporal.js";

// Real Vigil processes (node --import tsx src/main.ts) for multi-node and crash tests.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

export { freePort } from "../../src/shared/net.js";
import { freePort } from "../../src/shared/net.js";

export interface Node {
  port: number;
  url: string;
  rest: RestClient;
  child: ChildProcess;
  /** Everything the process wrote to stderr (for failure messages). */
  stderr(): string;
  /** The last 20 kB the process wrote to stdout (its log lines). */
  stdout(): string;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * `env` overrides the defaults below; a variable given as undefined is left unset. Without a port
 * (`port` or `env.PORT`), the node gets a free one; freePort's port can still be taken before the
 * node binds it (an outgoing connection's ephemeral port, another test's server), so a node that
 * fails with EADDRINUSE is started again on another port, up to three times.
 */
export async function startNode(env: Record<string, string | undefined>, port?: number): Promise<Node> {
  const chosen = port !== undefined || env.PORT !== undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNodeOn(env, port ?? (await freePort()));
    } catch (err) {
      if (chosen || attempt >= 3 || !/EADDRINUSE/.test(String(err))) throw err;
    }
  }
}

async function startNodeOn(env: Record<string, string | undefined>, p: number): Promise<Node> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "vigil-node-"));
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/root",
      DATA_DIR: dataDir,
      PORT: String(p),
      METRICS_PORT: "0",
      LOG_LEVEL: "warn",
      SESSION_SECRET: "cluster-test-session-secret-0123456789",
      ...temporalPassEnv(),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  let out = "";
  child.stderr!.on("data", (d) => (err = (err + d).slice(-20_000)));
  child.stdout!.on("data", (d) => (out = (out + d).slice(-20_000)));
  const node: Node = {
    port: p,
    url: `http://127.0.0.1:${p}`,
    rest: new RestClient(`http://127.0.0.1:${p}`),
    child,
    stderr: () => err,
    stdout: () => out,
    kill: async (signal = "SIGTERM") => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      child.kill(signal);
      return exited;
    },
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`vigil exited with ${child.exitCode}: ${err}`);
    try {
      if ((await node.rest.get("/health")).status === 200) return node;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`vigil did not become healthy: ${err}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
