import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mergeContext, serverContext } from "../../src/events/context.js";
import { decodeCursor, encodeCursor } from "../../src/events/cursor.js";
import { partitionName, PartitionCache, weekStart } from "../../src/events/partitions.js";
import { MemoryCounterStore, RateLimiter, WINDOW_MS, type LimitRules, verdict } from "../../src/shared/ratelimit.js";
import { likePattern } from "../../src/events/store.js";
import { uuidv7, uuidv7Time } from "../../src/events/uuidv7.js";
import { checkEvent, MAX_EVENT_BYTES, REPARSE_GROWTH } from "../../src/events/validate.js";
import { aggregate } from "../../src/identity/projection.js";
import type { StoredEvent } from "../../src/events/pipeline.js";
import { jsonProblem } from "../../src/shared/json.js";

describe("uuidv7", () => {
  it("carries the timestamp and is well formed", () => {
    for (const ms of [0, 1, Date.UTC(2024, 0, 1), 2 ** 48 - 1]) {
      const id = uuidv7(ms);
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.equal(uuidv7Time(id), ms);
    }
    assert.equal(new Set(Array.from({ length: 10_000 }, () => uuidv7(5))).size, 10_000);
    assert.throws(() => uuidv7(-1));
    assert.equal(uuidv7Time("not-a-uuid"), undefined);
    assert.equal(uuidv7Time("00000000-0000-4000-8000-000000000000"), undefined);
  });
});

describe("partitions", () => {
  it("start on Monday 00:00 UTC", () => {
    assert.equal(new Date(weekStart(Date.UTC(2024, 4, 8, 13))).toISOString(), "2024-05-06T00:00:00.000Z"); // Wednesday
    assert.equal(new Date(weekStart(Date.UTC(2024, 4, 6))).toISOString(), "2024-05-06T00:00:00.000Z"); // Monday
    assert.equal(new Date(weekStart(Date.UTC(2024, 4, 5, 23, 59))).toISOString(), "2024-04-29T00:00:00.000Z"); // Sunday
    assert.equal(partitionName(Date.UTC(2024, 4, 6)), "events_p20240506");
    const c = new PartitionCache();
    assert.deepEqual(c.missing([Date.UTC(2024, 4, 7), Date.UTC(2024, 4, 8)]), [Date.UTC(2024, 4, 6)]);
    c.remember([Date.UTC(2024, 4, 6)]);
    assert.deepEqual(c.missing([Date.UTC(2024, 4, 7)]), []);
  });
});

describe("cursor", () => {
  it("round-trips and refuses what it did not make", () => {
    const id = uuidv7(Date.UTC(2024, 0, 1));
    assert.deepEqual(decodeCursor(encodeCursor(id)), { ts: new Date(Date.UTC(2024, 0, 1)), id });
    assert.equal(decodeCursor("garbage!"), undefined);
    assert.equal(decodeCursor(Buffer.from("ev1:nope").toString("base64url")), undefined);
    assert.equal(decodeCursor(Buffer.from(id).toString("base64url")), undefined);
  });
});

describe("rate limit verdict", () => {
  it("allows up to max and says when the window ends", () => {
    const t0 = Date.UTC(2024, 0, 1, 0, 0, 15, 200);
    assert.deepEqual(verdict(10, 10, t0), { allowed: true, retryAfterSeconds: 45, count: 10 });
    assert.equal(verdict(11, 10, t0).allowed, false);
    assert.equal(verdict(11, 10, Date.UTC(2024, 0, 1, 0, 0, 59, 999)).retryAfterSeconds, 1);
  });
  it("memory limiter counts per project and window", async () => {
    const rule = { max: 2, windowMs: WINDOW_MS };
    const rules = Object.fromEntries(["events", "batches"].map((n) => [n, rule])) as LimitRules;
    const now = new Date(Date.UTC(2024, 0, 1, 0, 0, 1));
    const l = new RateLimiter(new MemoryCounterStore(), rules, () => now);
    assert.equal((await l.hit("events", "p1")).allowed, true);
    assert.equal((await l.hit("events", "p1")).allowed, true);
    assert.equal((await l.hit("events", "p1")).allowed, false);
    assert.equal((await l.hit("events", "p2")).allowed, true);
    assert.equal((await l.hit("batches", "p1")).allowed, true);
    assert.equal((await l.hit("events", "p1", 1, new Date(now.getTime() + 60_000))).allowed, true);
  });
  it("a refund gives back a hit of the same window; longer windows end on their own boundary", async () => {
    const rules = { loginAccount: { max: 1, windowMs: 900_000 } } as LimitRules;
    const at = new Date(Date.UTC(2024, 0, 1, 0, 5, 0));
    const l = new RateLimiter(new MemoryCounterStore(), rules, () => at);
    assert.equal((await l.hit("loginAccount", "a")).allowed, true);
    await l.refund("loginAccount", "a", at);
    assert.equal((await l.hit("loginAccount", "a")).allowed, true);
    const refused = await l.hit("loginAccount", "a");
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterSeconds, 600);
  });
});

describe("checkEvent", () => {
  const now = new Date(Date.UTC(2024, 5, 1));
  it("builds the event with defaults", () => {
    const r = checkEvent({ type: "a", userId: "", data: null }, now, "secret");
    assert.ok(r.ok);
    assert.deepEqual(r.event, {
      type: "a",
      timestamp: now,
      userId: null,
      groupId: null,
      source: null,
      data: {},
      context: {},
      tags: {},
    });
  });
  it("does not mistake a data key for a refusal", () => {
    const r = checkEvent({ type: "a", data: { ok: false, error: "x" } }, now, "secret");
    assert.ok(r.ok);
    assert.deepEqual(r.event.data, { ok: false, error: "x" });
  });
  it("refuses deep nesting and bad text", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    assert.equal(checkEvent({ type: "a", data: { deep } }, now, "secret").ok, false);
    assert.ok(jsonProblem({ "k\u0000": 1 }));
    assert.equal(jsonProblem({ emoji: "😀", text: "héllo" }), undefined);
  });
});

describe("context", () => {
  it("merges server facts; the client's own userAgent and ip win, receivedAt is the server's", () => {
    const s = serverContext(
      new Headers({ "user-agent": "ua/1" }),
      { ip: "::ffff:10.0.0.1", requestId: "r" },
      new Date(0),
    );
    assert.deepEqual(s, { receivedAt: "1970-01-01T00:00:00.000Z", userAgent: "ua/1", ip: "10.0.0.1" });
    assert.deepEqual(mergeContext({ ip: "1.2.3.4", receivedAt: "forged", locale: "de" }, s), {
      userAgent: "ua/1",
      ip: "1.2.3.4",
      locale: "de",
      receivedAt: "1970-01-01T00:00:00.000Z",
    });
  });
});

describe("search pattern", () => {
  it("escapes LIKE wildcards", () => {
    assert.equal(likePattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
  });
});

describe("identity aggregation", () => {
  const ev = (type: string, userId: string | null, ms: number, data = {}): StoredEvent => ({
    id: "x",
    projectId: "p",
    type,
    timestamp: new Date(ms),
    userId,
    groupId: null,
    sourceId: null,
    data,
    context: {},
    tags: {},
    createdAt: new Date(0),
  });
  it("aggregates per key, sorted, merging $identify data in ingestion order", () => {
    const rows = aggregate(
      [ev("a", "z", 5), ev("$identify", "b", 9, { x: 1, y: 1 }), ev("a", null, 1), ev("$identify", "b", 3, { y: 2 })],
      (e) => e.userId,
      "$identify",
    );
    assert.deepEqual(
      rows.map((r) => [r.key, r.count, r.first, r.last]),
      [
        ["b", 2, 3, 9],
        ["z", 1, 5, 5],
      ],
    );
    assert.deepEqual(rows[0].properties, { x: 1, y: 2 });
  });
});

describe("REPARSE_GROWTH (the size bound that lets a small batch skip measuring each item)", () => {
  it("bounds JSON.stringify(JSON.parse(text)) by 5.25x the text's bytes, worst cases included", () => {
    const worst = [
      "1e20",
      "[1e20,9e20,-1e20]",
      "0.1e21",
      '"\\u00e9"',
      '"\\ud800"',
      '"\\u0001\\n"',
      '{"a":1,"a":1e20}',
      "1e-7",
      "5e-324",
    ];
    const ratio = (text: string) => Buffer.byteLength(JSON.stringify(JSON.parse(text))) / Buffer.byteLength(text);
    assert.equal(Math.max(...worst.map(ratio)), 21 / 4);
    // Invalid UTF-8 (one byte) decodes to U+FFFD (three bytes).
    assert.equal(Buffer.byteLength(JSON.stringify(JSON.parse(Buffer.from([0x22, 0xff, 0x22]).toString("utf8")))), 5);
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const atoms = [
      "1e20",
      "12",
      "-0",
      "1.50",
      "true",
      "null",
      '"x"',
      '"\\u00e9\\/"',
      '"é😀"',
      "9e20",
      "1E+20",
      "0.000001",
    ];
    const value = (d: number): string =>
      d > 3 || rnd(3) === 0
        ? atoms[rnd(atoms.length)]
        : rnd(2)
          ? `[ ${Array.from({ length: rnd(4) }, () => value(d + 1)).join(" , ")} ]`
          : `{ ${Array.from({ length: rnd(4) }, (_, i) => `"k${i % 2}" : ${value(d + 1)}`).join(", ")} }`;
    for (let i = 0; i < 2000; i++) {
      const text = value(0);
      assert.ok(ratio(text) <= 5.25, text);
    }
    assert.ok(REPARSE_GROWTH >= 5.25);
  });

  it("with a bound under the limit skips the measurement; with none or a larger one it measures", () => {
    const big = { type: "big", data: { blob: "x".repeat(MAX_EVENT_BYTES) } };
    const now = new Date();
    assert.equal(checkEvent(big, now, "secret").ok, false);
    assert.equal(checkEvent(big, now, "secret", MAX_EVENT_BYTES + 1).ok, false);
    assert.equal(checkEvent({ type: "small" }, now, "secret", 100).ok, true);
  });
});
