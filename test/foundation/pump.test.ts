import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import { BackgroundTasks } from "../../src/shared/background.js";
import { CoalescedPump, PUMP_RETRY_MS } from "../../src/shared/pump.js";
import { Telemetry } from "../../src/shared/telemetry.js";

// The woken background pass of the webhook outbox expander and the subscribers' mail sender
// (src/shared/pump.ts): wakes coalesce, the pass's answer arms the next one, a failure is logged and
// retried in 1 s, stop() waits for the running pass and nothing runs after it.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function setup(pass: (stopped: () => boolean) => Promise<number | null>) {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: "info" }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  const tasks = new BackgroundTasks(log, new Telemetry(), { role: "all", temporal: false });
  const pump = new CoalescedPump({
    tasks,
    log,
    name: "subscriber mails",
    expectedMs: 60_000,
    failure: "the pass failed",
    pass,
  });
  return { pump, lines, tasks };
}

describe("CoalescedPump", () => {
  it("wakes while a pass runs make one more pass, not one each; nothing runs before start()", async () => {
    let runs = 0;
    let release!: () => void;
    const { pump } = setup(async () => {
      runs++;
      if (runs === 1) await new Promise<void>((r) => (release = r));
      return null;
    });
    pump.wake();
    await sleep(20);
    assert.equal(runs, 0, "not started");
    pump.start();
    await sleep(20);
    assert.equal(runs, 1);
    for (let i = 0; i < 10; i++) pump.wake();
    release();
    await sleep(50);
    assert.equal(runs, 2, "ten wakes during the pass: one pass after it");
    await pump.stop();
  });

  it("the pass's answer arms the next pass; null arms none", async () => {
    const at: number[] = [];
    const { pump } = setup(async () => {
      at.push(Date.now());
      return at.length < 3 ? 60 : null;
    });
    pump.start();
    await sleep(400);
    await pump.stop();
    assert.equal(at.length, 3, "two timed passes after the first, then none");
    assert.ok(at[1] - at[0] >= 55 && at[2] - at[1] >= 55, `armed 60 ms apart: ${at[1] - at[0]}, ${at[2] - at[1]}`);
  });

  it("a failed pass is logged and retried after PUMP_RETRY_MS; its record on /health shows the error", async () => {
    let runs = 0;
    const { pump, lines, tasks } = setup(async () => {
      runs++;
      if (runs === 1) throw new Error("boom");
      return null;
    });
    const started = Date.now();
    pump.start();
    await sleep(50);
    assert.equal(runs, 1);
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg]),
      [[50, "the pass failed"]],
    );
    assert.ok(tasks.report()["subscriber mails"], "recorded under its name");
    while (runs < 2 && Date.now() - started < 5_000) await sleep(20);
    assert.equal(runs, 2);
    assert.ok(Date.now() - started >= PUMP_RETRY_MS - 20, "retried after about a second");
    await pump.stop();
  });

  it("stop() waits for the running pass, which sees stopped(); no pass or timer after it", async () => {
    let runs = 0;
    let sawStop = false;
    const { pump } = setup(async (stopped) => {
      runs++;
      while (!stopped()) await sleep(5);
      sawStop = true;
      return 10;
    });
    pump.start();
    await sleep(20);
    await pump.stop();
    assert.equal(sawStop, true);
    pump.wake();
    await sleep(60);
    assert.equal(runs, 1, "nothing after stop()");
  });
});
