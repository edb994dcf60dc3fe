import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { createClient } from "redis";
import { freePort } from "../../src/shared/net.js";
import { REDIS_COMMAND_TIMEOUT_MS, RedisCounterStore } from "../../src/shared/ratelimit.js";
import { startOwnRedis, type TestRedis } from "../helpers/redis.js";

// The Redis counter store (node-redis) on a real redis-server of its own, stopped and started
// again on the same port: atomic counts with expiry, the script reloaded after SCRIPT FLUSH,
// failing open without hanging while Redis is down, reconnecting when it is back, and starting
// before Redis does.

const WINDOW = 60_000;
const now = Date.UTC(2030, 0, 1, 12, 0, 15);

function capture() {
  const lines: { msg: string }[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: pino({ level: "warn" }, stream), lines };
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function timed<T>(p: Promise<T>): Promise<[T, number]> {
  const t = Date.now();
  const v = await p;
  return [v, Date.now() - t];
}

describe("Redis counter store (node-redis)", () => {
  let redis: TestRedis;
  let store: RedisCounterStore;
  const { log, lines } = capture();
  before(async () => {
    redis = await startOwnRedis();
    store = new RedisCounterStore(redis.url, log);
  });
  after(async () => {
    await store.close();
    await redis.stop();
  });

  it("counts atomically under concurrent hits, with the key expiring after two windows", async () => {
    const counts = await Promise.all(Array.from({ length: 50 }, () => store.add("events", "p1", 1, WINDOW, now)));
    assert.deepEqual(
      [...counts].sort((a, b) => a! - b!),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.equal(await store.add("events", "p1", 5, WINDOW, now), 55, "a cost counts as many hits");
    assert.equal(await store.add("events", "p1", -5, WINDOW, now), 50, "a refund gives them back");
    assert.equal(await store.add("events", "p1", 1, WINDOW, now + WINDOW), 1, "the next window starts again");
    const raw = createClient({ url: redis.url });
    await raw.connect();
    try {
      const key = `vigil:rl:events:p1:${Math.floor(now / WINDOW)}`;
      assert.equal(await raw.get(key), "50");
      const ttl = await raw.pTTL(key);
      assert.ok(ttl > WINDOW && ttl <= 2 * WINDOW, `expires in two windows (pttl ${ttl})`);
      // The script is cached by SHA; after SCRIPT FLUSH (or on a new server) it is sent again.
      await raw.scriptFlush();
      assert.equal(await store.add("events", "p1", 1, WINDOW, now), 51);
    } finally {
      await raw.close();
    }
  });

  it("fails open without hanging while Redis is down, and counts again once it is back", async () => {
    await redis.stop();
    const [down, ms] = await timed(store.add("events", "p2", 1, WINDOW, now));
    assert.equal(down, undefined, "no count: the limiter allows the request");
    assert.ok(ms < REDIS_COMMAND_TIMEOUT_MS + 1000, `answered in ${ms} ms`);
    assert.ok(
      lines.some((l) => l.msg === "rate limiter: Redis unavailable, allowing requests"),
      "the outage is logged",
    );
    const warnings = lines.length;
    for (let i = 0; i < 5; i++) await store.add("events", "p2", 1, WINDOW, now);
    assert.equal(lines.length, warnings, "not once per request");

    redis = await startOwnRedis(redis.port); // a fresh, empty server on the same address
    const first = await until("the reconnect", () => store.add("events", "p2", 1, WINDOW, now));
    assert.equal(first, 1);
    assert.equal(await store.add("events", "p2", 1, WINDOW, now), 2);
  });
});

describe("Redis counter store started before Redis", () => {
  it("allows requests until Redis is up, then counts; closes at once while Redis is down", async () => {
    const port = await freePort();
    const { log } = capture();
    const store = new RedisCounterStore(`redis://127.0.0.1:${port}`, log);
    let redis: TestRedis | undefined;
    try {
      const [v, ms] = await timed(store.add("events", "p3", 1, WINDOW, now));
      assert.equal(v, undefined);
      assert.ok(ms < REDIS_COMMAND_TIMEOUT_MS + 1000, `answered in ${ms} ms`);
      redis = await startOwnRedis(port);
      assert.equal(await until("the first connection", () => store.add("events", "p3", 1, WINDOW, now)), 1);
    } finally {
      await redis?.stop();
    }
    const [, closeMs] = await timed(store.close());
    assert.ok(closeMs < 2000, `close() with Redis gone took ${closeMs} ms`);
  });
});
