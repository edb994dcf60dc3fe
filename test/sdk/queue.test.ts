import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { VigilError, type StorageLike } from "../../sdk/src/index.js";
import { fnv1a } from "../../sdk/src/util.js";
import { accept, useFakeServer } from "./fake-server.js";

// The bounded queue's drop policy and counter, shutdown and exit flushes, and the persisted queue
// (an injected Web Storage double standing in for localStorage: reloads, acknowledgement, two tabs).

const { f, client } = useFakeServer({ flushIntervalMs: 5, retry: { baseMs: 10, maxMs: 50 } });

class MemoryStorage implements StorageLike {
  readonly map = new Map<string, string>();
  get length() {
    return this.map.size;
  }
  key(i: number) {
    return [...this.map.keys()][i] ?? null;
  }
  getItem(k: string) {
    return this.map.get(k) ?? null;
  }
  setItem(k: string, v: string) {
    this.map.set(k, v);
  }
  removeItem(k: string) {
    this.map.delete(k);
  }
  /** Stored event items across every queue key. */
  storedEvents(apiKey = "vk_test"): any[] {
    return [...this.map.entries()]
      .filter(([k]) => k.startsWith(`vigil:q:${fnv1a(apiKey)}:`))
      .flatMap(([, v]) => JSON.parse(v).events.map((j: string) => JSON.parse(j)));
  }
}

describe("the bounded queue", () => {
  it("when full the OLDEST queued items are dropped, counted in stats.dropped, reported once", async () => {
    // The server stalls: the first batch (1 item) stays in flight, the rest queue up.
    f.answer = (req, n) => (n === 1 ? "hang" : accept(req));
    const { vigil, errors } = client({ flushAt: 1, maxQueueSize: 5, requestTimeoutMs: 400 });
    for (let i = 0; i < 20; i++) vigil.track("e", { i });
    assert.equal(vigil.stats.dropped, 15);
    assert.equal(vigil.stats.queued, 5);
    assert.equal(errors.filter((e) => e.code === "queue_full").length, 1);
    await vigil.flush();
    const got = [...new Set(f.events().map((e) => e.data.i))];
    assert.deepEqual(got, [0, 16, 17, 18, 19], "the in-flight one and the newest four");
    assert.deepEqual(vigil.stats, { queued: 0, sent: 5, dropped: 15, rejected: 0, retries: 1 });
    await vigil.shutdown();
  });

  it("with room again, a later overflow is reported again", async () => {
    f.answer = (req) => ({ ...(accept(req) as object), delayMs: 50 }) as ReturnType<typeof accept>;
    const { vigil, errors } = client({ flushAt: 2, maxQueueSize: 3 });
    for (let i = 0; i < 6; i++) vigil.track("e");
    await vigil.flush();
    for (let i = 0; i < 6; i++) vigil.track("e");
    await vigil.flush();
    assert.equal(errors.filter((e) => e.code === "queue_full").length, 2);
    assert.equal(vigil.stats.dropped + vigil.stats.sent, 12);
    await vigil.shutdown();
  });
});

describe("shutdown and exit", () => {
  it("shutdown() sends everything queued, then refuses later calls (counted as dropped)", async () => {
    const { vigil, errors } = client({ flushIntervalMs: 60_000, flushAt: 1000 });
    for (let i = 0; i < 50; i++) vigil.track("e", { i });
    vigil.increment("c");
    await vigil.shutdown();
    assert.equal(f.events().length, 50);
    assert.equal(f.seen.filter((s) => s.path.endsWith("/metrics/batch")).length, 1);
    vigil.track("late");
    assert.equal(vigil.stats.dropped, 1);
    assert.equal(errors.at(-1)?.code, "invalid");
    await assert.rejects(vigil.heartbeat("x"), VigilError);
  });

  it("at shutdown's deadline every remaining batch gives up at once, without another request", async () => {
    f.answer = () => "hang";
    const { vigil, errors } = client({ flushAt: 10, requestTimeoutMs: 5000, shutdownTimeoutMs: 100 });
    const ids = Array.from({ length: 50 }, (_, i) => vigil.track("e", { i }));
    await f.until(() => f.seen.length === 1, 2000, "the first request");
    const t0 = Date.now();
    await vigil.shutdown();
    assert.ok(Date.now() - t0 < 1500, `shutdown took ${Date.now() - t0} ms`);
    assert.equal(f.seen.length, 1);
    assert.deepEqual(
      errors.flatMap((e) => (e.code === "gave_up" ? e.ids : [])),
      ids,
    );
    assert.equal(vigil.stats.rejected, 50);
  });

  it("flush() waits for what was queued before it, through retries", async () => {
    f.answer = (req, n) => (n <= 2 ? { status: 503 } : accept(req));
    const { vigil } = client();
    vigil.track("a");
    await vigil.flush();
    assert.equal(vigil.stats.sent, 1);
    assert.equal(f.seen.length, 3);
    await vigil.shutdown();
  });

  it("Node: a process that ends without flush() or shutdown() still sends its queue (beforeExit), through retries", async () => {
    f.answer = (req, n) => (n <= 2 ? "reset" : accept(req));
    const sdk = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../sdk/src/index.js");
    const script = `
      import { Vigil } from ${JSON.stringify(sdk)};
      const vigil = new Vigil({ apiKey: "vk_test", apiUrl: ${JSON.stringify(f.url)}, flushIntervalMs: 60000, retry: { baseMs: 50 } });
      for (let i = 0; i < 30; i++) vigil.track("exit", { i });
      vigil.increment("exit.count", 3);
    `;
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        stdio: ["ignore", "inherit", "inherit"],
      });
      child.on("exit", resolve);
    });
    assert.equal(code, 0);
    assert.deepEqual(
      [...new Set(f.events().map((e) => e.data.i))].sort((a, b) => a - b),
      [...Array(30).keys()],
    );
    const points = f.seen.filter((s) => s.path.endsWith("/metrics/batch")).flatMap((s) => s.body.metrics);
    assert.equal(new Set(points.map((m) => m.id)).size, 1, "one point, maybe retried with its id");
  });
});

describe("the persisted queue (localStorage)", () => {
  it("a reload with events still queued sends them from storage; they leave storage only when acknowledged", async () => {
    const storage = new MemoryStorage();
    f.answer = () => "hang";
    const first = client({ storage, flushAt: 1000, requestTimeoutMs: 60_000, shutdownTimeoutMs: 10 });
    const ids = [0, 1, 2, 3].map((i) => first.vigil.track("e", { i }));
    await f.until(() => f.seen.length === 1, 2000, "the first page's request (held)");
    assert.deepEqual(
      storage.storedEvents().map((e) => e.id),
      ids,
      "in flight and still stored",
    );
    // "Reload": the first page is gone without an answer; a new instance starts on the same storage.
    f.answer = accept;
    const second = client({ storage });
    await second.vigil.flush();
    assert.deepEqual(
      f.seen.at(-1)!.body.events.map((e: any) => e.id),
      ids,
      "resent with the same ids",
    );
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(storage.storedEvents(), [], "acknowledged: removed");
    await second.vigil.shutdown();
    await first.vigil.shutdown();
    assert.equal(first.errors[0]?.code, "gave_up");
  });

  it("adopting several stored queues (tabs, reloads) keeps each id once, oldest first", async () => {
    const storage = new MemoryStorage();
    const item = (id: string, i: number) => JSON.stringify({ id, type: "e", data: { i } });
    const a = "00000000-0000-4000-8000-00000000000a";
    const b = "00000000-0000-4000-8000-00000000000b";
    const c = "00000000-0000-4000-8000-00000000000c";
    storage.setItem("vigil:q:x:1", "{corrupt");
    const key = (tab: string) => `vigil:q:${fnv1a("vk_test")}:${tab}`;
    storage.setItem(key("tab2"), JSON.stringify({ v: 1, at: 2, events: [item(b, 2), item(c, 3)], metrics: [] }));
    storage.setItem(key("tab1"), JSON.stringify({ v: 1, at: 1, events: [item(a, 1), item(b, 2)], metrics: [] }));
    const { vigil } = client({ storage });
    await vigil.flush();
    assert.deepEqual(
      f.events().map((e) => e.id),
      [a, b, c],
    );
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(storage.storedEvents(), []);
    assert.equal(storage.getItem("vigil:q:x:1"), "{corrupt", "another api key's entry is not touched");
    await vigil.shutdown();
  });

  it("a stored item first sent over 6 days ago is not sent again (the server's 7-day id window); one never sent is", async () => {
    const storage = new MemoryStorage();
    const day = 24 * 3600 * 1000;
    const ids = ["1", "2", "3"].map((n) => `00000000-0000-4000-8000-00000000000${n}`);
    const json = ids.map((id, i) => JSON.stringify({ id, type: "e", data: { i } }));
    storage.setItem(
      `vigil:q:${fnv1a("vk_test")}:old`,
      JSON.stringify({
        v: 1,
        at: Date.now() - 8 * day,
        events: json,
        metrics: [],
        sentAt: { [ids[0]]: Date.now() - 7 * day, [ids[1]]: Date.now() - 5 * day },
      }),
    );
    const { vigil, errors } = client({ storage });
    await vigil.flush();
    assert.deepEqual(
      f.events().map((e) => e.id),
      [ids[1], ids[2]],
    );
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, "gave_up");
    assert.deepEqual(errors[0].ids, [ids[0]]);
    assert.equal(vigil.stats.rejected, 1);
    await vigil.shutdown();
  });

  it("an item's first send is stored with it (in flight, the entry says when it was sent)", async () => {
    const storage = new MemoryStorage();
    f.answer = () => "hang";
    const { vigil } = client({ storage, shutdownTimeoutMs: 10 });
    const t0 = Date.now();
    const id = vigil.track("e");
    const queued = vigil.track("later");
    await f.until(() => f.seen.length === 1, 2000, "the request");
    vigil.track("third");
    await new Promise((r) => setTimeout(r, 1));
    const entry = JSON.parse([...storage.map.entries()].find(([k]) => k.startsWith("vigil:q:"))![1]);
    assert.ok(entry.sentAt[id] >= t0 && entry.sentAt[id] <= Date.now(), JSON.stringify(entry.sentAt));
    assert.equal(entry.events.length, 3);
    assert.equal(typeof entry.sentAt[queued], f.seen[0].body.events.length === 2 ? "number" : "undefined");
    await vigil.shutdown();
  });

  it("a refused batch leaves storage too (it will never be accepted); a queue is per api key", async () => {
    const storage = new MemoryStorage();
    f.answer = () => ({ status: 400, body: { error: { code: "validation_failed", message: "no" } } });
    const { vigil } = client({ storage });
    vigil.track("e");
    await vigil.flush();
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(storage.storedEvents(), []);
    f.answer = () => "hang";
    const other = client({ storage, apiKey: "vk_other", flushIntervalMs: 60_000, shutdownTimeoutMs: 10 });
    other.vigil.track("mine");
    await new Promise((r) => setTimeout(r, 10));
    const mine = client({ storage, flushIntervalMs: 60_000 });
    assert.equal(mine.vigil.stats.queued, 0, "vk_test's instance does not adopt vk_other's queue");
    assert.equal(other.vigil.stats.queued, 1);
    await mine.vigil.shutdown();
    await vigil.shutdown();
    await other.vigil.shutdown();
    assert.equal(other.errors[0]?.code, "gave_up");
    assert.deepEqual(
      storage.storedEvents("vk_other").map((e) => e.type),
      ["mine"],
      "given up at shutdown, but kept in storage for the next load",
    );
  });

  it("a storage that refuses writes (quota) is reported once; the queue goes on in memory", async () => {
    const storage = new MemoryStorage();
    let full = true;
    storage.setItem = (k, v) => {
      if (full && k.startsWith("vigil:q:")) throw new Error("QuotaExceededError");
      storage.map.set(k, v);
    };
    const { vigil, errors } = client({ storage, flushIntervalMs: 60_000 });
    for (let i = 0; i < 5; i++) {
      vigil.track("e", { i });
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.deepEqual(
      errors.map((e) => e.code),
      ["storage"],
    );
    full = false;
    vigil.track("e", { i: 5 });
    await new Promise((r) => setTimeout(r, 1));
    assert.equal(storage.storedEvents().length, 6, "stored again once there is room");
    await vigil.flush();
    assert.equal(f.events().length, 6);
    await vigil.shutdown();
  });

  it("identify persists the user across instances; reset() forgets it and changes the anonymous id", async () => {
    const storage = new MemoryStorage();
    const one = client({ storage, flushIntervalMs: 60_000 });
    const anon = one.vigil.anonymousId;
    assert.match(anon ?? "", /^[0-9a-f-]{36}$/);
    one.vigil.identify("u-7");
    const two = client({ storage, flushIntervalMs: 60_000 });
    assert.equal(two.vigil.userId, "u-7");
    assert.equal(two.vigil.anonymousId, anon);
    two.vigil.track("x");
    two.vigil.reset();
    two.vigil.track("y");
    await two.vigil.flush();
    const x = f.events().find((e) => e.type === "x");
    const y = f.events().find((e) => e.type === "y");
    assert.equal(x.userId, "u-7");
    assert.equal(x.context.anonymousId, anon);
    assert.equal(y.userId, undefined);
    assert.notEqual(y.context.anonymousId, anon);
    await one.vigil.shutdown();
    await two.vigil.shutdown();
  });
});

describe("the bounded queue under a long stall", () => {
  it("100 000 calls while a request hangs: memory stays bounded (dropped items are released)", async () => {
    f.answer = () => "hang";
    const { vigil } = client({ flushAt: 10, maxQueueSize: 1000, requestTimeoutMs: 60_000, shutdownTimeoutMs: 10 });
    const pad = "x".repeat(1000);
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 100_000; i++) vigil.track("e", { i, pad });
    global.gc?.();
    const grown = process.memoryUsage().heapUsed - before;
    assert.equal(vigil.stats.dropped, 100_000 - 1000);
    // Kept: ~1000 items of ~1.1 KB. Without releasing the dropped ones: ~110 MB.
    assert.ok(grown < 30e6, `heap grew ${(grown / 1e6).toFixed(1)} MB`);
    await vigil.shutdown();
  });
});
