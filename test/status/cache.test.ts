// The status pages' snapshot cache (src/status/cache.ts) and the keyed single-flight under it,
// driven directly with a hand-moved clock and builds that finish when the test says: one build per
// interval, concurrent readers share it, stale answers while a refresh runs, "not found" cached and
// bounded.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SnapshotCache } from "../../src/status/cache.js";
import { SingleFlight } from "../../src/shared/single-flight.js";

interface Snap {
  v: number;
}

/** A cache over builds the test resolves by hand. */
function harness(opts: { maxMissing?: number; maxBytes?: number } = {}) {
  let now = 0;
  const pending: { slug: string; resolve(s: Snap | undefined): void; reject(e: unknown): void }[] = [];
  const builds: string[] = [];
  const staleErrors: unknown[] = [];
  const cache = new SnapshotCache<Snap>({
    refreshMs: 1000,
    now: () => now,
    size: () => 100,
    build: (slug) => {
      builds.push(slug);
      return new Promise((resolve, reject) => pending.push({ slug, resolve, reject }));
    },
    onStaleError: (err) => staleErrors.push(err),
    ...opts,
  });
  const settle = async (s: Snap | undefined) => {
    const p = pending.shift();
    assert.ok(p, "a build is pending");
    p.resolve(s);
    await new Promise((r) => setImmediate(r));
  };
  return {
    cache,
    builds,
    pending,
    staleErrors,
    settle,
    advance: (ms: number) => (now += ms),
  };
}

describe("snapshot cache", () => {
  it("concurrent readers of a cold page share one build; later readers in the interval build nothing", async () => {
    const h = harness();
    const readers = Array.from({ length: 100 }, () => h.cache.get("acme"));
    assert.equal(h.builds.length, 1);
    await h.settle({ v: 1 });
    for (const s of await Promise.all(readers)) assert.deepEqual(s, { v: 1 });
    h.advance(999);
    assert.deepEqual(await h.cache.get("acme"), { v: 1 });
    assert.equal(h.builds.length, 1);
  });

  it("after the interval: the stale page at once while ONE refresh runs, then the new one", async () => {
    const h = harness();
    const first = h.cache.get("acme");
    await h.settle({ v: 1 });
    await first;
    h.advance(1000);
    const during = await Promise.all(Array.from({ length: 20 }, () => h.cache.get("acme")));
    assert.ok(
      during.every((s) => s?.v === 1),
      "stale answers while refreshing",
    );
    assert.equal(h.builds.length, 2);
    await h.settle({ v: 2 });
    assert.deepEqual(await h.cache.get("acme"), { v: 2 });
    assert.equal(h.builds.length, 2);
  });

  it("a failed refresh keeps the old page, is reported, and the next reader tries again", async () => {
    const h = harness();
    const first = h.cache.get("acme");
    await h.settle({ v: 1 });
    await first;
    h.advance(1000);
    assert.deepEqual(await h.cache.get("acme"), { v: 1 });
    h.pending.shift()!.reject(new Error("database down"));
    await new Promise((r) => setImmediate(r));
    assert.equal(h.staleErrors.length, 1);
    assert.deepEqual(await h.cache.get("acme"), { v: 1 });
    assert.equal(h.builds.length, 3, "retried by the next reader");
  });

  it("a cold page whose build fails fails its readers, and is not cached", async () => {
    const h = harness();
    const r = Promise.all([h.cache.get("acme"), h.cache.get("acme")]);
    h.pending.shift()!.reject(new Error("database down"));
    await assert.rejects(r, /database down/);
    const again = h.cache.get("acme");
    assert.equal(h.builds.length, 2);
    await h.settle({ v: 1 });
    assert.deepEqual(await again, { v: 1 });
  });

  it("unknown slugs are remembered as not found for the interval, and then looked up again", async () => {
    const h = harness();
    const r = Promise.all(Array.from({ length: 10 }, () => h.cache.get("nope")));
    await h.settle(undefined);
    assert.deepEqual(await r, Array(10).fill(undefined));
    assert.equal(await h.cache.get("nope"), undefined);
    assert.equal(h.builds.length, 1);
    h.advance(1000);
    const later = h.cache.get("nope");
    assert.equal(h.builds.length, 2, "not found is not kept for ever: a page may be published");
    await h.settle({ v: 7 });
    assert.deepEqual(await later, { v: 7 });
  });

  it("an unpublished page turns not found at its next refresh", async () => {
    const h = harness();
    const first = h.cache.get("acme");
    await h.settle({ v: 1 });
    await first;
    h.advance(1000);
    assert.deepEqual(await h.cache.get("acme"), { v: 1 }, "stale while the refresh runs");
    await h.settle(undefined);
    assert.equal(await h.cache.get("acme"), undefined);
  });

  it("bounds memory: not-found slugs by count, pages by bytes", async () => {
    const h = harness({ maxMissing: 50, maxBytes: 1000 });
    for (let k = 0; k < 200; k++) {
      const r = h.cache.get(`random-${k}`);
      await h.settle(undefined);
      await r;
    }
    assert.equal(h.cache.stats.missing, 50);
    for (let k = 0; k < 30; k++) {
      const r = h.cache.get(`page-${k}`);
      await h.settle({ v: k });
      await r;
    }
    assert.equal(h.cache.stats.pages, 10, "100 bytes each under 1000");
    assert.equal(h.cache.stats.building, 0);
  });
});

describe("single-flight", () => {
  it("one call per key in flight; a new one once it settled; keys apart", async () => {
    const sf = new SingleFlight<string, number>();
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const fn = async () => {
      calls++;
      await gate;
      return calls;
    };
    const a = [sf.run("k", fn), sf.run("k", fn), sf.run("k", fn)];
    const b = sf.run("other", fn);
    assert.equal(calls, 2);
    assert.equal(sf.size, 2);
    release();
    assert.deepEqual(await Promise.all(a), [2, 2, 2]);
    await b;
    assert.equal(sf.size, 0);
    assert.equal(await sf.run("k", fn), 3);
  });

  it("a failure reaches every waiter and is not kept", async () => {
    const sf = new SingleFlight<string, number>();
    const boom = () => Promise.reject(new Error("boom"));
    await assert.rejects(Promise.all([sf.run("k", boom), sf.run("k", boom)]), /boom/);
    assert.equal(await sf.run("k", async () => 1), 1);
  });
});
