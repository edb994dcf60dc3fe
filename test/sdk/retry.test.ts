import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoffDelay, parseRetryAfter, VigilError } from "../../sdk/src/index.js";
import { accept, FakeServer, type Fault, useFakeServer } from "./fake-server.js";

// Retries against a real local HTTP server injecting faults: 500/502/503, 429 with Retry-After
// (seconds and HTTP date), connections reset before an answer, a server that never answers. Never
// a retry on another 4xx. The retried request is the same bytes (same ids), so the server dedupes.

const { f, client } = useFakeServer({ flushIntervalMs: 5, retry: { baseMs: 20, maxMs: 200 } });

/** Fails the first `n` requests with `fault`, then accepts. */
function failFirst(n: number, fault: Fault) {
  return (req: Parameters<typeof accept>[0], i: number) => (i <= n ? fault : accept(req));
}

describe("backoff (pure)", () => {
  it("full jitter: uniform in [0, min(maxMs, baseMs·2^(n-1))]", () => {
    assert.equal(
      backoffDelay(1, 200, 30_000, () => 0),
      0,
    );
    assert.equal(
      backoffDelay(1, 200, 30_000, () => 0.999999),
      199,
    );
    assert.equal(
      backoffDelay(4, 200, 30_000, () => 0.5),
      800,
    );
    assert.equal(
      backoffDelay(30, 200, 30_000, () => 0.5),
      15_000,
      "capped by maxMs",
    );
    assert.equal(
      backoffDelay(5000, 200, 30_000, () => 0.999999),
      29_999,
      "no overflow for huge attempts",
    );
    const samples = Array.from({ length: 2000 }, () => backoffDelay(3, 100, 10_000));
    assert.ok(Math.min(...samples) < 40 && Math.max(...samples) > 360 && Math.max(...samples) < 400);
  });

  it("Retry-After: seconds, fractions, HTTP dates; garbage ignored; capped at one hour", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(parseRetryAfter("3", now), 3000);
    assert.equal(parseRetryAfter(" 1.5 ", now), 1500);
    assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:07 GMT", now), 7000);
    assert.equal(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now), 0, "a past date: now");
    assert.equal(parseRetryAfter("soon", now), undefined);
    assert.equal(parseRetryAfter("-5", now), undefined);
    assert.equal(parseRetryAfter(null, now), undefined);
    assert.equal(parseRetryAfter("999999999", now), 3_600_000);
  });
});

describe("retries against a faulty server", () => {
  for (const status of [500, 502, 503]) {
    it(`${status} is retried with the same body (same ids) until accepted`, async () => {
      f.answer = failFirst(3, { status, body: { error: { code: "internal", message: "x" } } });
      const { vigil, errors } = client();
      vigil.track("a", { n: 1 });
      vigil.track("b", { n: 2 });
      await vigil.flush();
      assert.equal(f.seen.length, 4);
      assert.equal(new Set(f.seen.map((s) => s.raw)).size, 1, "every attempt sends the same bytes");
      assert.deepEqual(errors, []);
      assert.deepEqual(vigil.stats, { queued: 0, sent: 2, dropped: 0, rejected: 0, retries: 3 });
      await vigil.shutdown();
    });
  }

  it("waits grow exponentially with jitter and stay under the ceiling", async () => {
    f.answer = failFirst(6, { status: 500 });
    const { vigil } = client({ retry: { baseMs: 40, maxMs: 10_000 } });
    vigil.track("a");
    await vigil.flush();
    const gaps = f.seen.slice(1).map((s, i) => s.at - f.seen[i].at);
    assert.equal(gaps.length, 6);
    gaps.forEach((g, i) => assert.ok(g <= 40 * 2 ** i + 60, `gap ${i + 1}: ${g} ms > ceiling ${40 * 2 ** i}`));
    const total = gaps.reduce((a, b) => a + b, 0);
    // Six waits with ceilings 40..1280 (sum 2520): full jitter averages half; all-zero or all-max is a bug.
    assert.ok(total > 100 && total < 2520 + 400, `total ${total} ms`);
    await vigil.shutdown();
  });

  it("429 with Retry-After in seconds is honoured (not retried sooner)", async () => {
    f.answer = failFirst(1, {
      status: 429,
      headers: { "retry-after": "1" },
      body: { error: { code: "rate_limited", message: "slow down" } },
    });
    const { vigil, errors } = client();
    vigil.track("a");
    await vigil.flush();
    assert.equal(f.seen.length, 2);
    const gap = f.seen[1].at - f.seen[0].at;
    assert.ok(gap >= 990 && gap < 1500, `retried after ${gap} ms`);
    assert.deepEqual(errors, []);
    assert.equal(vigil.stats.retries, 1);
    await vigil.shutdown();
  });

  it("429 with Retry-After as an HTTP date is honoured", async () => {
    let until = 0;
    f.answer = (req, i) => {
      if (i > 1) return accept(req);
      until = Math.ceil((Date.now() + 1500) / 1000) * 1000; // HTTP dates have whole seconds
      return { status: 429, headers: { "retry-after": new Date(until).toUTCString() } };
    };
    const { vigil } = client();
    vigil.track("a");
    await vigil.flush();
    assert.equal(f.seen.length, 2);
    assert.ok(f.seen[1].at >= until - 10, `retried ${until - f.seen[1].at} ms before the date`);
    await vigil.shutdown();
  });

  it("a connection reset before any answer is retried", async () => {
    f.answer = failFirst(2, "reset");
    const { vigil, errors } = client();
    vigil.track("a");
    await vigil.flush();
    assert.equal(f.seen.length, 3);
    assert.deepEqual(errors, []);
    assert.equal(vigil.stats.sent, 1);
    await vigil.shutdown();
  });

  it("a server that never answers is given requestTimeoutMs, then retried", async () => {
    f.answer = failFirst(1, "hang");
    const { vigil } = client({ requestTimeoutMs: 200 });
    vigil.track("a");
    await vigil.flush();
    assert.equal(f.seen.length, 2);
    const gap = f.seen[1].at - f.seen[0].at;
    assert.ok(gap >= 190 && gap < 1000, `retried after ${gap} ms`);
    await vigil.shutdown();
  });

  it("a refused connection (nothing listening) is retried until the server is back", async () => {
    const down = await FakeServer.start();
    const url = down.url;
    await down.close();
    const { vigil, errors } = client({ apiUrl: url, shutdownTimeoutMs: 300 });
    const id = vigil.track("a");
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(vigil.stats.retries >= 2, `${vigil.stats.retries} retries`);
    assert.equal(vigil.stats.queued, 1);
    assert.equal(vigil.stats.rejected, 0);
    assert.equal(errors.length, 0);
    const t0 = Date.now();
    await vigil.shutdown(); // still down: gives up after shutdownTimeoutMs, reporting the items
    assert.ok(Date.now() - t0 < 1000, `shutdown took ${Date.now() - t0} ms`);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, "gave_up");
    assert.deepEqual(errors[0].ids, [id]);
    assert.deepEqual(vigil.stats, { queued: 0, sent: 0, dropped: 0, rejected: 1, retries: vigil.stats.retries });
  });

  for (const status of [400, 401, 403, 404, 409, 413, 415, 422]) {
    it(`${status} is never retried: the batch is refused, reported, and the next batch goes on`, async () => {
      f.answer = failFirst(1, { status, body: { error: { code: "some_code", message: "nope" } } });
      const { vigil, errors } = client({ flushAt: 2 });
      const ids = [vigil.track("a"), vigil.track("b")];
      vigil.track("c");
      await vigil.flush();
      assert.equal(f.seen.length, 2, "one attempt for the refused batch, one for the next");
      assert.equal(errors.length, 1);
      assert.equal(errors[0].code, "rejected");
      assert.equal(errors[0].status, status);
      assert.equal(errors[0].serverCode, "some_code");
      assert.deepEqual(errors[0].ids, ids);
      assert.deepEqual(vigil.stats, { queued: 0, sent: 1, dropped: 0, rejected: 2, retries: 0 });
      await vigil.shutdown();
    });
  }

  it("per-item errors of a 202: those items are rejected, the rest counted as sent, nothing retried", async () => {
    f.answer = (req) => {
      const events = req.body.events;
      return {
        status: 202,
        body: {
          data: {
            events: events.filter((_: unknown, i: number) => i !== 1).map((e: any) => ({ id: "x", type: e.type })),
            errors: [{ index: 1, code: "validation_failed", message: "type: required" }],
          },
        },
      };
    };
    const { vigil, errors } = client();
    const ids = [vigil.track("a"), vigil.track(""), vigil.track("c")];
    await vigil.flush();
    assert.equal(f.seen.length, 1);
    assert.equal(errors.length, 1);
    assert.deepEqual(errors[0].ids, [ids[1]]);
    assert.equal(errors[0].serverCode, "validation_failed");
    assert.deepEqual(vigil.stats, { queued: 0, sent: 2, dropped: 0, rejected: 1, retries: 0 });
    await vigil.shutdown();
  });

  it("retry.maxAttempts: after that many attempts the batch is given up and reported", async () => {
    f.answer = () => ({ status: 503 });
    const { vigil, errors } = client({ retry: { baseMs: 5, maxMs: 10, maxAttempts: 3 } });
    const id = vigil.track("a");
    await vigil.flush();
    assert.equal(f.seen.length, 3);
    assert.equal(errors[0]?.code, "gave_up");
    assert.deepEqual(errors[0].ids, [id]);
    assert.equal(vigil.stats.rejected, 1);
    await vigil.shutdown();
  });

  it("heartbeat: retried with the same id on 5xx and resets, at most 10 attempts, then rejects", async () => {
    f.answer = failFirst(2, { status: 500 });
    const { vigil } = client();
    const r = await vigil.heartbeat("job", { latencyMs: 3 });
    assert.equal(r.accepted, true);
    assert.equal(f.seen.length, 3);
    assert.equal(new Set(f.seen.map((s) => s.body.id)).size, 1);
    f.seen.length = 0;
    f.answer = () => "reset";
    await assert.rejects(vigil.heartbeat("job"), (e: unknown) => e instanceof VigilError && e.code === "gave_up");
    assert.equal(f.seen.length, 10);
    await vigil.shutdown();
  });
});
