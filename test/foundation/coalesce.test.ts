// The queue-and-coalesce primitive (src/shared/coalesce.ts), with real timers.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Coalescer } from "../../src/shared/coalesce.js";

/** A flush that records its batches and can be held open. */
function recorder<T>(holdMs = 0) {
  const batches: T[][] = [];
  let running = 0;
  let maxRunning = 0;
  return {
    batches,
    get maxRunning() {
      return maxRunning;
    },
    async flush(items: T[]): Promise<void> {
      running++;
      maxRunning = Math.max(maxRunning, running);
      batches.push(items);
      if (holdMs) await sleep(holdMs);
      running--;
    },
  };
}

describe("Coalescer", () => {
  it("runs one flush at a time; everything queued meanwhile goes in the next one", async () => {
    const r = recorder<number>(30);
    const c = new Coalescer<number>({ flush: (x) => r.flush(x) });
    const first = c.submit(1); // starts at once (no wait)
    const rest = [2, 3, 4].map((n) => c.submit(n));
    assert.equal(c.inFlight, 1);
    assert.equal(c.queued, 3);
    await Promise.all([first, ...rest]);
    assert.deepEqual(r.batches, [[1], [2, 3, 4]]);
    assert.equal(r.maxRunning, 1);
  });

  it("waits `wait` ms from the first item for company, then flushes them together", async () => {
    const r = recorder<string>();
    const c = new Coalescer<string>({ flush: (x) => r.flush(x), wait: 40 });
    const started = Date.now();
    const a = c.submit("a");
    await sleep(10);
    const b = c.submit("b");
    assert.equal(r.batches.length, 0, "nothing flushed before the wait");
    await Promise.all([a, b]);
    assert.ok(Date.now() - started >= 35, `flushed after ${Date.now() - started} ms`);
    assert.deepEqual(r.batches, [["a", "b"]]);
  });

  it("'turn' coalesces one event-loop turn", async () => {
    const r = recorder<number>();
    const c = new Coalescer<number>({ flush: (x) => r.flush(x), wait: "turn" });
    const all = [1, 2, 3].map((n) => c.submit(n));
    assert.equal(r.batches.length, 0);
    await Promise.all(all);
    await c.submit(4);
    assert.deepEqual(r.batches, [[1, 2, 3], [4]]);
  });

  it("caps a batch by weight (whole items, at least one) and sends a full batch without waiting", async () => {
    const r = recorder<number[]>();
    const c = new Coalescer<number[]>({
      flush: (x) => r.flush(x),
      wait: 10_000,
      maxBatch: 5,
      weight: (x) => x.length,
      concurrency: 4,
    });
    const started = Date.now();
    await Promise.all([c.submit([1, 2]), c.submit([3, 4]), c.submit([5, 6]), c.submit([7, 8, 9, 10, 11, 12])]);
    assert.ok(Date.now() - started < 5_000, "full batches did not wait");
    assert.deepEqual(r.batches, [
      [
        [1, 2],
        [3, 4],
      ],
      [[5, 6]],
      [[7, 8, 9, 10, 11, 12]],
    ]);
  });

  it("runs at most `concurrency` flushes and reports saturation", async () => {
    const r = recorder<number>(20);
    let saturated = 0;
    const c = new Coalescer<number>({
      flush: (x) => r.flush(x),
      concurrency: 2,
      maxBatch: 1,
      onSaturated: () => saturated++,
    });
    await Promise.all([1, 2, 3, 4, 5].map((n) => c.submit(n)));
    assert.equal(r.maxRunning, 2);
    assert.equal(r.batches.length, 5);
    assert.ok(saturated > 0);
  });

  it("delivers results per item and errors per batch", async () => {
    let calls = 0;
    const c = new Coalescer<number, number>({
      wait: "turn",
      flush: async (items) => {
        calls++;
        if (items.includes(13)) throw new Error("unlucky batch");
        return items.map((n) => (n < 0 ? new Error(`negative ${n}`) : n * 2));
      },
    });
    const [a, b] = await Promise.allSettled([c.submit(1), c.submit(-1)]);
    assert.deepEqual(a, { status: "fulfilled", value: 2 });
    assert.equal(b.status === "rejected" && (b.reason as Error).message, "negative -1");
    const batch = await Promise.allSettled([c.submit(13), c.submit(2)]);
    assert.ok(batch.every((x) => x.status === "rejected" && (x.reason as Error).message === "unlucky batch"));
    assert.equal(await c.submit(3), 6, "the next batch is not affected");
    assert.equal(calls, 3);
  });

  it("waitEachBatch: a batch queued behind a flush waits again after it", async () => {
    const r = recorder<number>(20);
    const c = new Coalescer<number>({ flush: (x) => r.flush(x), wait: 60, waitEachBatch: true });
    const t0 = Date.now();
    const first = c.submit(1);
    await sleep(70); // the first flush is running
    const second = c.submit(2);
    await first;
    const firstDone = Date.now();
    await second;
    assert.ok(Date.now() - firstDone >= 50, `the second batch waited ${Date.now() - firstDone} ms after the first`);
    assert.ok(firstDone - t0 >= 55);
    assert.deepEqual(r.batches, [[1], [2]]);
  });

  it("stop() flushes what is queued at once and resolves when idle; idle() waits", async () => {
    const r = recorder<number>(10);
    const c = new Coalescer<number>({ flush: (x) => r.flush(x), wait: 60_000 });
    const items = [c.submit(1), c.submit(2)];
    let idle = false;
    void c.idle().then(() => (idle = true));
    const started = Date.now();
    await c.stop();
    assert.ok(Date.now() - started < 5_000);
    assert.deepEqual(r.batches, [[1, 2]]);
    await Promise.all(items);
    assert.ok(idle);
    const third = c.submit(3); // after stop(), the wait applies again
    await sleep(20);
    assert.deepEqual(r.batches, [[1, 2]]);
    await c.stop();
    await third;
    assert.deepEqual(r.batches, [[1, 2], [3]]);
  });
});
