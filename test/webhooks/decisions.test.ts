import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { addressRange, isPublicAddress } from "../../src/webhooks/targets/address.js";
import {
  DISCORD_LIMITS,
  discordMessage,
  embedChars,
  fitDiscordLimits,
  truncate,
} from "../../src/webhooks/targets/discord.js";
import { backoffMs, nextAttempt } from "../../src/webhooks/retry.js";
import { retryAfterMs } from "../../src/webhooks/sender.js";
import {
  computeSignature,
  newWebhookSecret,
  signatureHeader,
  verifyWebhookSignature,
} from "../../src/webhooks/signature.js";

// The pure decisions, tested directly: the retry schedule both runners share, signatures,
// Discord limits, address classification.

describe("nextAttempt (shared by the embedded scheduler and the Temporal workflow)", () => {
  const policy = { baseMs: 10_000 };
  it("succeeds on ok, whatever the count", () => {
    assert.deepEqual(nextAttempt({ ok: true }, 8, 8, policy, 0.5), { status: "succeeded" });
  });
  it("waits about base × 4^(n-1) for the n-th retry, ±20% jitter", () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => backoffMs(n, 10_000)),
      [10_000, 40_000, 160_000, 640_000],
    );
    for (const [attempts, base] of [
      [1, 10_000],
      [2, 40_000],
      [3, 160_000],
      [7, 10_000 * 4 ** 6],
    ] as const) {
      assert.deepEqual(nextAttempt({ ok: false }, attempts, 8, policy, 0.5), { status: "retrying", delayMs: base });
      const lo = nextAttempt({ ok: false }, attempts, 8, policy, 0) as { delayMs: number };
      const hi = nextAttempt({ ok: false }, attempts, 8, policy, 0.999999) as { delayMs: number };
      assert.equal(lo.delayMs, base * 0.8);
      assert.ok(hi.delayMs > base * 1.19 && hi.delayMs <= base * 1.2);
    }
  });
  it("abandons after the configured attempts", () => {
    assert.deepEqual(nextAttempt({ ok: false }, 8, 8, policy, 0.5), { status: "abandoned" });
    assert.deepEqual(nextAttempt({ ok: false }, 3, 3, policy, 0.5), { status: "abandoned" });
    assert.equal(nextAttempt({ ok: false }, 2, 3, policy, 0.5).status, "retrying");
    // a manual retry raised the limit by one: the extra attempt fails → abandoned again
    assert.deepEqual(nextAttempt({ ok: false }, 9, 9, policy, 0.1), { status: "abandoned" });
  });
  it("honours a receiver's retry_after instead of the backoff (never earlier)", () => {
    const n = nextAttempt({ ok: false, retryAfterMs: 1500 }, 1, 8, policy, 0) as { delayMs: number };
    assert.equal(n.delayMs, 1500);
    const m = nextAttempt({ ok: false, retryAfterMs: 1500 }, 1, 8, policy, 0.99) as { delayMs: number };
    assert.ok(m.delayMs >= 1500 && m.delayMs <= 1800);
    assert.equal(
      (nextAttempt({ ok: false, retryAfterMs: 10 * 3_600_000 }, 1, 8, policy, 0) as { delayMs: number }).delayMs,
      3_600_000,
    );
    assert.deepEqual(nextAttempt({ ok: false, retryAfterMs: 1500 }, 8, 8, policy, 0), { status: "abandoned" });
  });
  it("reads Discord's retry_after (seconds) and Retry-After headers", () => {
    const now = new Date("2026-01-01T00:00:00Z");
    assert.equal(
      retryAfterMs(
        429,
        {},
        JSON.stringify({ message: "You are being rate limited.", retry_after: 0.35, global: false }),
        now,
      ),
      350,
    );
    assert.equal(retryAfterMs(429, { "retry-after": "2" }, "", now), 2000);
    assert.equal(retryAfterMs(503, { "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }, "", now), 5000);
    assert.equal(retryAfterMs(500, { "retry-after": "2" }, "", now), undefined);
  });
});

describe("signatures", () => {
  const secret = newWebhookSecret();
  const body = JSON.stringify({ id: "whd_1", type: "signup", data: { a: "é" } });
  it("whsec_ secrets, t=..,v1=hex HMAC-SHA256 of '<t>.<raw body>'", () => {
    assert.match(secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    const h = signatureHeader(secret, body, 1_700_000_000);
    assert.equal(h, `t=1700000000,v1=${computeSignature(secret, 1_700_000_000, body)}`);
    assert.match(h, /^t=\d+,v1=[0-9a-f]{64}$/);
  });
  it("verifies; refuses another secret, a changed body, a stale t, garbage", () => {
    const h = signatureHeader(secret, body, 1_700_000_000);
    assert.deepEqual(verifyWebhookSignature(body, h, secret, { nowSeconds: 1_700_000_100 }), {
      ok: true,
      timestamp: 1_700_000_000,
    });
    assert.deepEqual(verifyWebhookSignature(body, h, newWebhookSecret(), { nowSeconds: 1_700_000_100 }), {
      ok: false,
      reason: "mismatch",
    });
    assert.deepEqual(verifyWebhookSignature(body + " ", h, secret, { nowSeconds: 1_700_000_100 }), {
      ok: false,
      reason: "mismatch",
    });
    assert.deepEqual(verifyWebhookSignature(body, h, secret, { nowSeconds: 1_700_000_301 }), {
      ok: false,
      reason: "too_old",
    });
    for (const bad of [undefined, "", "t=abc,v1=00", "v1=" + "0".repeat(64), "t=1700000000"])
      assert.equal(verifyWebhookSignature(body, bad, secret, { nowSeconds: 1_700_000_000 }).ok, false);
  });
});

describe("Discord limits", () => {
  it("keeps every limit on a huge event", () => {
    const data: Record<string, unknown> = {};
    for (let i = 0; i < 60; i++) data[`${"k".repeat(300)}${i}`] = "v".repeat(3000);
    const m = discordMessage({
      id: "whd_1",
      type: "t".repeat(400),
      createdAt: "2026-01-01T00:00:00.000Z",
      projectId: "prj_1",
      data: { id: "e", type: "x", userId: "u".repeat(2000), data },
    });
    assert.ok(m.content.length <= DISCORD_LIMITS.content);
    assert.ok(m.embeds.length >= 1 && m.embeds.length <= DISCORD_LIMITS.embeds);
    let total = 0;
    for (const e of m.embeds) {
      assert.ok(
        (e.title ?? "").length <= 256 &&
          (e.description ?? "").length <= 4096 &&
          (e.footer?.text ?? "").length <= 2048 &&
          (e.author?.name ?? "").length <= 256,
      );
      assert.ok((e.fields ?? []).length <= 25);
      for (const f of e.fields ?? [])
        assert.ok(f.name.length <= 256 && f.value.length <= 1024 && f.name.length > 0 && f.value.length > 0);
      total += embedChars(e);
    }
    assert.ok(total <= DISCORD_LIMITS.total, `total ${total}`);
  });
  it("caps embeds at 10 and the 6000 total across embeds", () => {
    const embeds = Array.from({ length: 14 }, (_, i) => ({
      title: `e${i}`,
      description: "d".repeat(4000),
      fields: [{ name: "n", value: "v".repeat(1000) }],
    }));
    const m = fitDiscordLimits({ content: "x".repeat(5000), embeds });
    assert.equal(m.content.length, 2000);
    assert.ok(m.embeds.length <= 10);
    assert.ok(m.embeds.reduce((n, e) => n + embedChars(e), 0) <= 6000);
    assert.equal(m.embeds[0].title, "e0");
  });
  it("renders incidents with a monitor name and does not split surrogate pairs", () => {
    const m = discordMessage({
      id: "whd_2",
      type: "incident.started",
      createdAt: "2026-01-01T00:00:00.000Z",
      projectId: "prj_1",
      data: { incident: { id: "inc_1", status: "open" }, monitor: { name: "API" } },
    });
    assert.match(m.embeds[0].title!, /Down: API/);
    assert.equal(truncate("ab😀", 3), "ab…");
  });
});

describe("address classification", () => {
  it("allows only public unicast, IPv4 and IPv6, incl. IPv4-mapped", () => {
    for (const a of ["8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8"]) assert.equal(isPublicAddress(a), true, a);
    for (const a of [
      "127.0.0.1",
      "10.0.0.1",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "224.0.0.1",
      "0.0.0.0",
      "255.255.255.255",
      "::1",
      "::",
      "fe80::1",
      "fc00::1",
      "fd12::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "64:ff9b::a00:1",
      "not-an-ip",
    ]) {
      assert.equal(isPublicAddress(a), false, `${a} (${addressRange(a)})`);
    }
  });
});
