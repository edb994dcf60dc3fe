import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { errorBody, project, signup, type ProjectFixture } from "../helpers/fixtures.js";
import type { Res } from "../helpers/rest.js";

// Per-project caps on records (issue #29, point 8; docs/security.md "Records"): webhooks
// (MAX_WEBHOOKS_PER_PROJECT, decisions.md: default 50, 409 beyond), unrevoked API keys
// (MAX_API_KEYS_PER_PROJECT) and members (MAX_MEMBERS_PER_PROJECT). Concurrent creations, spread
// over two Vigil nodes on one database, stop exactly at the cap.

const env = {
  WEBHOOK_ALLOW_PRIVATE: "true",
  MAX_API_KEYS_PER_PROJECT: "5",
  MAX_MEMBERS_PER_PROJECT: "4",
  RATE_LIMIT_SIGNUPS_PER_MINUTE: "1000",
  RATE_LIMIT_WRITES_PER_MINUTE: "10000",
};
let a: TestApp;
let b: TestApp;
before(async () => {
  a = await startTestApp(env);
  b = await startTestApp(env, { databaseUrl: a.databaseUrl });
});
after(async () => {
  await a.close();
  await b.close();
});

function assertCapped(r: Res, what: string, field: string): void {
  assert.equal(r.status, 409, `${what}: ${r.status} ${r.text}`);
  const e = errorBody(r);
  assert.equal(e.code, "conflict");
  assert.match(e.message, new RegExp(`limit of \\d+ ${what}`));
  assert.deepEqual(
    (e.details as { field: string }[]).map((d) => d.field),
    [field],
  );
}

const statuses = (rs: Res[]) => rs.map((r) => r.status).sort();
const owner = (p: ProjectFixture) => ({ cookie: p.owner.cookie });
/** Every other request goes to the second node. */
const node = (i: number) => (i % 2 === 0 ? a : b).rest;

describe("webhooks per project (MAX_WEBHOOKS_PER_PROJECT, default 50)", () => {
  const create = (p: ProjectFixture, i: number) =>
    node(i).post(
      `/v1/projects/${p.projectId}/webhooks`,
      { url: `http://127.0.0.1:9/hook-${i}`, events: ["click"] },
      owner(p),
    );

  it("the 51st answers 409 conflict; deleting one frees a place", async () => {
    const p = await project(a.rest);
    for (let i = 0; i < 50; i++) assert.equal((await create(p, i)).status, 201);
    assertCapped(await create(p, 50), "webhooks", "url");
    const list = await a.rest.get(`/v1/projects/${p.projectId}/webhooks`, owner(p));
    assert.equal(list.body.data.length, 50);
    const del = await a.rest.del(`/v1/projects/${p.projectId}/webhooks/${list.body.data[0].id}`, owner(p));
    assert.equal(del.status, 204);
    assert.equal((await create(p, 51)).status, 201);
    assertCapped(await create(p, 52), "webhooks", "url");
    // Another project has its own 50.
    const other = await project(a.rest);
    assert.equal((await create(other, 0)).status, 201);
  });

  it("80 concurrent creations on two nodes: exactly 50 stored", async () => {
    const p = await project(a.rest);
    const rs = await Promise.all(Array.from({ length: 80 }, (_, i) => create(p, i)));
    const got = statuses(rs);
    assert.equal(got.filter((s) => s === 201).length, 50, JSON.stringify(got));
    assert.equal(got.filter((s) => s === 409).length, 30, JSON.stringify(got));
    const list = await a.rest.get(`/v1/projects/${p.projectId}/webhooks`, owner(p));
    assert.equal(list.body.data.length, 50);
  });
});

describe("API keys per project (MAX_API_KEYS_PER_PROJECT)", () => {
  const create = (p: ProjectFixture, i: number) =>
    node(i).post(`/v1/projects/${p.projectId}/api-keys`, { name: `k${i}`, environment: "production" }, owner(p));

  it("unrevoked keys up to the cap (the fixture's key counts); a revoked key gives its place back", async () => {
    const p = await project(a.rest);
    const made: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await create(p, i);
      assert.equal(r.status, 201, r.text);
      made.push(r.body.data.id);
    }
    assertCapped(await create(p, 4), "API keys", "name");
    const publishable = await a.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "browser", environment: "production", kind: "publishable" },
      owner(p),
    );
    assertCapped(publishable, "API keys", "name");
    assert.equal((await a.rest.del(`/v1/projects/${p.projectId}/api-keys/${made[0]}`, owner(p))).status, 204);
    assert.equal((await create(p, 5)).status, 201);
    assertCapped(await create(p, 6), "API keys", "name");
    // The keys that exist go on working.
    const ev = await a.rest.post("/v1/events", { type: "still.works" }, { key: p.key });
    assert.equal(ev.status, 202, ev.text);
  });

  it("20 concurrent creations on two nodes: exactly up to the cap", async () => {
    const p = await project(a.rest);
    const got = statuses(await Promise.all(Array.from({ length: 20 }, (_, i) => create(p, i))));
    assert.equal(got.filter((s) => s === 201).length, 4, JSON.stringify(got));
    assert.equal(got.filter((s) => s === 409).length, 16, JSON.stringify(got));
    const list = await a.rest.get(`/v1/projects/${p.projectId}/api-keys`, owner(p));
    assert.equal(list.body.data.length, 5);
  });
});

describe("members per project (MAX_MEMBERS_PER_PROJECT)", () => {
  const add = (p: ProjectFixture, email: string, i: number) =>
    node(i).post(`/v1/projects/${p.projectId}/members`, { email, role: "member" }, owner(p));

  it("members up to the cap (the owner counts); removing one frees a place", async () => {
    const p = await project(a.rest);
    const accounts = await Promise.all(Array.from({ length: 5 }, () => signup(a.rest, "m")));
    for (let i = 0; i < 3; i++) assert.equal((await add(p, accounts[i].email, i)).status, 201);
    assertCapped(await add(p, accounts[3].email, 3), "members", "email");
    const rm = await a.rest.del(`/v1/projects/${p.projectId}/members/${accounts[0].id}`, owner(p));
    assert.equal(rm.status, 204, rm.text);
    assert.equal((await add(p, accounts[3].email, 3)).status, 201);
    assertCapped(await add(p, accounts[4].email, 4), "members", "email");
    // Re-adding a member is still the duplicate's 409, not a cap question.
    const again = await add(p, accounts[1].email, 1);
    assert.equal(again.status, 409);
  });

  it("12 concurrent additions on two nodes: exactly up to the cap", async () => {
    const p = await project(a.rest);
    const accounts = await Promise.all(Array.from({ length: 12 }, () => signup(a.rest, "c")));
    const got = statuses(await Promise.all(accounts.map((x, i) => add(p, x.email, i))));
    assert.equal(got.filter((s) => s === 201).length, 3, JSON.stringify(got));
    assert.equal(got.filter((s) => s === 409).length, 9, JSON.stringify(got));
    const list = await a.rest.get(`/v1/projects/${p.projectId}/members`, owner(p));
    assert.equal(list.body.data.length, 4);
  });
});
