// navigator.sendBeacon on the browser ingestion routes: a text/plain JSON body with the publishable
// key in `?key=`, cross-site, over a real port. A secret key in the URL, a header key with a text
// body, other routes and other content types are refused.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorBody, publishableKey } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

let pub: string;
const APP = "https://app.example.com";
/** What a browser sends with a beacon from another site. */
const BEACON = { origin: APP, "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors" };

const { t, p } = useProject({}, {}, async () => {
  pub = (await publishableKey(t.rest, p)).secret;
});

const beacon = (path: string, body: unknown, contentType = "text/plain;charset=UTF-8", headers = BEACON) =>
  t.rest.req("POST", path, {
    raw: typeof body === "string" ? body : JSON.stringify(body),
    contentType,
    headers,
  });

async function countOf(type: string): Promise<number> {
  const r = await t.rest.get(`/v1/projects/self/events?type=${type}`, { key: p.key });
  assert.equal(r.status, 200, r.text);
  return r.body.data.length;
}

describe("sendBeacon: text/plain with ?key=vk_pub_...", () => {
  it("stores a single event and a batch, answering with CORS headers", async () => {
    const one = await beacon(`/v1/events?key=${pub}`, { type: "beacon.one", data: { n: 1 } });
    assert.equal(one.status, 202, one.text);
    assert.equal(one.headers.get("access-control-allow-origin"), APP);
    const batch = await beacon(`/v1/events/batch?key=${encodeURIComponent(pub)}`, {
      events: [{ type: "beacon.batch" }, { type: "beacon.batch" }],
    });
    assert.equal(batch.status, 202, batch.text);
    assert.equal(batch.body.data.accepted, 2);
    // A text Blob without charset, and a JSON type, are read the same way.
    assert.equal((await beacon(`/v1/events?key=${pub}`, { type: "beacon.one" }, "text/plain")).status, 202);
    assert.equal((await beacon(`/v1/events?key=${pub}`, { type: "beacon.one" }, "application/json")).status, 202);
    assert.equal(await countOf("beacon.one"), 3);
    assert.equal(await countOf("beacon.batch"), 2);
  });

  it("refuses a secret key in the URL (401, saying why) and stores nothing", async () => {
    const r = await beacon(`/v1/events?key=${p.key}`, { type: "beacon.secret" });
    assert.equal(r.status, 401, r.text);
    assert.equal(errorBody(r).code, "unauthenticated");
    assert.match(errorBody(r).message, /secret key must never travel in a URL/);
    assert.ok(!r.text.includes(p.key), "the key must not be echoed");
    const json = await t.rest.req("POST", `/v1/events?key=${p.key}`, {
      raw: JSON.stringify({ type: "beacon.secret" }),
      contentType: "application/json",
    });
    assert.equal(json.status, 401, json.text);
    assert.equal(await countOf("beacon.secret"), 0);
  });

  it("refuses unknown, revoked, empty and repeated keys, and a key both in the URL and a header", async () => {
    const k = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "gone", environment: "preview", kind: "publishable" },
      { cookie: p.owner.cookie },
    );
    await t.rest.del(`/v1/projects/${p.projectId}/api-keys/${k.body.data.id}`, { cookie: p.owner.cookie });
    for (const q of [
      `key=vk_pub_${"0".repeat(40)}`,
      `key=${k.body.data.secret}`,
      "key=",
      `key=${pub}&key=${pub}`,
      "key=%00",
      "key=__proto__",
    ]) {
      const r = await beacon(`/v1/events?${q}`, { type: "beacon.bad" });
      assert.ok(r.status === 401 || r.status === 400, `${q}: ${r.status} ${r.text}`);
      errorBody(r);
    }
    const both = await t.rest.req("POST", `/v1/events?key=${pub}`, {
      raw: JSON.stringify({ type: "beacon.bad" }),
      contentType: "text/plain",
      key: pub,
    });
    assert.equal(both.status, 401, both.text);
    assert.equal(await countOf("beacon.bad"), 0);
  });

  it("keeps refusing text/plain with a header key (415) or without a key (401: credentials come first; 403 cross-site)", async () => {
    const header = await t.rest.req("POST", "/v1/events", {
      raw: JSON.stringify({ type: "beacon.header" }),
      contentType: "text/plain",
      key: pub,
    });
    assert.equal(header.status, 415, header.text);
    const none = await t.rest.req("POST", "/v1/events", {
      raw: JSON.stringify({ type: "beacon.none" }),
      contentType: "text/plain",
    });
    assert.equal(none.status, 401, none.text);
    const crossSite = await beacon("/v1/events", { type: "beacon.none" });
    assert.equal(crossSite.status, 403, crossSite.text);
    assert.equal(await countOf("beacon.header"), 0);
  });

  it("accepts no other content type, invalid JSON, or other query parameters", async () => {
    for (const type of ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/html"]) {
      const r = await beacon(`/v1/events?key=${pub}`, { type: "beacon.form" }, type);
      assert.equal(r.status, 415, `${type}: ${r.text}`);
    }
    const garbage = await beacon(`/v1/events?key=${pub}`, "{not json");
    assert.equal(garbage.status, 400, garbage.text);
    const extra = await beacon(`/v1/events?key=${pub}&type=beacon.query`, { type: "beacon.form" });
    assert.equal(extra.status, 400, extra.text);
    assert.match(extra.text, /type/);
    assert.equal(await countOf("beacon.form"), 0);
  });

  it("is for the browser ingestion routes only", async () => {
    for (const [verb, path] of [
      ["POST", "/v1/projects/self/metrics"],
      ["POST", "/v1/projects/self/metrics/batch"],
      ["POST", "/v1/projects/self/heartbeats/x"],
      ["POST", "/v1/projects"],
      ["GET", "/v1/projects/self/events"],
      ["GET", "/v1/projects/self"],
    ]) {
      const r = await t.rest.req(verb, `${path}?key=${pub}`, {
        raw: verb === "POST" ? JSON.stringify({ type: "measurement", name: "m", value: 1 }) : undefined,
        contentType: verb === "POST" ? "text/plain" : undefined,
        headers: verb === "POST" ? BEACON : {},
      });
      assert.ok([401, 403, 415].includes(r.status), `${verb} ${path}: ${r.status} ${r.text}`);
      // A secret key there is not resolved either.
      const s = await t.rest.req(verb, `${path}?key=${p.key}`, {});
      assert.ok([401, 403, 415].includes(s.status), `${verb} ${path} (secret): ${s.status} ${s.text}`);
    }
  });

  it("checks allowedOrigins like a header key", async () => {
    await t.rest.patch(`/v1/projects/${p.projectId}`, { allowedOrigins: [APP] }, { cookie: p.owner.cookie });
    const evil = await beacon(`/v1/events?key=${pub}`, { type: "beacon.origin" }, "text/plain", {
      ...BEACON,
      origin: "https://evil.example",
    });
    assert.equal(evil.status, 403, evil.text);
    assert.equal(evil.headers.get("access-control-allow-origin"), null);
    const ok = await beacon(`/v1/events?key=${pub}`, { type: "beacon.origin" });
    assert.equal(ok.status, 202, ok.text);
    assert.equal(await countOf("beacon.origin"), 1);
    await t.rest.patch(`/v1/projects/${p.projectId}`, { allowedOrigins: [] }, { cookie: p.owner.cookie });
  });
});
