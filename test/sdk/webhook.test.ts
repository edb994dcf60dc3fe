import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { describe, it } from "node:test";
import { verifyWebhook, Vigil, WebhookVerificationError } from "../../sdk/src/index.js";
import { useProject } from "../helpers/use.js";
import { useReceiver, waitFor } from "../webhooks/receiver.js";

// verifyWebhook against a real Vigil webhook delivery (the event tracked through the SDK, delivered
// to a real local receiver), then against every way a forged, replayed or damaged delivery fails.

/** Moved forward by the rotation test (its last case) to end an overlap without waiting for it. */
let skewMs = 0;
const { t, p } = useProject(
  { WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_BACKOFF_BASE_MS: "50" },
  { clock: () => new Date(Date.now() + skewMs) },
);
const rx = useReceiver();

function sign(secret: string, t: number, body: string | Buffer): string {
  return createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");
}

const reason = (r: string) => (e: unknown) => {
  assert.ok(e instanceof WebhookVerificationError, String(e));
  assert.equal(e.reason, r);
  return true;
};

describe("verifyWebhook", () => {
  it("verifies a real delivery of an event tracked with the SDK, and returns its payload", async () => {
    const url = rx.on("/hook", () => ({ status: 200, body: "ok" }));
    const w = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: "sdk", url, events: ["order.paid"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(w.status, 201, w.text);
    const secret: string = w.body.data.secret;
    const vigil = new Vigil({ apiKey: p.key, apiUrl: t.url, flushIntervalMs: 10 });
    vigil.track("order.paid", { amount: 42, note: "é😀" }, { userId: "u-1" });
    await vigil.shutdown();
    const [req] = await waitFor(() => (rx.at("/hook").length ? rx.at("/hook") : undefined), "the delivery");

    const payload = await verifyWebhook<{ type: string; data: { amount: number; note: string } }>(
      req.raw,
      req.headers,
      secret,
    );
    assert.equal(payload.type, "order.paid");
    assert.equal(payload.projectId, p.projectId);
    assert.match(payload.id, /^whd_/);
    assert.deepEqual(payload.data.data, { amount: 42, note: "é😀" });
    // The same with a fetch Headers object and the raw bytes.
    const h = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") h.set(k, v);
    assert.equal((await verifyWebhook(new TextEncoder().encode(req.raw), h, secret)).id, payload.id);
    assert.equal((await verifyWebhook(Buffer.from(req.raw), req.headers, secret)).id, payload.id);

    await assert.rejects(verifyWebhook(req.raw, req.headers, secret + "x"), reason("signature"));
    await assert.rejects(verifyWebhook(req.raw.replace("42", "43"), req.headers, secret), reason("signature"));
    await assert.rejects(
      verifyWebhook(JSON.stringify(JSON.parse(req.raw), null, 1), req.headers, secret),
      reason("signature"),
    );
    const later = Math.floor(Date.now() / 1000) + 301;
    await assert.rejects(verifyWebhook(req.raw, req.headers, secret, { nowSeconds: later }), reason("timestamp"));
    assert.ok(await verifyWebhook(req.raw, req.headers, secret, { nowSeconds: later, toleranceSeconds: 600 }));
  });

  const secret = "whsec_test";
  const body = '{"id":"whd_1","type":"x","createdAt":"2026-01-01T00:00:00.000Z","projectId":"p","data":{}}';
  const now = 1_800_000_000;

  it("any of several v1 signatures may match (secret rotation); upper-case hex is fine", async () => {
    const header = `t=${now},v1=${sign("whsec_old", now, body)},v1=${sign(secret, now, body).toUpperCase()}`;
    const p = await verifyWebhook(body, { "X-Vigil-Signature": header }, secret, { nowSeconds: now });
    assert.equal(p.id, "whd_1");
    await assert.rejects(
      verifyWebhook(body, { "x-vigil-signature": header }, "whsec_other", { nowSeconds: now }),
      reason("signature"),
    );
  });

  it("a signature from the future beyond the tolerance is refused too", async () => {
    const header = `t=${now + 400},v1=${sign(secret, now + 400, body)}`;
    await assert.rejects(
      verifyWebhook(body, { "x-vigil-signature": header }, secret, { nowSeconds: now }),
      reason("timestamp"),
    );
  });

  it("missing or malformed headers are refused before any crypto", async () => {
    const v1 = sign(secret, now, body);
    await assert.rejects(verifyWebhook(body, {}, secret), reason("missing_header"));
    for (const h of [
      "garbage",
      `v1=${v1}`,
      `t=${now}`,
      `t=abc,v1=${v1}`,
      `t=${now},v1=${v1.slice(1)}`,
      `t=${now},v1=${v1}zz`,
      `t=-5,v1=${v1}`,
      `t=${now},v0=${v1}`,
    ]) {
      await assert.rejects(
        verifyWebhook(body, { "x-vigil-signature": h }, secret, { nowSeconds: now }),
        reason("malformed_header"),
        h,
      );
    }
  });

  it("the signed t is the one checked: moving t breaks the signature", async () => {
    const header = `t=${now + 1},v1=${sign(secret, now, body)}`;
    await assert.rejects(
      verifyWebhook(body, { "x-vigil-signature": header }, secret, { nowSeconds: now }),
      reason("signature"),
    );
  });

  it("a correctly signed body that is not JSON is refused as such; an empty secret is a TypeError", async () => {
    const header = `t=${now},v1=${sign(secret, now, "not json")}`;
    await assert.rejects(
      verifyWebhook("not json", { "x-vigil-signature": header }, secret, { nowSeconds: now }),
      reason("invalid_json"),
    );
    await assert.rejects(verifyWebhook(body, { "x-vigil-signature": header }, ""), TypeError);
  });

  // Last: it moves the server's clock two days on.
  it("secret rotation: both secrets verify during the overlap, only the new one after it", async () => {
    const owner = { cookie: p.owner.cookie };
    const base = `/v1/projects/${p.projectId}/webhooks`;
    const url = rx.on("/rotated", () => ({ status: 200, body: "ok" }));
    const w = await t.rest.post(base, { name: "rotated", url, events: ["x"] }, owner);
    assert.equal(w.status, 201, w.text);
    const old: string = w.body.data.secret;
    /** A test delivery as received, and the header's t (the server's clock may be skewed). */
    const deliver = async () => {
      const n = rx.at("/rotated").length;
      assert.equal((await t.rest.post(`${base}/${w.body.data.id}/test`, {}, owner)).status, 202);
      const req = (await waitFor(() => rx.at("/rotated")[n], "the test delivery"))!;
      const header = String(req.headers["x-vigil-signature"]);
      return { req, header, nowSeconds: Number(/^t=(\d+)/.exec(header)![1]) };
    };

    const rot = await t.rest.post(`${base}/${w.body.data.id}/rotate-secret`, {}, owner);
    assert.equal(rot.status, 200, rot.text);
    const fresh: string = rot.body.data.secret;
    assert.match(fresh, /^whsec_/);
    assert.notEqual(fresh, old);
    assert.equal(rot.body.data.id, w.body.data.id);
    const g = await t.rest.get(`${base}/${w.body.data.id}`, owner);
    assert.ok(!g.text.includes("whsec_"), "the secret is shown once");

    // During the overlap (default a day): t=...,v1=<new>,v1=<old>; the SDK accepts either secret.
    const during = await deliver();
    assert.match(during.header, /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    for (const secret of [fresh, old])
      assert.equal((await verifyWebhook(during.req.raw, during.req.headers, secret, during)).type, "webhook.test");
    await assert.rejects(verifyWebhook(during.req.raw, during.req.headers, "whsec_other", during), reason("signature"));

    // A day and a second later the old secret no longer signs.
    skewMs = 86_401_000;
    const after = await deliver();
    assert.match(after.header, /^t=\d+,v1=[0-9a-f]{64}$/);
    assert.equal((await verifyWebhook(after.req.raw, after.req.headers, fresh, after)).type, "webhook.test");
    await assert.rejects(verifyWebhook(after.req.raw, after.req.headers, old, after), reason("signature"));

    // overlapSeconds 0: the replaced secret stops at once.
    const now = await t.rest.post(`${base}/${w.body.data.id}/rotate-secret`, { overlapSeconds: 0 }, owner);
    assert.equal(now.status, 200, now.text);
    const third = await deliver();
    assert.match(third.header, /^t=\d+,v1=[0-9a-f]{64}$/);
    assert.ok(await verifyWebhook(third.req.raw, third.req.headers, now.body.data.secret, third));
    await assert.rejects(verifyWebhook(third.req.raw, third.req.headers, fresh, third), reason("signature"));

    // Bounds, and types without a secret.
    for (const overlapSeconds of [-1, 604_801, 1.5]) {
      const bad = await t.rest.post(`${base}/${w.body.data.id}/rotate-secret`, { overlapSeconds }, owner);
      assert.equal(bad.status, 400, bad.text);
      assert.equal(bad.body.error.details[0].field, "overlapSeconds");
    }
    const discord = await t.rest.post(base, { type: "discord", url: rx.on("/d", () => ({})), events: ["x"] }, owner);
    const refused = await t.rest.post(`${base}/${discord.body.data.id}/rotate-secret`, {}, owner);
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.error.details[0].field, "type");
  });
});
