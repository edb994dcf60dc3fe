import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { preflight, PreflightError } from "../preflight.js";

// npm test's preflight (test/preflight.ts) with PATHs made for each case: redis-server found on
// PATH or through REDIS_SERVER, installed through apt-get (a stand-in apt-get on PATH that records
// its calls and "installs" a stand-in redis-server), and, when it is missing and installing is
// off, one line naming it and how to get it. The last case runs `npm test`'s runner itself.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const REDIS_FILE = "test/foundation/limits.test.ts"; // starts a redis-server
const PLAIN_FILE = "test/foundation/time.test.ts"; // needs none
const WORKFLOW_FILE = "test/workflows/uptime.test.ts"; // needs a JVM and Maven
const SMTP_FILE = "test/webhooks/email.test.ts"; // runs an SMTP server (aiosmtpd)

let dir: string;
let empty: string;
let fakeRedis: string;

async function script(file: string, body: string): Promise<string> {
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

/**
 * A stand-in apt-get in `bin`: records each call's DEBIAN_FRONTEND and arguments in `calls`;
 * `install <package>` puts the package's command on PATH (`installs`: package → [command, what it runs]).
 */
async function standInAptGet(bin: string, calls: string, installs: Record<string, [string, string]>): Promise<void> {
  const cases = Object.entries(installs)
    .map(([pkg, [cmd, target]]) => `*install*${pkg}*) /bin/ln -s ${target} ${bin}/${cmd};;`)
    .join(" ");
  await script(path.join(bin, "apt-get"), `echo "$DEBIAN_FRONTEND $*" >> ${calls}\ncase "$*" in ${cases} esac`);
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "vigil-preflight-"));
  empty = await mkdtemp(path.join(os.tmpdir(), "vigil-preflight-empty-"));
  fakeRedis = await script(path.join(dir, "fake-redis-server"), 'echo "Redis server v=7.0.0 (stand-in)"');
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(empty, { recursive: true, force: true });
});

describe("npm test's preflight", () => {
  const quiet = () => undefined;

  it("names redis-server in one line, with how to install it, when it is missing and installing is off", async () => {
    await assert.rejects(
      preflight({ files: [REDIS_FILE], env: { PATH: empty, VIGIL_TEST_NO_INSTALL: "1" }, say: quiet }),
      (err: Error) => {
        assert.ok(err instanceof PreflightError);
        assert.equal(err.message.split("\n").length, 1, err.message);
        assert.match(
          err.message,
          /^npm test: redis-server \(for the Redis tests\) is missing and installing is turned off \(VIGIL_TEST_NO_INSTALL\)/,
        );
        assert.match(err.message, /apt-get install redis-server/);
        assert.match(err.message, /REDIS_SERVER=\/path\/to\/redis-server/);
        return true;
      },
    );
  });

  it("names aiosmtpd in one line, with how to get it, when Python cannot import it and installing is off", async () => {
    await assert.rejects(
      preflight({ files: [SMTP_FILE], env: { PATH: empty, VIGIL_TEST_NO_INSTALL: "1" }, say: quiet }),
      (err: Error) => {
        assert.ok(err instanceof PreflightError);
        assert.equal(err.message.split("\n").length, 1, err.message);
        assert.match(
          err.message,
          /^npm test: aiosmtpd \(the email tests' SMTP server\) is missing and installing is turned off \(VIGIL_TEST_NO_INSTALL\)/,
        );
        assert.match(err.message, /pip install --target \.tmp\/aiosmtpd aiosmtpd==/);
        assert.match(err.message, /VIGIL_TEST_PYTHONPATH/);
        return true;
      },
    );
  });

  it("asks nothing of files that start no redis-server, nor with REDIS_URL", async () => {
    assert.deepEqual(
      await preflight({ files: [PLAIN_FILE], env: { PATH: empty, VIGIL_TEST_NO_INSTALL: "1" }, say: quiet }),
      {},
    );
    assert.deepEqual(
      await preflight({
        files: [REDIS_FILE],
        env: { PATH: empty, VIGIL_TEST_NO_INSTALL: "1", REDIS_URL: "redis://127.0.0.1:1" },
        say: quiet,
      }),
      {},
    );
  });

  it("uses REDIS_SERVER, or redis-server on PATH, and hands it to the test processes", async () => {
    assert.deepEqual(
      await preflight({ files: [REDIS_FILE], env: { PATH: empty, REDIS_SERVER: fakeRedis }, say: quiet }),
      { REDIS_SERVER: fakeRedis },
    );
    const bin = await mkdtemp(path.join(dir, "bin-"));
    const onPath = await script(path.join(bin, "redis-server"), 'echo "Redis server v=7.0.0"');
    assert.deepEqual(await preflight({ files: [REDIS_FILE], env: { PATH: `${empty}:${bin}` }, say: quiet }), {
      REDIS_SERVER: onPath,
    });
    await assert.rejects(
      preflight({ files: [REDIS_FILE], env: { PATH: empty, REDIS_SERVER: path.join(empty, "nope") }, say: quiet }),
      /REDIS_SERVER=.*nope does not run/,
    );
  });

  it(
    "installs redis-server with apt-get (as root) when it is missing",
    { skip: process.getuid?.() !== 0 && "apt-get is only used as root or with password-less sudo" },
    async () => {
      const bin = await mkdtemp(path.join(dir, "apt-"));
      const calls = path.join(bin, "calls");
      await standInAptGet(bin, calls, { "redis-server": ["redis-server", fakeRedis] });
      const lines: string[] = [];
      const out = await preflight({ files: [REDIS_FILE], env: { PATH: `${empty}:${bin}` }, say: (l) => lines.push(l) });
      assert.deepEqual(out, { REDIS_SERVER: path.join(bin, "redis-server") });
      assert.deepEqual((await readFile(calls, "utf8")).trim().split("\n"), [
        "noninteractive update -qq",
        "noninteractive install -y -qq --no-install-recommends redis-server",
      ]);
      assert.deepEqual(lines, ["npm test: redis-server is missing: installing redis-server with apt-get"]);
    },
  );

  it(
    "says what apt-get answered when the install fails",
    { skip: process.getuid?.() !== 0 && "apt-get is only used as root" },
    async () => {
      const bin = await mkdtemp(path.join(dir, "apt-fail-"));
      await script(
        path.join(bin, "apt-get"),
        'case "$*" in *install*) echo "E: Unable to locate package redis-server" >&2; exit 100;; esac',
      );
      await assert.rejects(
        preflight({ files: [REDIS_FILE], env: { PATH: `${empty}:${bin}` }, say: quiet }),
        (err: Error) => {
          assert.equal(err.message.split("\n").length, 1, err.message);
          assert.match(err.message, /apt-get install redis-server failed \(E: Unable to locate package redis-server\)/);
          return true;
        },
      );
    },
  );

  it(
    "installs a JVM and Maven with apt-get (as root) for the workflow tests when they are missing",
    { skip: process.getuid?.() !== 0 && "apt-get is only used as root or with password-less sudo" },
    async () => {
      const bin = await mkdtemp(path.join(dir, "apt-jvm-"));
      const calls = path.join(bin, "calls");
      await standInAptGet(bin, calls, { "default-jre-headless": ["java", "/bin/true"], maven: ["mvn", "/bin/true"] });
      const lines: string[] = [];
      const env = { PATH: `${empty}:${bin}` };
      assert.deepEqual(await preflight({ files: [WORKFLOW_FILE], env, say: (l) => lines.push(l) }), {});
      assert.deepEqual(
        (await readFile(calls, "utf8"))
          .trim()
          .split("\n")
          .filter((l) => l.includes(" install ")),
        [
          "noninteractive install -y -qq --no-install-recommends default-jre-headless",
          "noninteractive install -y -qq --no-install-recommends maven",
        ],
      );
      assert.deepEqual(lines, [
        "npm test: java is missing: installing default-jre-headless with apt-get",
        "npm test: mvn is missing: installing maven with apt-get",
      ]);
      // Not needed for other files, nor with TEMPORAL_TEST_SERVER; with installing off, one line per tool.
      await rm(calls);
      await preflight({ files: [PLAIN_FILE], env: { PATH: empty }, say: quiet });
      await preflight({ files: [WORKFLOW_FILE], env: { PATH: empty, TEMPORAL_TEST_SERVER: "/x" }, say: quiet });
      await assert.rejects(
        preflight({ files: [WORKFLOW_FILE], env: { PATH: empty, VIGIL_TEST_NO_INSTALL: "1" }, say: quiet }),
        (err: Error) => {
          assert.equal(err.message.split("\n").length, 2, err.message);
          assert.match(err.message, /java \(for Temporal's time-skipping test server.*VIGIL_TEST_NO_INSTALL/);
          return true;
        },
      );
    },
  );

  it("makes `npm test` fail at once, in one line on stderr, before starting anything", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: empty, VIGIL_TEST_NO_INSTALL: "1" };
    delete env.REDIS_URL;
    delete env.REDIS_SERVER;
    const started = Date.now();
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", "test/run.ts", REDIS_FILE], {
        cwd: root,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      child.on("error", reject);
      child.on("exit", (code) => resolve({ code, stdout, stderr }));
    });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, /^npm test: redis-server \(for the Redis tests\) is missing/);
    assert.doesNotMatch(r.stdout, /Temporal dev server|=== pass/, "nothing was started");
    assert.ok(Date.now() - started < 30_000, `took ${Date.now() - started} ms`);
  });
});
