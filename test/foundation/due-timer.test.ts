// The one timer over a lazy heap of due times (src/shared/due-timer.ts) that the uptime deadline
// scheduler and the alert scheduler share, with real timers and short intervals.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DueTimer } from "../../src/shared/due-timer.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A started DueTimer whose onDue takes every due entry and records when it fired. */
function recorder(maxDelayMs = 10_000) {
  const fired: { id: string; at: number; value: string; firedAt: number }[] = [];
  let wakes = 0;
  const t: DueTimer<string> = new DueTimer<string>({
    now: () => Date.now(),
    maxDelayMs,
    onDue: () => {
      wakes++;
      const now = Date.now();
      for (const e of t.takeDue(now, 100)) fired.push({ ...e, firedAt: now });
      t.arm();
    },
  });
  t.start();
  return { t, fired, wakes: () => wakes };
}

/** Active timers of this process (the test runner's own are the same before and after). */
const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

describe("DueTimer", { concurrency: true }, () => {
  it("arms for the earliest due time and never fires early", async () => {
    const { t, fired } = recorder();
    const t0 = Date.now();
    t.set("late", t0 + 60, "b");
    t.set("early", t0 + 30, "a");
    t.arm();
    await sleep(100);
    assert.deepEqual(
      fired.map((f) => f.id),
      ["early", "late"],
    );
    for (const f of fired) assert.ok(f.firedAt >= f.at, `${f.id} fired ${f.at - f.firedAt} ms early`);
    assert.equal(fired[0].value, "a");
    t.stop();
  });

  it("re-arms when an earlier due time is pushed", async () => {
    const { t, fired } = recorder();
    const t0 = Date.now();
    t.set("far", t0 + 400, "x");
    t.arm();
    t.set("near", t0 + 20, "y");
    t.arm();
    await sleep(80);
    assert.deepEqual(
      fired.map((f) => f.id),
      ["near"],
    );
    assert.ok(fired[0].firedAt >= t0 + 20);
    t.stop();
  });

  it("fires due times already passed at once, in order; a later offer does not move one; delete drops one", () => {
    const { t, fired, wakes } = recorder();
    const t0 = Date.now();
    t.set("b", t0 - 10, "b");
    t.set("a", t0 - 20, "a");
    t.offer("a", t0 + 1_000, "a"); // later: a hint that changes nothing
    t.set("gone", t0 - 30, "g");
    t.delete("gone");
    t.arm(); // synchronously
    assert.equal(wakes(), 1);
    assert.deepEqual(
      fired.map((f) => f.id),
      ["a", "b"],
    );
    t.stop();
  });

  it("a wake before the due time (maxDelayMs reached) only re-arms", async () => {
    const { t, fired, wakes } = recorder(15);
    const t0 = Date.now();
    t.set("m", t0 + 60, "m");
    t.arm();
    await sleep(40);
    assert.equal(wakes(), 0, "onDue before anything was due");
    await sleep(60);
    assert.equal(wakes(), 1);
    assert.ok(fired[0].firedAt >= t0 + 60);
    t.stop();
  });

  it("takeDue holds the ids it is told to, for a later call", () => {
    const t = new DueTimer<null>({ now: () => Date.now(), maxDelayMs: 1_000, onDue: () => undefined });
    t.start();
    const now = Date.now();
    for (const id of ["x", "y", "z"]) t.set(id, now - 1, null);
    assert.deepEqual(
      t.takeDue(now, 10, (id) => id === "y").map((e) => e.id),
      ["x", "z"],
    );
    assert.deepEqual(
      t.takeDue(now, 10).map((e) => e.id),
      ["y"],
    );
    t.stop();
  });
});

// Alone: it counts the process's timers.
describe("DueTimer.stop", () => {
  it("leaves no timer, and nothing fires after it", async () => {
    const before = timers();
    const { t, fired } = recorder();
    t.set("s", Date.now() + 30, "s");
    t.arm();
    assert.equal(timers(), before + 1);
    t.stop();
    assert.equal(timers(), before);
    t.set("after", Date.now() - 1, "s"); // stopped: ignored
    t.arm();
    await sleep(60);
    assert.deepEqual(fired, []);
    assert.equal(t.size, 0);
  });
});
