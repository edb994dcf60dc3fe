import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../src/shared/net.js";

// A real redis-server for a test file, on a free loopback port. With REDIS_URL set (CI's second
// pass against external servers), that server is used instead and nothing is started.

export interface TestRedis {
  url: string;
  stop(): Promise<void>;
}


export async function startRedis(): Promise<TestRedis> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => undefined };
  const port = await freePort();
  const dir = await mkdtemp(path.join(os.tmpdir(), "vigil-redis-"));
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
  await new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + 10_000;
    const tryConnect = () => {
      const sock = net.connect(port, "127.0.0.1", () => {
        sock.end();
        resolve();
      });
      sock.on("error", () => (Date.now() > deadline ? reject(new Error("redis-server did not start (is it installed?)")) : setTimeout(tryConnect, 50)));
    };
    child.on("error", reject);
    tryConnect();
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    },
  };
}
