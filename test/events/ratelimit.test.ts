import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

// A controllable clock: 15 s into a minute, so Retry-After is the 45 s left of the window.
let now = Date.UTC(2030, 0, 1, 12, 0, 15);
const clock = () => new Date(now);
const env = { RATE_LIMIT_EVENTS_PER_MINUTE: "5", RATE_LIMIT_BATCHES_PER_MINUTE: "2" };

describe("in-process rate limits", () => {
  let t: TestApp;
  let p: ProjectFixture;
  before(async () => {
    t = await startTestApp(env, { clock });
    p = await project(t.rest);
  });
  after(() => t.close());

  it("refuses the 6th single event of the minute with 429 and Retry-After, per project", async () => {
    for (let i = 0; i < 5; i++)
      assert.equal((await t.rest.post("/v1/events", { type: "a" }, { key: p.key })).status, 202);
    const r = await t.rest.post("/v1/events", { type: "a" }, { key: p.key });
    assert.equal(r.status, 429);
    assert.equal(r.headers.get("retry-after"), "45");
    assert.equal(errorBody(r).code, "rate_limited");
    const other = await project(t.rest);
    assert.equal(
      (await t.rest.post("/v1/events", { type: "a" }, { key: other.key })).status,
      202,
      "another project has its own budget",
    );
    // the refused event was not stored
    const list = await t.rest.get("/v1/projects/self/events", { key: p.key });
    assert.equal(list.body.data.length, 5);
  });

  it("limits batch requests separately, also with 429 and Retry-After", async () => {
    const q = await project(t.rest);
    for (let i = 0; i < 2; i++)
      assert.equal(
        (await t.rest.post("/v1/events/batch", { events: [{ type: "a" }, { type: "b" }] }, { key: q.key })).status,
        202,
      );
    const r = await t.rest.post("/v1/events/batch", { events: [{ type: "a" }] }, { key: q.key });
    assert.equal(r.status, 429);
    assert.equal(r.headers.get("retry-after"), "45");
    errorBody(r);
    assert.equal((await t.rest.post("/v1/events", { type: "single-still-ok" }, { key: q.key })).status, 202);
  });

  it("opens a new window after the minute", async () => {
    now += 60_000;
    assert.equal((await t.rest.post("/v1/events", { type: "a" }, { key: p.key })).status, 202);
  });
});

describe("Redis rate limits shared by two nodes", () => {
  let redis: TestRedis;
  let a: TestApp;
  let b: TestApp;
  let p: ProjectFixture;
  let redisStopped = false;
  before(async () => {
    redis = await startRedis();
    a = await startTestApp({ ...env, REDIS_URL: redis.url }, { clock });
    b = await startTestApp({ ...env, REDIS_URL: redis.url }, { clock, databaseUrl: a.databaseUrl });
    p = await project(a.rest);
  });
  after(async () => {
    await a.close();
    await b.close();
    if (!redisStopped) await redis.stop();
  });

  it("counts one budget across both nodes", async () => {
    now += 120_000;
    const codes: number[] = [];
    for (let i = 0; i < 6; i++)
      codes.push((await (i % 2 ? b : a).rest.post("/v1/events", { type: "a" }, { key: p.key })).status);
    assert.deepEqual(codes, [202, 202, 202, 202, 202, 429]);
    const r = await a.rest.post("/v1/events", { type: "a" }, { key: p.key });
    assert.equal(r.status, 429);
    assert.equal(r.headers.get("retry-after"), "45");
    assert.equal((await b.rest.post("/v1/events/batch", { events: [{ type: "x" }] }, { key: p.key })).status, 202);
    assert.equal((await a.rest.post("/v1/events/batch", { events: [{ type: "x" }] }, { key: p.key })).status, 202);
    assert.equal((await b.rest.post("/v1/events/batch", { events: [{ type: "x" }] }, { key: p.key })).status, 429);
  });

  it("is atomic under concurrent requests to both nodes", async () => {
    now += 60_000;
    const q = await project(a.rest);
    const codes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? b : a).rest.post("/v1/events", { type: "c" }, { key: q.key }).then((r) => r.status),
      ),
    );
    assert.equal(codes.filter((c) => c === 202).length, 5);
    assert.equal(codes.filter((c) => c === 429).length, 15);
  });

  it("fails open, without hanging, when Redis goes away", async () => {
    now += 60_000;
    await redis.stop();
    redisStopped = true;
    const r = await a.rest.post("/v1/events", { type: "no-redis" }, { key: p.key });
    assert.equal(r.status, 202, r.text);
  });
});
