import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { ConfigError, parseConfig } from "../../src/config/index.js";
import { taskQueues } from "../../src/temporal/link.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { createTestDatabase } from "../helpers/db.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";

// Temporal mode's settings (docs/temporal.md "Connecting"): parsing, the derived task queues, and the
// deadline floor a Temporal-mode node enforces on the API (no Temporal server needed for either).

const base = { SESSION_SECRET: "test-session-secret-0123456789abcdef" };

describe("Temporal settings", () => {
  it("defaults: no TLS, derived queue, concurrency from the pool, 1 s deadline floor", () => {
    const c = parseConfig({ ...base, TEMPORAL_ADDRESS: "temporal:7233", PG_POOL_SIZE: "12" }).temporal!;
    assert.equal(c.namespace, "default");
    assert.equal(c.taskQueue, undefined);
    assert.equal(c.tls, undefined);
    assert.equal(c.uptimeConcurrency, 6);
    assert.equal(c.minDeadlineMs, 1000);
    assert.equal(c.scanGapMs, 250);
    assert.equal(c.wakeRate, 30);
    assert.equal(parseConfig(base).temporal, undefined);
  });

  it("an API key or a client certificate turns TLS on; a certificate needs its key", () => {
    assert.ok(
      parseConfig({ ...base, TEMPORAL_ADDRESS: "ns.acct.tmprl.cloud:7233", TEMPORAL_API_KEY: "k" }).temporal!.tls,
    );
    const mtls = parseConfig({
      ...base,
      TEMPORAL_ADDRESS: "t:7233",
      TEMPORAL_TLS_CERT_FILE: "/c.pem",
      TEMPORAL_TLS_KEY_FILE: "/k.pem",
    }).temporal!;
    assert.deepEqual(mtls.tls, { certFile: "/c.pem", keyFile: "/k.pem", caFile: undefined, serverName: undefined });
    assert.throws(
      () => parseConfig({ ...base, TEMPORAL_ADDRESS: "t:7233", TEMPORAL_TLS_CERT_FILE: "/c.pem" }),
      ConfigError,
    );
  });

  it("a task queue name is checked", () => {
    assert.throws(
      () => parseConfig({ ...base, TEMPORAL_ADDRESS: "t:7233", TEMPORAL_TASK_QUEUE: "has space" }),
      ConfigError,
    );
    assert.equal(
      parseConfig({ ...base, TEMPORAL_ADDRESS: "t:7233", TEMPORAL_TASK_QUEUE: "acme.vigil-1" }).temporal!.taskQueue,
      "acme.vigil-1",
    );
  });
});

describe("task queues", () => {
  const pools: pg.Pool[] = [];
  after(async () => {
    for (const p of pools) await p.end();
  });
  const open = async (url: string) => {
    const p = new pg.Pool({ connectionString: url, max: 1 });
    pools.push(p);
    return p;
  };

  it("derived from the deployment and database: stable for one database, different for another; the setting wins", async () => {
    const cfg = parseConfig({ ...base, TEMPORAL_ADDRESS: "t:7233" }).temporal!;
    const a = await open(await createTestDatabase());
    const b = await open(await createTestDatabase());
    const qa = await taskQueues(cfg, a);
    assert.match(qa.uptime, /^vigil-[0-9a-f]{12}\.uptime$/);
    assert.equal(qa.webhooks, qa.uptime.replace(/\.uptime$/, ".webhooks"));
    assert.deepEqual(await taskQueues(cfg, a), qa);
    assert.notEqual((await taskQueues(cfg, b)).uptime, qa.uptime);
    assert.equal(qa.deadlines, qa.uptime.replace(/\.uptime$/, ".deadlines"));
    assert.deepEqual(await taskQueues({ ...cfg, taskQueue: "acme" }, a), {
      deadlines: "acme.deadlines",
      uptime: "acme.uptime",
      webhooks: "acme.webhooks",
    });
  });
});

describe("deadline floor in Temporal mode", () => {
  let t: TestApp;
  let p: ProjectFixture;
  before(async () => {
    // An API node pointed at no server: the floor is checked before anything reaches Temporal.
    t = await startTestApp({ ROLE: "api", TEMPORAL_ADDRESS: "127.0.0.1:9", TEMPORAL_MIN_DEADLINE_MS: "5000" });
    p = await project(t.rest);
  });
  after(() => t.close());

  it("interval + grace below TEMPORAL_MIN_DEADLINE_MS is a 400 naming expectedIntervalMs; at the floor it is accepted", async () => {
    const path = `/v1/projects/${p.projectId}`;
    for (const [route, body] of [
      [`${path}/heartbeats/floor`, { expectedIntervalMs: 3000, gracePeriodMs: 1000 }],
      [`${path}/monitors`, { name: "Floor", expectedIntervalMs: 1000, gracePeriodMs: 0 }],
    ] as const) {
      const r = await t.rest.post(route, body, { key: p.key });
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.deepEqual(
        (e.details as { field: string }[]).map((d) => d.field),
        ["expectedIntervalMs"],
      );
    }
    assert.equal(
      (await t.rest.post(`${path}/heartbeats/floor`, { expectedIntervalMs: 4000, gracePeriodMs: 1000 }, { key: p.key }))
        .status,
      200,
    );
    const m = await t.rest.post(`${path}/monitors`, { name: "Floor 2" }, { key: p.key }); // defaults 60 s + 30 s
    assert.equal(m.status, 201, m.text);
    const patch = await t.rest.patch(`${path}/monitors/${m.body.data.id}`, { expectedIntervalMs: 100 }, { key: p.key });
    assert.equal(patch.status, 400, patch.text);
  });
});
