// CORS on the browser ingestion routes (POST /v1/events, /v1/events/batch) and the project's
// allowedOrigins, over a real port: preflights, the headers of actual answers (errors included),
// origins refused without CORS headers, and every other route (cookie routes above all) answering
// OPTIONS as before and never setting a CORS header.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { errorBody, memberOf, publishableKey } from "../helpers/fixtures.js";
import type { Res } from "../helpers/rest.js";
import { useProject } from "../helpers/use.js";

let pub: string;
const APP = "https://app.example.com";
const EVIL = "https://evil.example";

const { t, p } = useProject(
  { RATE_LIMIT_BATCHES_PER_MINUTE: "3", RATE_LIMIT_EVENTS_PER_MINUTE: "100000", MAX_BODY_BYTES: "65536" },
  {},
  async () => {
    pub = (await publishableKey(t.rest, p)).secret;
  },
);

const corsHeaders = (r: Res) => [...r.headers.keys()].filter((k) => k.startsWith("access-control-"));

function assertCors(r: Res, origin: string): void {
  assert.equal(r.headers.get("access-control-allow-origin"), origin, `${r.status} ${r.text}`);
  assert.equal(r.headers.get("access-control-expose-headers"), "Retry-After");
  assert.match(r.headers.get("vary") ?? "", /Origin/);
  assert.equal(r.headers.get("access-control-allow-credentials"), null);
}

const setOrigins = (allowedOrigins: unknown) =>
  t.rest.patch(`/v1/projects/${p.projectId}`, { allowedOrigins }, { cookie: p.owner.cookie });

describe("CORS on the ingestion routes", () => {
  it("answers preflights with 204 and exactly the CORS headers, never credentials", async () => {
    for (const path of ["/v1/events", "/v1/events/batch"]) {
      const r = await t.rest.req("OPTIONS", path, {
        headers: {
          origin: APP,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type",
        },
      });
      assert.equal(r.status, 204, r.text);
      assert.equal(r.headers.get("access-control-allow-origin"), APP);
      assert.equal(r.headers.get("access-control-allow-methods"), "POST");
      assert.equal(r.headers.get("access-control-allow-headers"), "authorization, content-type, content-encoding");
      assert.equal(r.headers.get("access-control-max-age"), "86400");
      assert.equal(r.headers.get("vary"), "Origin");
      assert.equal(r.headers.get("access-control-allow-credentials"), null);
      assert.equal(r.text, "");
    }
  });

  it("every other route answers OPTIONS with 405 (a known path) or 404, and no CORS header", async () => {
    for (const path of [
      "/v1/auth/login",
      "/v1/auth/signup",
      "/v1/auth/me",
      "/v1/projects",
      `/v1/projects/${p.projectId}`,
      "/v1/projects/self/metrics",
      "/v1/projects/self/events",
      "/v1/events/x",
    ]) {
      const r = await t.rest.req("OPTIONS", path, {
        headers: { origin: APP, "access-control-request-method": "POST" },
      });
      // A path that exists answers a verb it does not serve with 405 and Allow (decisions.md,
      // "Corrections from the second round"), any other with 404: never with CORS headers.
      assert.ok(r.status === 404 || (r.status === 405 && !!r.headers.get("allow")), `${path}: ${r.status}`);
      assert.deepEqual(corsHeaders(r), [], path);
    }
  });

  it("actual answers carry Allow-Origin, Vary and Expose-Headers, errors included", async () => {
    const ok = await t.rest.post("/v1/events", { type: "cors.ok" }, { key: pub, headers: { origin: APP } });
    assert.equal(ok.status, 202, ok.text);
    assertCors(ok, APP);
    // 400: invalid body
    const bad = await t.rest.post("/v1/events", { type: 5 }, { key: pub, headers: { origin: APP } });
    assert.equal(bad.status, 400, bad.text);
    assertCors(bad, APP);
    // 401: no key at all (the SDK must be able to read it)
    const anon = await t.rest.req("POST", "/v1/events", {
      raw: JSON.stringify({ type: "x" }),
      contentType: "application/json",
      headers: { origin: APP, authorization: "Bearer vk_pub_unknown" },
    });
    assert.equal(anon.status, 401, anon.text);
    assertCors(anon, APP);
    // 413: over MAX_BODY_BYTES
    const big = await t.rest.post(
      "/v1/events",
      { type: "x", data: { s: "a".repeat(70_000) } },
      { key: pub, headers: { origin: APP } },
    );
    assert.equal(big.status, 413, big.text);
    assertCors(big, APP);
    // 429 with Retry-After exposed
    let limited: Res | undefined;
    for (let i = 0; i < 6 && !limited; i++) {
      const r = await t.rest.post(
        "/v1/events/batch",
        { events: [{ type: "b" }] },
        { key: pub, headers: { origin: APP } },
      );
      assertCors(r, APP);
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, "no 429 after 6 batches with RATE_LIMIT_BATCHES_PER_MINUTE=3");
    assert.ok(Number(limited.headers.get("retry-after")) > 0);
  });

  it("without an Origin the answer has no Allow-Origin (Vary still)", async () => {
    const r = await t.rest.post("/v1/events", { type: "cors.none" }, { key: pub });
    assert.equal(r.status, 202);
    assert.equal(r.headers.get("access-control-allow-origin"), null);
    assert.match(r.headers.get("vary") ?? "", /Origin/);
  });

  it("cookie routes never set CORS headers, cross-site or not", async () => {
    const login = await t.rest.post(
      "/v1/auth/login",
      { email: p.owner.email, password: p.owner.password },
      { headers: { origin: APP } },
    );
    assert.equal(login.status, 403, login.text);
    assert.deepEqual(corsHeaders(login), []);
    const me = await t.rest.get("/v1/auth/me", { cookie: p.owner.cookie, headers: { origin: APP } });
    assert.deepEqual(corsHeaders(me), []);
    const self = await t.rest.get("/v1/projects/self", { key: p.key, headers: { origin: APP } });
    assert.equal(self.status, 200);
    assert.deepEqual(corsHeaders(self), []);
  });
});

describe("allowedOrigins", () => {
  it("is [] by default, set by PATCH (normalised, deduplicated) and shown by GET", async () => {
    const before = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.deepEqual(before.body.data.allowedOrigins, []);
    const r = await setOrigins(["https://App.Example.com/", "http://localhost:3000", "https://app.example.com:443"]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data.allowedOrigins, [APP, "http://localhost:3000"]);
    const got = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.deepEqual(got.body.data.allowedOrigins, [APP, "http://localhost:3000"]);
    // Absent: unchanged; the name changes alone.
    const renamed = await t.rest.patch(`/v1/projects/${p.projectId}`, { name: "Renamed" }, { cookie: p.owner.cookie });
    assert.equal(renamed.body.data.name, "Renamed");
    assert.deepEqual(renamed.body.data.allowedOrigins, [APP, "http://localhost:3000"]);
    // Listed for the secret key too.
    const viaKey = await t.rest.get("/v1/projects/self", { key: p.key });
    assert.deepEqual(viaKey.body.data.allowedOrigins, [APP, "http://localhost:3000"]);
  });

  it("refuses an origin not in the list with 403 and no CORS headers; allows listed ones and no Origin", async () => {
    await setOrigins([APP]);
    const evil = await t.rest.post("/v1/events", { type: "cors.evil" }, { key: pub, headers: { origin: EVIL } });
    assert.equal(evil.status, 403, evil.text);
    assert.equal(errorBody(evil).code, "forbidden");
    assert.match(errorBody(evil).message, /allowedOrigins/);
    assert.deepEqual(corsHeaders(evil), []);
    const batch = await t.rest.post(
      "/v1/events/batch",
      { events: [{ type: "cors.evil" }] },
      {
        key: pub,
        headers: { origin: "null" },
      },
    );
    assert.equal(batch.status, 403, batch.text);
    assert.deepEqual(corsHeaders(batch), []);
    // Same host, other scheme or port: another origin.
    for (const o of [
      "http://app.example.com",
      "https://app.example.com:8443",
      "https://app.example.com.evil.example",
    ]) {
      const r = await t.rest.post("/v1/events", { type: "cors.evil" }, { key: pub, headers: { origin: o } });
      assert.equal(r.status, 403, o);
    }
    const good = await t.rest.post("/v1/events", { type: "cors.good" }, { key: pub, headers: { origin: APP } });
    assert.equal(good.status, 202, good.text);
    assertCors(good, APP);
    const none = await t.rest.post("/v1/events", { type: "cors.noorigin" }, { key: pub });
    assert.equal(none.status, 202, none.text);
    // A secret key is not subject to the list.
    const secret = await t.rest.post("/v1/events", { type: "cors.secret" }, { key: p.key, headers: { origin: EVIL } });
    assert.equal(secret.status, 202, secret.text);
    // Nothing of the refused requests was stored.
    const list = await t.rest.get("/v1/projects/self/events?type=cors.evil", { key: p.key });
    assert.equal(list.body.data.length, 0);
  });

  it("applies a change on the very next request", async () => {
    await setOrigins([APP]);
    assert.equal((await t.rest.post("/v1/events", { type: "x" }, { key: pub, headers: { origin: EVIL } })).status, 403);
    await setOrigins([APP, EVIL]);
    assert.equal((await t.rest.post("/v1/events", { type: "x" }, { key: pub, headers: { origin: EVIL } })).status, 202);
    await setOrigins([]);
    assert.equal(
      (await t.rest.post("/v1/events", { type: "x" }, { key: pub, headers: { origin: "https://any.example" } })).status,
      202,
    );
  });

  it("is enforced over Connect too", async () => {
    await setOrigins([APP]);
    const events = createClient(EventService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }));
    try {
      await events.ingestEvent({ type: "x" }, { headers: { authorization: `Bearer ${pub}`, origin: EVIL } });
      assert.fail("an origin not allowed was accepted over Connect");
    } catch (err) {
      assert.equal(ConnectError.from(err).code, Code.PermissionDenied);
    }
    const ok = await events.ingestEvent({ type: "x" }, { headers: { authorization: `Bearer ${pub}`, origin: APP } });
    assert.ok(ok.data?.id);
    await setOrigins([]);
  });

  it("refuses invalid origins with a 400 naming allowedOrigins[i]", async () => {
    assert.equal((await setOrigins([])).status, 200);
    const cases: [unknown[], number][] = [
      [["ftp://a.example"], 0],
      [[APP, "https://a.example/path"], 1],
      [["*"], 0],
      [[1], 0],
      [[null], 0],
      [[{ origin: APP }], 0],
      [[["https://a.example"]], 0],
      [["https://user:pw@a.example"], 0],
      [["https://a.example?x=1"], 0],
      [["https://a.example#x"], 0],
      [["javascript:alert(1)"], 0],
      [["null"], 0],
      [[""], 0],
      [["https://a\u0000.example"], 0],
      [["https://" + "a".repeat(400) + ".example"], 0],
      [["https://a.example:99999"], 0],
      [[APP, APP, "__proto__"], 2],
    ];
    for (const [list, index] of cases) {
      const r = await setOrigins(list);
      assert.equal(r.status, 400, `${JSON.stringify(list)}: ${r.text}`);
      const e = errorBody(r);
      assert.ok(JSON.stringify(e).includes(`allowedOrigins[${index}]`), `${JSON.stringify(list)}: ${r.text}`);
    }
    const tooMany = await setOrigins(Array.from({ length: 51 }, (_, i) => `https://a${i}.example`));
    assert.equal(tooMany.status, 400, tooMany.text);
    assert.match(tooMany.text, /allowedOrigins/);
    const notList = await setOrigins(APP);
    assert.equal(notList.status, 400, notList.text);
    assert.match(notList.text, /allowedOrigins/);
    // Nothing was changed by the refusals.
    const got = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.deepEqual(got.body.data.allowedOrigins, []);
  });

  it("only an owner or admin may change it; API keys and members may not", async () => {
    assert.equal((await setOrigins([])).status, 200);
    const member = await memberOf(t.rest, p);
    const m = await t.rest.patch(`/v1/projects/${p.projectId}`, { allowedOrigins: [EVIL] }, { cookie: member.cookie });
    assert.equal(m.status, 403, m.text);
    const k = await t.rest.patch("/v1/projects/self", { allowedOrigins: [EVIL] }, { key: p.key });
    assert.equal(k.status, 403, k.text);
    const got = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.deepEqual(got.body.data.allowedOrigins, []);
  });
});
