import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Vigil } from "../../sdk/src/index.js";
import { accept, useFakeServer } from "./fake-server.js";

// Batching by count, bytes and interval, one request in flight per stream with order kept, and the
// shape of what is sent (a client UUID per item, fixed at the call), against a real local HTTP server.

const { f, client } = useFakeServer();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("batching", () => {
  it("by count: a batch leaves as soon as flushAt items wait, without waiting for the interval", async () => {
    const { vigil } = client({ flushAt: 10, flushIntervalMs: 60_000 });
    for (let i = 0; i < 25; i++) vigil.track("e", { i });
    await f.until(() => f.seen.length === 2, 2000, "two full batches");
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(
      f.seen.map((s) => s.body.events.length),
      [10, 10],
      "the 5 left wait for the interval or a flush",
    );
    await vigil.flush();
    assert.deepEqual(
      f.seen.map((s) => s.body.events.length),
      [10, 10, 5],
    );
    assert.deepEqual(
      f.events().map((e) => e.data.i),
      [...Array(25).keys()],
      "order kept",
    );
    await vigil.shutdown();
  });

  it("by bytes: no request body exceeds flushBytes (plus the envelope), and a full byte budget sends at once", async () => {
    const { vigil } = client({ flushAt: 1000, flushBytes: 2000, flushIntervalMs: 60_000 });
    const pad = "é".repeat(100); // 200 UTF-8 bytes: bytes, not characters, are counted
    for (let i = 0; i < 30; i++) vigil.track("e", { i, pad });
    await f.until(() => f.seen.length >= 2, 2000, "batches cut by bytes");
    await vigil.flush();
    for (const s of f.seen) {
      assert.ok(
        Buffer.byteLength(s.raw) <= 2000 + '{"events":[]}'.length + s.body.events.length,
        `${Buffer.byteLength(s.raw)} bytes`,
      );
      assert.ok(s.body.events.length >= 2);
    }
    assert.equal(f.events().length, 30);
    assert.ok(f.seen.length >= 30 / 7, `${f.seen.length} requests`);
    await vigil.shutdown();
  });

  it("by interval: a lone event leaves after flushIntervalMs, not before", async () => {
    const { vigil } = client({ flushIntervalMs: 150 });
    const t0 = Date.now();
    vigil.track("e");
    await new Promise((r) => setTimeout(r, 80));
    assert.equal(f.seen.length, 0);
    await f.until(() => f.seen.length === 1, 2000, "the interval's batch");
    const waited = f.seen[0].at - t0;
    assert.ok(waited >= 140 && waited < 1000, `sent after ${waited} ms`);
    await vigil.shutdown();
  });

  it("one request in flight per stream: a slow server never sees two at once, and order is kept", async () => {
    f.answer = (req) => ({ ...(accept(req) as object), delayMs: 30 }) as ReturnType<typeof accept>;
    const { vigil } = client({ flushAt: 5, flushIntervalMs: 5 });
    for (let i = 0; i < 60; i++) {
      vigil.track("e", { i });
      if (i % 7 === 0) await new Promise((r) => setTimeout(r, 3));
    }
    await vigil.flush();
    assert.ok(f.seen.length >= 12);
    assert.equal(Math.max(...f.seen.map((s) => s.concurrent)), 1);
    assert.deepEqual(
      f.events().map((e) => e.data.i),
      [...Array(60).keys()],
    );
    await vigil.shutdown();
  });

  it("every event, metric point and heartbeat carries its own UUID id, fixed at the call; the key is a Bearer header", async () => {
    const { vigil } = client({ flushIntervalMs: 5 });
    const ids = [vigil.track("a"), vigil.page(), vigil.identify("u"), vigil.group("g"), vigil.captureError("x")];
    const mids = [vigil.measure("m", 1), vigil.increment("c"), vigil.decrement("c", 2)];
    await vigil.flush();
    await vigil.heartbeat("job");
    const events = f.events();
    assert.deepEqual(
      events.map((e) => e.id),
      ids,
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ["a", "$page", "$identify", "$group", "$error"],
    );
    const metrics = f.seen.find((s) => s.path === "/v1/projects/self/metrics/batch")!.body.metrics;
    assert.deepEqual(
      metrics.map((m: any) => m.id),
      mids,
    );
    assert.deepEqual(
      metrics.map((m: any) => [m.type, m.name, m.value]),
      [
        ["measurement", "m", 1],
        ["increment", "c", 1],
        ["decrement", "c", 2],
      ],
    );
    const hb = f.seen.find((s) => s.path === "/v1/projects/self/heartbeats/job")!;
    for (const id of [...ids, ...mids, hb.body.id]) assert.match(id, UUID);
    assert.equal(new Set([...ids, ...mids, hb.body.id]).size, 9);
    for (const s of f.seen) {
      assert.equal(s.headers.authorization, "Bearer vk_test");
      assert.equal(s.headers["content-type"], "application/json");
    }
    for (const e of events) assert.ok(!Number.isNaN(Date.parse(e.timestamp)) && e.timestamp.endsWith("Z"));
    await vigil.shutdown();
  });

  it("apiUrl falls back to API_URL; the options are checked", async () => {
    const saved = process.env.API_URL;
    process.env.API_URL = f.url + "/";
    try {
      const vigil = new Vigil({ apiKey: "vk_test", flushIntervalMs: 5 });
      vigil.track("from-env");
      await vigil.shutdown();
      assert.equal(f.events().at(-1)?.type, "from-env");
      delete process.env.API_URL;
      assert.throws(() => new Vigil({ apiKey: "vk_test" }), /apiUrl is required/);
      assert.throws(() => new Vigil({ apiKey: "", apiUrl: f.url }), /apiKey is required/);
      assert.throws(() => new Vigil({ apiKey: "k", apiUrl: f.url, flushAt: 0 }), /flushAt/);
    } finally {
      if (saved === undefined) delete process.env.API_URL;
      else process.env.API_URL = saved;
    }
  });

  it("flushAt is capped at the server's limits: 1000 events, 500 metric points per request", async () => {
    const { vigil } = client({ flushAt: 5000, flushIntervalMs: 60_000 });
    for (let i = 0; i < 2100; i++) vigil.track("e");
    for (let i = 0; i < 1100; i++) vigil.increment("c");
    await vigil.flush();
    const sizes = (path: string, field: string) =>
      f.seen.filter((s) => s.path === path).map((s) => s.body[field].length);
    assert.deepEqual(sizes("/v1/events/batch", "events"), [1000, 1000, 100]);
    assert.deepEqual(sizes("/v1/projects/self/metrics/batch", "metrics"), [500, 500, 100]);
    await vigil.shutdown();
  });

  it("gzip: bodies over 16 KiB go gzipped (Content-Encoding), smaller ones plain; off by default on Node", async () => {
    const { vigil } = client({ gzip: true, flushAt: 1000, flushIntervalMs: 60_000 });
    for (let i = 0; i < 300; i++) vigil.track("big", { i, text: "lorem ipsum ".repeat(10) });
    await vigil.flush();
    vigil.track("small");
    await vigil.flush();
    const [big, small] = f.seen;
    assert.equal(big.headers["content-encoding"], "gzip");
    assert.equal(big.body.events.length, 300, "the decompressed body is the batch");
    assert.ok(big.wireBytes < Buffer.byteLength(big.raw) / 5, `${big.wireBytes} bytes on the wire`);
    assert.equal(small.headers["content-encoding"], undefined);
    await vigil.shutdown();
    f.seen.length = 0;
    const plain = client({ flushAt: 1000, flushIntervalMs: 60_000 }).vigil;
    for (let i = 0; i < 300; i++) plain.track("big", { i, text: "lorem ipsum ".repeat(10) });
    await plain.shutdown();
    assert.equal(f.seen[0].headers["content-encoding"], undefined);
  });

  it("gzip refused with 415 (an older server): the same batch is sent plain at once, and plain from then on", async () => {
    f.answer = (req) =>
      req.headers["content-encoding"]
        ? { status: 415, body: { error: { code: "unsupported", message: "no" } } }
        : accept(req);
    const { vigil, errors } = client({ gzip: true, flushAt: 1000, flushIntervalMs: 60_000 });
    for (let i = 0; i < 300; i++) vigil.track("big", { i, text: "lorem ipsum ".repeat(10) });
    await vigil.flush();
    for (let i = 0; i < 300; i++) vigil.track("big", { i, text: "lorem ipsum ".repeat(10) });
    await vigil.flush();
    assert.deepEqual(
      f.seen.map((s) => s.headers["content-encoding"] ?? "plain"),
      ["gzip", "plain", "plain"],
    );
    assert.deepEqual(errors, []);
    assert.equal(vigil.stats.sent, 600);
    await vigil.shutdown();
  });

  it("a publishable key cannot record metric points: refused at the call, nothing sent", async () => {
    const { vigil, errors } = client({ apiKey: "vk_pub_abc", flushIntervalMs: 5 });
    vigil.increment("c");
    await vigil.flush();
    assert.equal(f.seen.length, 0);
    assert.equal(errors[0]?.code, "invalid");
    assert.match(errors[0].message, /secret key/);
    assert.equal(vigil.stats.rejected, 1);
    await vigil.shutdown();
  });

  it("a value that is not JSON (a cycle, a BigInt) is refused at the call and does not block the others", async () => {
    const { vigil, errors } = client({ flushIntervalMs: 5 });
    const cyclic: any = {};
    cyclic.self = cyclic;
    vigil.track("bad", cyclic);
    vigil.track("bad", { n: 10n as unknown as number });
    vigil.track("good");
    await vigil.flush();
    assert.deepEqual(
      f.events().map((e) => e.type),
      ["good"],
    );
    assert.deepEqual(
      errors.map((e) => e.code),
      ["invalid", "invalid"],
    );
    await vigil.shutdown();
  });
});
