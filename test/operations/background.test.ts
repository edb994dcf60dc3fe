// The background work as operators see it (src/shared/background.ts): GET /health lists each task
// this node runs with its last run, last error and lag, and /metrics has the vigil_background_*
// family. A failure is real: the test renames a table the analytics slot pass reads, in the test's
// own database, so the pass's statement fails; renamed back, the pass succeeds again.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { BACKGROUND_TASKS } from "../../src/shared/background.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { promlint } from "../helpers/promlint.js";
import { waitFor } from "../uptime/util.js";

interface TaskView {
  // Absent before the first run / failure: null over REST.
  lastRunAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  lagMs: number;
  runs: number;
  failures: number;
}

const SLOT = "analytics slot pass";
let t: TestApp;
let db: pg.Client;

before(async () => {
  t = await startTestApp({ ANALYTICS_SLOT_INTERVAL_MS: "100", PURGE_INTERVAL_MS: "100" });
  db = new pg.Client({ connectionString: t.databaseUrl });
  await db.connect();
});
after(async () => {
  await db.end();
  await t.close();
});

async function background(): Promise<Record<string, TaskView>> {
  const h = await t.rest.get("/health");
  assert.equal(h.status, 200, h.text);
  // The existing fields and their meaning stay: a failing task does not make the node degraded (in
  // Temporal mode it may be, while its workers connect).
  if (!t.app.deps.config.temporal) assert.equal(h.body.status, "ok");
  return h.body.background as Record<string, TaskView>;
}

const metrics = async () => (await fetch(`${t.metricsUrl}/metrics`)).text();

/** The value of `family{task="<task>"}` on a scrape, or undefined. */
function sample(text: string, family: string, task: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${family}{task="${task}"}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("background tasks on /health and /metrics", () => {
  it("lists every task this node (ROLE=all, embedded or Temporal) runs, with a last run that advances", async () => {
    const first = await waitFor(
      async () => {
        const b = await background();
        return b[SLOT]?.lastRunAt && b["project purge"]?.lastRunAt ? b : undefined;
      },
      10_000,
      "first passes",
    );
    const temporal = !!t.app.deps.config.temporal;
    for (const [name, d] of Object.entries(BACKGROUND_TASKS)) {
      const expected = d.mode === "always" || d.mode === (temporal ? "temporal" : "embedded");
      // Tasks woken by work only (the deadline checks, the alert evaluations) appear once there was some.
      if (expected && !("woken" in d)) assert.ok(name in first, `${name} missing: ${Object.keys(first)}`);
      if (!expected) assert.ok(!(name in first), `${name} runs in the other mode`);
    }
    for (const [name, v] of Object.entries(first)) {
      assert.ok(v.lagMs >= 0 && Number.isInteger(v.lagMs), `${name} lag ${v.lagMs}`);
      assert.equal(v.lastError, null, `${name} failed: ${v.lastError}`);
    }
    const later = await waitFor(
      async () => {
        const b = await background();
        return b[SLOT].lastRunAt! > first[SLOT].lastRunAt! && b[SLOT].runs > first[SLOT].runs ? b : undefined;
      },
      10_000,
      "a later slot pass",
    );
    assert.equal(later[SLOT].failures, 0);
  });

  it("shows a failing pass's error (message only) on /health and counts it on /metrics, then its recovery", async () => {
    await db.query("ALTER TABLE analytics_rollups RENAME TO analytics_rollups_away");
    let failed: Record<string, TaskView>;
    try {
      failed = await waitFor(
        async () => {
          const b = await background();
          return b[SLOT].failures > 0 ? b : undefined;
        },
        10_000,
        "a failed slot pass",
      );
    } finally {
      await db.query("ALTER TABLE analytics_rollups_away RENAME TO analytics_rollups");
    }
    const task = failed[SLOT];
    assert.equal(task.lastError, 'relation "analytics_rollups" does not exist');
    assert.ok(task.lastErrorAt && !Number.isNaN(Date.parse(task.lastErrorAt)));
    assert.ok(!/select|\n|at .*\.ts/i.test(task.lastError!), "no statement or stack in lastError");
    // Other tasks are unaffected, and the node still answers "ok".
    assert.equal(failed["project purge"].failures, 0);

    const text = await metrics();
    assert.deepEqual(promlint(text), []);
    assert.ok((sample(text, "vigil_background_failures_total", SLOT) ?? 0) >= 1, "failures counter");
    const lastRun = sample(text, "vigil_background_last_run_timestamp_seconds", SLOT);
    assert.ok(lastRun !== undefined && Math.abs(lastRun - Date.now() / 1000) < 60, `last run ${lastRun}`);
    assert.ok(sample(text, "vigil_background_lag_seconds", SLOT) !== undefined, "lag gauge");
    assert.equal(sample(text, "vigil_background_failures_total", "project purge") ?? 0, 0);
    for (const family of ["vigil_background_last_run_timestamp_seconds", "vigil_background_lag_seconds"])
      assert.ok(new RegExp(`^# TYPE ${family} gauge$`, "m").test(text), family);
    assert.match(text, /^# TYPE vigil_background_failures_total counter$/m);

    // The table is back: a later pass succeeds (the last error stays, with its time).
    await waitFor(
      async () => {
        const b = (await background())[SLOT];
        return b.lastRunAt! > b.lastErrorAt! && b.runs > task.runs;
      },
      10_000,
      "a successful pass after the failure",
    );
  });
});

describe("one LISTEN connection per process", () => {
  const listening = async () =>
    (
      await db.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN %' AND pid <> pg_backend_pid()",
      )
    ).rows.map((r) => r.pid);

  it("uptime and webhooks share one connection, which comes back after the server ends it", async () => {
    const first = await waitFor(
      async () => ((await listening()).length ? await listening() : undefined),
      10_000,
      "LISTEN",
    );
    assert.equal(first.length, 1, `LISTEN connections: ${first}`);
    await db.query("SELECT pg_terminate_backend($1)", [first[0]]);
    const again = await waitFor(
      async () => {
        const pids = await listening();
        return pids.length && !pids.includes(first[0]) ? pids : undefined;
      },
      10_000,
      "the LISTEN connection back",
    );
    assert.equal(again.length, 1, `LISTEN connections after the reconnection: ${again}`);
  });
});
