import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startTestApp } from "../helpers/app.js";
import { errorBody, signup } from "../helpers/fixtures.js";
import { sessionCookie } from "../helpers/rest.js";
import { useApp } from "../helpers/use.js";

const { t } = useApp();

describe("signup", () => {
  it("creates an account, signs it in with a signed HttpOnly SameSite=Lax cookie", async () => {
    const r = await t.rest.post("/v1/auth/signup", {
      email: "Alice@Example.com",
      password: "long enough",
      name: "Alice",
    });
    assert.equal(r.status, 201);
    assert.equal(r.body.data.email, "alice@example.com");
    assert.equal(r.body.data.name, "Alice");
    assert.match(r.body.data.id, /^usr_/);
    assert.ok(!("password" in r.body.data) && !("passwordHash" in r.body.data));
    const raw = r.headers.getSetCookie()[0];
    assert.match(raw, /^vigil_session=[^;]+\.[^;]+;/);
    assert.match(raw, /HttpOnly/);
    assert.match(raw, /SameSite=Lax/);
    const me = await t.rest.get("/v1/auth/me", { cookie: sessionCookie(r) });
    assert.equal(me.status, 200);
    assert.equal(me.body.data.email, "alice@example.com");
  });

  it("answers null for an absent name", async () => {
    const r = await t.rest.post("/v1/auth/signup", { email: "noname@example.com", password: "long enough" });
    assert.equal(r.status, 201);
    assert.equal(r.body.data.name, null);
  });

  for (const [label, body, field] of [
    ["missing email", { password: "long enough" }, "email"],
    ["invalid email", { email: "not-an-email", password: "long enough" }, "email"],
    ["email of wrong type", { email: 42, password: "long enough" }, "email"],
    ["weak password", { email: "weak@example.com", password: "short" }, "password"],
    ["missing password", { email: "nopw@example.com" }, "password"],
    ["password of wrong type", { email: "x@example.com", password: ["a"] }, "password"],
  ] as const) {
    it(`refuses ${label} with 400 naming the field`, async () => {
      const r = await t.rest.post("/v1/auth/signup", body);
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.ok(JSON.stringify(e.details ?? e.message).includes(field), r.text);
    });
  }

  it("refuses a duplicate email (any case) with 409", async () => {
    await t.rest.post("/v1/auth/signup", { email: "dup@example.com", password: "long enough" });
    const r = await t.rest.post("/v1/auth/signup", { email: "DUP@example.com", password: "long enough" });
    assert.equal(r.status, 409);
    assert.equal(errorBody(r).code, "conflict");
  });
});

describe("login, me, logout", () => {
  it("logs in with the right password only", async () => {
    const a = await signup(t.rest, "login");
    const ok = await t.rest.post("/v1/auth/login", { email: a.email, password: a.password });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.data.id, a.id);
    const bad = await t.rest.post("/v1/auth/login", { email: a.email, password: "wrong password" });
    assert.equal(bad.status, 401);
    assert.equal(errorBody(bad).code, "invalid_credentials");
    const nobody = await t.rest.post("/v1/auth/login", { email: "nobody@example.com", password: "whatever1" });
    assert.equal(nobody.status, 401);
  });

  it("me without a session is 401; a tampered cookie is 401", async () => {
    assert.equal((await t.rest.get("/v1/auth/me")).status, 401);
    const a = await signup(t.rest, "tamper");
    const [name, value] = a.cookie.split("=");
    const tampered = `${name}=${value.slice(0, -2)}xx`;
    const r = await t.rest.get("/v1/auth/me", { cookie: tampered });
    assert.equal(r.status, 401);
    errorBody(r);
  });

  it("logout invalidates the session on the server", async () => {
    const a = await signup(t.rest, "logout");
    const out = await t.rest.post("/v1/auth/logout", undefined, { cookie: a.cookie });
    assert.equal(out.status, 204);
    assert.equal(out.text, "");
    // The browser may keep the old cookie: the server must refuse it.
    const me = await t.rest.get("/v1/auth/me", { cookie: a.cookie });
    assert.equal(me.status, 401);
  });

  it("an API key is not a session", async () => {
    const r = await t.rest.get("/v1/auth/me", { key: "vk_doesnotexist00000000000000000000000" });
    assert.equal(r.status, 401);
  });
});

describe("closed sign-up", () => {
  it("SIGNUP=closed admits only the first account", async () => {
    const closed = await startTestApp({ SIGNUP: "closed" });
    try {
      assert.equal(
        (await closed.rest.post("/v1/auth/signup", { email: "first@example.com", password: "long enough" })).status,
        201,
      );
      const second = await closed.rest.post("/v1/auth/signup", {
        email: "second@example.com",
        password: "long enough",
      });
      assert.equal(second.status, 403);
      errorBody(second);
    } finally {
      await closed.close();
    }
  });
});
