// `npm start` as a newcomer runs it: no DATABASE_URL, embedded PostgreSQL in DATA_DIR. The data
// survives a restart on the same DATA_DIR, and SIGTERM stops the cluster cleanly.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { RestClient, sessionCookie } from "../helpers/rest.js";
import { freePort } from "../../src/shared/net.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

function startVigil(dataDir: string, port: number): ChildProcess {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/root",
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_LEVEL: "warn",
    METRICS_PORT: "0",
  };
  return spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: root,
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
}

async function waitHealthy(rest: RestClient, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`vigil exited with ${child.exitCode}`);
    try {
      if ((await rest.get("/health")).status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("vigil did not become healthy within 60 s");
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  child.kill("SIGTERM");
  return new Promise((r) => child.once("exit", (code) => r(code)));
}

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe("embedded PostgreSQL in DATA_DIR", () => {
  it("keeps accounts, projects and keys across a restart, and stops cleanly on SIGTERM", async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "vigil-restart-"));
    dirs.push(dataDir);
    const port = await freePort();
    const rest = new RestClient(`http://127.0.0.1:${port}`);

    const first = startVigil(dataDir, port);
    await waitHealthy(rest, first);
    const s = await rest.post("/v1/auth/signup", { email: "persist@example.com", password: "long enough" });
    assert.equal(s.status, 201);
    const cookie = sessionCookie(s);
    const p = await rest.post("/v1/projects", { name: "Durable", platform: "node" }, { cookie });
    const k = await rest.post(
      `/v1/projects/${p.body.data.id}/api-keys`,
      { name: "k", environment: "production" },
      { cookie },
    );
    assert.equal(await stop(first), 0);
    assert.ok(!existsSync(path.join(dataDir, "pg", "postmaster.pid")), "PostgreSQL was not stopped cleanly");

    const second = startVigil(dataDir, port);
    try {
      await waitHealthy(rest, second);
      const me = await rest.get("/v1/auth/me", { cookie });
      assert.equal(me.status, 200, "the session survives the restart");
      const got = await rest.get("/v1/projects/self", { key: k.body.data.secret });
      assert.equal(got.status, 200);
      assert.equal(got.body.data.name, "Durable");
    } finally {
      assert.equal(await stop(second), 0);
    }
  });

  it("recovers after kill -9 (an orphaned PostgreSQL is stopped and the cluster reused)", async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "vigil-kill-"));
    dirs.push(dataDir);
    const port = await freePort();
    const rest = new RestClient(`http://127.0.0.1:${port}`);
    const first = startVigil(dataDir, port);
    await waitHealthy(rest, first);
    const s = await rest.post("/v1/auth/signup", { email: "killed@example.com", password: "long enough" });
    assert.equal(s.status, 201);
    first.kill("SIGKILL");
    await new Promise((r) => first.once("exit", r));

    const second = startVigil(dataDir, port);
    try {
      await waitHealthy(rest, second);
      const login = await rest.post("/v1/auth/login", { email: "killed@example.com", password: "long enough" });
      assert.equal(login.status, 200);
    } finally {
      assert.equal(await stop(second), 0);
    }
  });
});
