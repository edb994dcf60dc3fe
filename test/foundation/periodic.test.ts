// Background passes (src/shared/periodic.ts): the duty cycle that keeps a pass's batches to a share
// of the wall time (the retention pass's RETENTION_DUTY_CYCLE), with real timers.
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { describe, it } from "node:test";
import { parseConfig } from "../../src/config/index.js";
import pino from "pino";
import { BackgroundTasks } from "../../src/shared/background.js";
import { dutyCycle, startPeriodic } from "../../src/shared/periodic.js";
import { Telemetry } from "../../src/shared/telemetry.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

describe("dutyCycle", () => {
  it("rests after each batch so that work is at most the duty share of the time", async () => {
    const paced = dutyCycle(0.25, () => false);
    const { ms, value } = await timed(() => paced(() => sleep(40).then(() => 7)));
    assert.equal(value, 7);
    // 40 ms of work at 25 %: 120 ms of rest after it.
    assert.ok(ms >= 155, `a batch of 40 ms and its rest took ${ms.toFixed(0)} ms`);
  });

  it("duty 1 never rests; a rest is capped by maxRestMs", async () => {
    let restedBy1 = 0;
    const full = dutyCycle(1, () => false);
    for (let i = 0; i < 3; i++) restedBy1 += (await timed(() => full(() => sleep(30)))).ms - 30;
    // Nothing waits after the work: three batches add no rest (only timer slack).
    assert.ok(restedBy1 < 60, `duty 1 added ${restedBy1.toFixed(0)} ms`);
    const capped = dutyCycle(0.001, () => false, 50);
    // 20 ms of work at 0.1 % would rest 20 s; the cap makes it 50 ms.
    assert.ok((await timed(() => capped(() => sleep(20)))).ms < 2_000);
  });

  it("a rest ends early once the pass is stopped", async () => {
    let stopped = false;
    const paced = dutyCycle(0.01, () => stopped); // 30 ms of work: a 3 s rest, capped at 5 s
    setTimeout(() => (stopped = true), 100);
    const { ms } = await timed(() => paced(() => sleep(30)));
    assert.ok(ms < 1_500, `stopping took ${ms.toFixed(0)} ms`);
  });

  it("refuses a duty outside (0, 1], and so does the configuration", () => {
    for (const d of [0, -0.5, 1.5, Number.NaN]) assert.throws(() => dutyCycle(d, () => false), RangeError);
    assert.equal(parseConfig({}).retention.dutyCycle, 0.15);
    assert.equal(parseConfig({ RETENTION_DUTY_CYCLE: "1" }).retention.dutyCycle, 1);
    for (const bad of ["0", "1.5", "-1", "half"]) assert.throws(() => parseConfig({ RETENTION_DUTY_CYCLE: bad }));
  });
});

describe("startPeriodic", () => {
  // A pass that meets an unreachable database (the embedded server's socket gone: connect ENOENT) is
  // an outage /health reports: logged as a warning, as requests log it; any other failure is an error.
  it("logs a pass failed by an unreachable database at warn, any other failure at error", async () => {
    const lines: { level: number; msg: string }[] = [];
    const log = pino({ level: "info" }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const gone = Object.assign(new Error("connect ENOENT /tmp/.s.PGSQL.5432"), { code: "ENOENT", syscall: "connect" });
    const failures = [gone, new Error("a bug")];
    const tasks = new BackgroundTasks(log, new Telemetry(), { role: "all", temporal: false });
    const loop = startPeriodic(tasks, "jobs", 10, async () => {
      const err = failures.shift();
      if (err) throw err;
    });
    const deadline = Date.now() + 5_000;
    while (lines.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await loop.stop();
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg]),
      [
        [40, "jobs failed"],
        [50, "jobs failed"],
      ],
    );
  });
});
