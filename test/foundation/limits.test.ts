import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { errorBody, project, signup, type ProjectFixture } from "../helpers/fixtures.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import type { Res } from "../helpers/rest.js";

// Request limits of every write route (429 + Retry-After), failed-login lockout, the closed
// sign-up race, the per-project monitor cap and the monitor list's pages.

// 15 s into a minute (the clock only ever moves by whole minutes): a per-minute limit's
// Retry-After is the 45 s left of the window.
let now = Date.UTC(2030, 0, 1, 12, 0, 15);
const clock = () => new Date(now);

function assertLimited(r: Res, retryAfter: string, label: string): void {
  assert.equal(r.status, 429, `${label}: ${r.status} ${r.text}`);
  assert.equal(r.headers.get("retry-after"), retryAfter, label);
  const e = errorBody(r);
  assert.equal(e.code, "rate_limited", label);
}

function assertPassed(r: Res, label: string): void {
  assert.ok(r.status < 300, `${label}: ${r.status} ${r.text}`);
}

describe("per-project limits of the write routes", () => {
  let t: TestApp;
  const env = {
    RATE_LIMIT_METRICS_PER_MINUTE: "2",
    RATE_LIMIT_METRIC_BATCHES_PER_MINUTE: "2",
    RATE_LIMIT_HEARTBEATS_PER_MINUTE: "2",
    RATE_LIMIT_IDENTIFY_PER_MINUTE: "2",
    RATE_LIMIT_WEBHOOK_SENDS_PER_MINUTE: "2",
    RATE_LIMIT_WRITES_PER_MINUTE: "5",
    WEBHOOK_ALLOW_PRIVATE: "true",
  };
  before(async () => {
    t = await startTestApp(env, { clock });
  });
  after(() => t.close());

  const cases: [string, (p: ProjectFixture) => Promise<Res>][] = [
    [
      "metrics",
      (p) =>
        t.rest.post(
          `/v1/projects/${p.projectId}/metrics`,
          { type: "increment", name: "hits", value: 1 },
          { key: p.key },
        ),
    ],
    [
      "metric batches",
      (p) =>
        t.rest.post(
          `/v1/projects/${p.projectId}/metrics/batch`,
          { metrics: [{ type: "increment", name: "hits", value: 1 }] },
          { key: p.key },
        ),
    ],
    ["heartbeats", (p) => t.rest.post(`/v1/projects/${p.projectId}/heartbeats/job`, {}, { key: p.key })],
    [
      "identify",
      (p) =>
        t.rest.post(
          `/v1/projects/${p.projectId}/identify`,
          { externalId: "u-1", properties: { a: 1 } },
          { cookie: p.owner.cookie },
        ),
    ],
  ];
  for (const [label, send] of cases) {
    it(`${label}: the 3rd of the minute answers 429 with Retry-After; another project keeps its budget`, async () => {
      const p = await project(t.rest);
      for (let i = 0; i < 2; i++) assertPassed(await send(p), `${label} #${i + 1}`);
      assertLimited(await send(p), "45", label);
      assertPassed(await send(await project(t.rest)), `${label} in another project`);
    });
  }

  it("webhook test and delivery retry share one budget", async () => {
    const p = await project(t.rest);
    const owner = { cookie: p.owner.cookie };
    const w = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { url: "http://127.0.0.1:9/hook", events: ["x"] },
      owner,
    );
    assert.equal(w.status, 201, w.text);
    const base = `/v1/projects/${p.projectId}/webhooks/${w.body.data.id}`;
    const first = await t.rest.post(`${base}/test`, {}, owner);
    assertPassed(first, "test #1");
    assertPassed(await t.rest.post(`${base}/test`, {}, owner), "test #2");
    assertLimited(await t.rest.post(`${base}/test`, {}, owner), "45", "test #3");
    assertLimited(await t.rest.post(`${base}/deliveries/${first.body.data.id}/retry`, {}, owner), "45", "retry");
  });

  it("management writes count per project (project creation per account)", async () => {
    const p = await project(t.rest); // its API key was the project's first write
    const owner = { cookie: p.owner.cookie };
    const base = `/v1/projects/${p.projectId}`;
    const m = await t.rest.post(`${base}/monitors`, { name: "api" }, { key: p.key });
    assertPassed(m, "create monitor");
    assertPassed(
      await t.rest.patch(`${base}/monitors/${m.body.data.id}`, { name: "API" }, { key: p.key }),
      "update monitor",
    );
    assertPassed(await t.rest.post(`${base}/monitors/${m.body.data.id}/pause`, {}, { key: p.key }), "pause");
    assertPassed(await t.rest.post(`${base}/monitors/${m.body.data.id}/resume`, {}, { key: p.key }), "resume");
    const refused: [string, Promise<Res>][] = [
      ["delete monitor", t.rest.del(`${base}/monitors/${m.body.data.id}`, { key: p.key })],
      ["update incident", t.rest.patch(`${base}/incidents/inc_x`, { title: "x" }, { key: p.key })],
      ["update project", t.rest.patch(base, { name: "x" }, owner)],
      ["add member", t.rest.post(`${base}/members`, { email: "nobody@example.com", role: "member" }, owner)],
      ["create key", t.rest.post(`${base}/api-keys`, { name: "k", environment: "production" }, owner)],
      ["create webhook", t.rest.post(`${base}/webhooks`, { url: "http://127.0.0.1:9/h", events: ["x"] }, owner)],
      ["delete project", t.rest.del(base, owner)],
    ];
    for (const [label, r] of refused) assertLimited(await r, "45", label);
    // Another project of the same owner has its own budget; creating projects counts per account.
    for (let i = 0; i < 4; i++)
      assertPassed(
        await t.rest.post("/v1/projects", { name: `more ${i}`, platform: "node" }, owner),
        `create project #${i + 2}`,
      );
    assertLimited(
      await t.rest.post("/v1/projects", { name: "one too many", platform: "node" }, owner),
      "45",
      "create project #6",
    );
  });

  it("opens a new window after the minute", async () => {
    const p = await project(t.rest);
    for (let i = 0; i < 2; i++) await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/job`, {}, { key: p.key });
    assert.equal((await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/job`, {}, { key: p.key })).status, 429);
    now += 60_000;
    assertPassed(await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/job`, {}, { key: p.key }), "next minute");
  });
});

/** A POST from a chosen loopback source address (Linux routes all of 127/8 to lo). */
function postFrom(base: string, localAddress: string, path: string, body: unknown): Promise<Res> {
  return new Promise((resolve, reject) => {
    const u = new URL(path, base);
    const data = JSON.stringify(body);
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: "POST",
        localAddress,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(data) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers.set(k, v);
          resolve({ status: res.statusCode ?? 0, text, headers, body: text ? JSON.parse(text) : undefined });
        });
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

describe("sign-up per client address", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ RATE_LIMIT_SIGNUPS_PER_MINUTE: "3" }, { clock });
  });
  after(() => t.close());

  it("answers the 4th sign-up of the minute from one address with 429; another address is not limited", async () => {
    for (let i = 0; i < 3; i++) await signup(t.rest, `s${i}`);
    const r = await t.rest.post("/v1/auth/signup", { email: "fourth@example.com", password: "correct horse battery" });
    assertLimited(r, "45", "4th sign-up");
    const other = await postFrom(t.url, "127.0.0.2", "/v1/auth/signup", {
      email: "elsewhere@example.com",
      password: "correct horse battery",
    });
    assert.equal(other.status, 201, other.text);
  });
});

describe("failed logins", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ LOGIN_MAX_FAILURES_PER_ACCOUNT: "3", LOGIN_MAX_FAILURES_PER_ADDRESS: "1000" }, { clock });
  });
  after(() => t.close());
  const login = (email: string, password: string) => t.rest.post("/v1/auth/login", { email, password });

  it("locks an account after its failures, also against the right password, until the window ends", async () => {
    const a = await signup(t.rest, "victim");
    for (let i = 0; i < 3; i++) assert.equal((await login(a.email, "wrong password")).status, 401);
    const locked = await login(a.email, a.password);
    // The lock lasts until the 15-minute window of the failures ends.
    assertLimited(
      locked,
      String((Math.floor(now / 900_000) * 900_000 + 900_000 - now) / 1000),
      "right password while locked",
    );
    assert.equal(locked.headers.getSetCookie().length, 0, "no session while locked");
    const other = await signup(t.rest, "bystander");
    assert.equal((await login(other.email, other.password)).status, 200, "another account from the same address");
    const saved = now;
    now = Math.floor(now / 900_000) * 900_000 + 900_000;
    assert.equal((await login(a.email, a.password)).status, 200, "next window");
    now = saved + 900_000;
  });

  it("answers a locked unknown email exactly as a locked account (no account probing)", async () => {
    const a = await signup(t.rest, "known");
    const answers: Res[] = [];
    for (const email of [a.email, "nobody-at-all@example.com"]) {
      for (let i = 0; i < 3; i++) assert.equal((await login(email, "wrong password")).status, 401);
      answers.push(await login(email, "wrong password"));
    }
    assert.equal(answers[0].status, 429);
    assert.deepEqual(
      [answers[1].status, answers[1].body, answers[1].headers.get("retry-after")],
      [answers[0].status, answers[0].body, answers[0].headers.get("retry-after")],
    );
  });

  it("does not count successful logins", async () => {
    const a = await signup(t.rest, "regular");
    for (let i = 0; i < 6; i++) assert.equal((await login(a.email, a.password)).status, 200);
  });

  it("lets exactly the allowed number of concurrent guesses through", async () => {
    const a = await signup(t.rest, "raced");
    const codes = await Promise.all(
      Array.from({ length: 20 }, () => login(a.email, "wrong password").then((r) => r.status)),
    );
    assert.equal(codes.filter((c) => c === 401).length, 3, String(codes));
    assert.equal(codes.filter((c) => c === 429).length, 17, String(codes));
  });
});

describe("failed logins per client address", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ LOGIN_MAX_FAILURES_PER_ACCOUNT: "100", LOGIN_MAX_FAILURES_PER_ADDRESS: "4" }, { clock });
  });
  after(() => t.close());

  it("blocks an address after its failures across accounts; another address can still sign in", async () => {
    const a = await signup(t.rest, "target");
    for (let i = 0; i < 4; i++)
      assert.equal(
        (await t.rest.post("/v1/auth/login", { email: `guess-${i}@example.com`, password: "nope" })).status,
        401,
      );
    const r = await t.rest.post("/v1/auth/login", { email: a.email, password: a.password });
    assert.equal(r.status, 429, r.text);
    assert.ok(Number(r.headers.get("retry-after")) > 0);
    const other = await postFrom(t.url, "127.0.0.3", "/v1/auth/login", { email: a.email, password: a.password });
    assert.equal(other.status, 200, other.text);
  });
});

describe("SIGNUP=closed", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ SIGNUP: "closed" });
  });
  after(() => t.close());

  it("lets exactly one of 20 concurrent first sign-ups through", async () => {
    const codes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t.rest
          .post("/v1/auth/signup", { email: `first-${i}@example.com`, password: "correct horse battery" })
          .then((r) => r.status),
      ),
    );
    assert.equal(codes.filter((c) => c === 201).length, 1, String(codes));
    assert.equal(codes.filter((c) => c === 403).length, 19, String(codes));
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      assert.equal((await db.query("SELECT count(*)::int AS n FROM accounts")).rows[0].n, 1);
    } finally {
      await db.end();
    }
  });
});

describe("monitor cap and monitor list pages", () => {
  let a: TestApp;
  let b: TestApp;
  before(async () => {
    a = await startTestApp({ MAX_MONITORS_PER_PROJECT: "5" });
    b = await startTestApp({ MAX_MONITORS_PER_PROJECT: "5" }, { databaseUrl: a.databaseUrl });
  });
  after(async () => {
    await a.close();
    await b.close();
  });
  const beat = (t: TestApp, p: ProjectFixture, slug: string) =>
    t.rest.post(`/v1/projects/${p.projectId}/heartbeats/${slug}`, {}, { key: p.key });
  const create = (t: TestApp, p: ProjectFixture, name: string) =>
    t.rest.post(`/v1/projects/${p.projectId}/monitors`, { name }, { key: p.key });

  it("refuses a 6th monitor with 409, by heartbeat and by POST; existing ones keep beating", async () => {
    const p = await project(a.rest);
    for (let i = 0; i < 3; i++) assert.equal((await create(a, p, `m${i}`)).status, 201);
    for (let i = 0; i < 2; i++) assert.equal((await beat(a, p, `hb-${i}`)).status, 200);
    const viaBeat = await beat(a, p, "hb-new");
    assert.equal(viaBeat.status, 409, viaBeat.text);
    assert.equal(errorBody(viaBeat).code, "conflict");
    assert.match(errorBody(viaBeat).message, /limit of 5 monitors/);
    const viaPost = await create(a, p, "m-new");
    assert.equal(viaPost.status, 409, viaPost.text);
    assert.equal(errorBody(viaPost).code, "conflict");
    assert.equal((await beat(a, p, "hb-0")).status, 200, "an existing monitor still beats");
    const list = await a.rest.get(`/v1/projects/${p.projectId}/monitors`, { key: p.key });
    assert.equal(list.body.data.length, 5);
    assert.ok(!list.body.data.some((m: any) => m.name === "hb-new" || m.name === "m-new"));
    // Deleting one makes room again.
    assert.equal(
      (await a.rest.del(`/v1/projects/${p.projectId}/monitors/${list.body.data[0].id}`, { key: p.key })).status,
      204,
    );
    assert.equal((await beat(a, p, "hb-new")).status, 200);
    assert.equal((await beat(a, p, "hb-newer")).status, 409);
  });

  it("holds under concurrent creation on two nodes (heartbeats and POSTs)", async () => {
    const p = await project(a.rest);
    const sends = [
      ...Array.from({ length: 30 }, (_, i) => beat(i % 2 ? a : b, p, `c-${i}`)),
      ...Array.from({ length: 10 }, (_, i) => create(i % 2 ? b : a, p, `post-${i}`)),
    ];
    const codes = (await Promise.all(sends)).map((r) => r.status);
    assert.equal(codes.filter((c) => c === 200 || c === 201).length, 5, String(codes));
    assert.equal(codes.filter((c) => c === 409).length, 35, String(codes));
    const db = new pg.Client({ connectionString: a.databaseUrl });
    await db.connect();
    try {
      assert.equal(
        (await db.query("SELECT count(*)::int AS n FROM monitors WHERE project_id = $1", [p.projectId])).rows[0].n,
        5,
      );
    } finally {
      await db.end();
    }
  });

  it("pages the monitor list with limit and cursor, without skipping or repeating", async () => {
    const p = await project(a.rest);
    // Concurrent heartbeats: monitors created in one statement share created_at (ties broken by id).
    await Promise.all(Array.from({ length: 5 }, (_, i) => beat(a, p, `page-${i}`)));
    const all = await a.rest.get(`/v1/projects/${p.projectId}/monitors`, { key: p.key });
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.data.length, 5);
    assert.deepEqual(all.body.pagination, { nextCursor: null, hasMore: false });
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await a.rest.get(`/v1/projects/${p.projectId}/monitors?limit=2${cursor ? `&cursor=${cursor}` : ""}`, {
        key: p.key,
      });
      assert.equal(r.status, 200, r.text);
      seen.push(...r.body.data.map((m: any) => m.id));
      sizes.push(r.body.data.length);
      assert.equal(r.body.pagination.hasMore, r.body.pagination.nextCursor !== null);
      if (!r.body.pagination.hasMore) break;
      cursor = r.body.pagination.nextCursor;
    }
    assert.deepEqual(sizes, [2, 2, 1]);
    assert.deepEqual(
      seen,
      all.body.data.map((m: any) => m.id),
      "same monitors, same order",
    );
  });

  it("refuses a limit out of range and a cursor of another list with 400", async () => {
    const p = await project(a.rest);
    await beat(a, p, "one");
    await beat(a, p, "two");
    const ev = await a.rest.post("/v1/events/batch", { events: [{ type: "a" }, { type: "b" }] }, { key: p.key });
    assert.equal(ev.status, 202, ev.text);
    const evPage = await a.rest.get(`/v1/projects/${p.projectId}/events?limit=1`, { key: p.key });
    const eventCursor = evPage.body.pagination.nextCursor;
    assert.ok(eventCursor);
    for (const q of [
      "limit=0",
      "limit=1001",
      `cursor=${eventCursor}`,
      "cursor=garbage!",
      `cursor=${Buffer.from("mon1:nope|mon_x").toString("base64url")}`,
    ]) {
      const r = await a.rest.get(`/v1/projects/${p.projectId}/monitors?${q}`, { key: p.key });
      assert.equal(r.status, 400, `${q}: ${r.text}`);
      assert.equal(errorBody(r).code, "validation_failed", q);
    }
  });
});

describe("limits shared through Redis by two nodes", () => {
  let redis: TestRedis;
  let a: TestApp;
  let b: TestApp;
  const env = () => ({
    REDIS_URL: redis.url,
    RATE_LIMIT_HEARTBEATS_PER_MINUTE: "3",
    LOGIN_MAX_FAILURES_PER_ACCOUNT: "2",
  });
  before(async () => {
    redis = await startRedis();
    a = await startTestApp(env(), { clock });
    b = await startTestApp(env(), { clock, databaseUrl: a.databaseUrl });
  });
  after(async () => {
    await a.close();
    await b.close();
    await redis.stop();
  });

  it("counts heartbeats of a project across both nodes", async () => {
    now += 60_000;
    const p = await project(a.rest);
    const codes: number[] = [];
    for (let i = 0; i < 4; i++)
      codes.push(
        (await (i % 2 ? b : a).rest.post(`/v1/projects/${p.projectId}/heartbeats/shared`, {}, { key: p.key })).status,
      );
    assert.deepEqual(codes, [200, 200, 200, 429]);
    assertLimited(
      await a.rest.post(`/v1/projects/${p.projectId}/heartbeats/shared`, {}, { key: p.key }),
      "45",
      "node a",
    );
  });

  it("locks an account for failures made on either node", async () => {
    const acct = await signup(a.rest, "both-nodes");
    assert.equal((await a.rest.post("/v1/auth/login", { email: acct.email, password: "wrong" })).status, 401);
    assert.equal((await b.rest.post("/v1/auth/login", { email: acct.email, password: "wrong" })).status, 401);
    assert.equal((await a.rest.post("/v1/auth/login", { email: acct.email, password: acct.password })).status, 429);
  });
});
