import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../src/shared/net.js";

// A real redis-server for a test file, on a free loopback port. With REDIS_URL set (CI's second
// pass against external servers), that server is used instead and nothing is started. The binary
// is REDIS_SERVER (set by `npm test`'s preflight, test/preflight.ts), else `redis-server` on PATH.

export interface TestRedis {
  url: string;
  port: number;
  /** Whether this helper started the server (false with REDIS_URL: it cannot be stopped then). */
  owned: boolean;
  stop(): Promise<void>;
}

/** A redis-server of our own (ignores REDIS_URL), on `port` when given (e.g. to start it again after stop()). */
export async function startOwnRedis(port?: number): Promise<TestRedis> {
  port ??= await freePort();
  const dir = await mkdtemp(path.join(os.tmpdir(), "vigil-redis-"));
  const bin = process.env.REDIS_SERVER || "redis-server";
  const child: ChildProcess = spawn(
    bin,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: "ignore" },
  );
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  await new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + 10_000;
    const tryConnect = () => {
      const sock = net.connect(port, "127.0.0.1", () => {
        sock.end();
        resolve();
      });
      sock.on("error", () =>
        Date.now() > deadline ? reject(new Error(`${bin} did not start on port ${port}`)) : setTimeout(tryConnect, 50),
      );
    };
    child.on("error", (err) =>
      reject(new Error(`cannot run ${bin}: ${err.message} (npm test installs redis-server; or set REDIS_SERVER)`)),
    );
    tryConnect();
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    owned: true,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

export async function startRedis(): Promise<TestRedis> {
  const url = process.env.REDIS_URL;
  if (url) return { url, port: Number(new URL(url).port || 6379), owned: false, stop: async () => undefined };
  return startOwnRedis();
}
