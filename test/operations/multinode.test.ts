// Three real Vigil processes on one PostgreSQL and one Redis, behind the test's own round-robin
// client: the guarantees of one node must hold across nodes.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { sessionCookie } from "../helpers/rest.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

interface Received {
  deliveryId: string;
  type: string;
  body: any;
}

let nodes: Node[] = [];
let redis: TestRedis;
let receiver: http.Server;
let receiverUrl: string;
const received: Received[] = [];
const inflight = new Map<string, number>();
let overlapping = 0;
let cookie: string;
let rr = 0;
const next = () => nodes[rr++ % nodes.length];

async function poll<T>(fn: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function newProject(name: string): Promise<{ id: string; key: string }> {
  const p = await next().rest.post("/v1/projects", { name, platform: "node" }, { cookie });
  assert.equal(p.status, 201, p.text);
  const k = await next().rest.post(
    `/v1/projects/${p.body.data.id}/api-keys`,
    { name: "k", environment: "production" },
    { cookie },
  );
  assert.equal(k.status, 201, k.text);
  return { id: p.body.data.id, key: k.body.data.secret };
}

before(async () => {
  receiver = http.createServer((req, res) => {
    const id = String(req.headers["x-vigil-delivery-id"] ?? "");
    const n = (inflight.get(id) ?? 0) + 1;
    inflight.set(id, n);
    if (n > 1) overlapping++;
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      setTimeout(() => {
        inflight.set(id, (inflight.get(id) ?? 1) - 1);
        let body: any;
        try {
          body = JSON.parse(raw);
        } catch {
          body = undefined;
        }
        received.push({ deliveryId: id, type: body?.type, body });
        res.writeHead(200).end("ok");
      }, 30);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const databaseUrl = await createTestDatabase();
  redis = await startRedis();
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    RATE_LIMIT_EVENTS_PER_MINUTE: "60",
    RATE_LIMIT_BATCHES_PER_MINUTE: "100000",
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_BACKOFF_BASE_MS: "200",
    PG_POOL_SIZE: "4",
  };
  nodes = await Promise.all([startNode(env), startNode(env), startNode(env)]);
  const s = await nodes[0].rest.post("/v1/auth/signup", { email: "ops@example.com", password: "long enough" });
  cookie = sessionCookie(s);
});

after(async () => {
  await Promise.all(nodes.map((n) => n.kill("SIGTERM")));
  await redis?.stop();
  receiver?.close();
});

describe("several nodes on one PostgreSQL and one Redis", () => {
  it("counts the rate limit once across nodes", async () => {
    const p = await newProject("limits");
    const statuses: number[] = [];
    for (let i = 0; i < 90; i++) {
      const r = await next().rest.post("/v1/events", { type: "click", data: { i } }, { key: p.key });
      statuses.push(r.status);
      if (r.status === 429) assert.match(r.headers.get("retry-after") ?? "", /^\d+$/);
    }
    assert.equal(statuses.filter((s) => s === 202).length, 60);
    assert.equal(statuses.filter((s) => s === 429).length, 30);
  });

  it("reads from every node what was ingested through every node", async () => {
    const p = await newProject("spread");
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) {
      const r = await next().rest.post(
        "/v1/events/batch",
        { events: Array.from({ length: 20 }, (_, j) => ({ type: "spread", data: { i, j } })) },
        { key: p.key },
      );
      assert.equal(r.status, 202, r.text);
      ids.push(...r.body.data.events.map((e: any) => e.id));
    }
    for (const n of nodes) {
      const seen = new Set<string>();
      let cursor: string | undefined;
      do {
        const r = await n.rest.get(
          `/v1/projects/self/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
          { key: p.key },
        );
        assert.equal(r.status, 200, r.text);
        for (const e of r.body.data) seen.add(e.id);
        cursor = r.body.pagination.hasMore ? r.body.pagination.nextCursor : undefined;
      } while (cursor);
      assert.equal(seen.size, ids.length);
      for (const id of ids) assert.ok(seen.has(id), `node ${n.port} misses ${id}`);
    }
  });

  it("opens exactly one incident and one notification per webhook for each overdue monitor", async () => {
    const p = await newProject("monitors");
    const w = await next().rest.post(
      `/v1/projects/${p.id}/webhooks`,
      { name: "ops", type: "http", url: receiverUrl, events: ["incident.started", "incident.recovered"] },
      { cookie },
    );
    assert.equal(w.status, 201, w.text);
    const slugs = Array.from({ length: 6 }, (_, i) => `job-${i}`);
    const monitorIds: string[] = [];
    for (const slug of slugs) {
      const r = await next().rest.post(
        `/v1/projects/self/heartbeats/${slug}`,
        { expectedIntervalMs: 400, gracePeriodMs: 200 },
        { key: p.key },
      );
      assert.equal(r.status, 200, r.text);
      monitorIds.push(r.body.data.monitor.id);
    }
    for (const id of monitorIds) {
      await poll(
        async () =>
          (await next().rest.get(`/v1/projects/self/monitors/${id}/status`, { key: p.key })).body?.data?.status ===
          "down"
            ? true
            : undefined,
        10_000,
        `monitor ${id} down`,
      );
    }
    // Give every node's scheduler time to (wrongly) act twice, then count.
    await new Promise((r) => setTimeout(r, 1500));
    for (const id of monitorIds) {
      const inc = await next().rest.get(`/v1/projects/self/monitors/${id}/incidents`, { key: p.key });
      assert.equal(inc.body.data.length, 1, `monitor ${id}: ${inc.text}`);
    }
    await poll(
      async () =>
        received.filter((r) => r.type === "incident.started" && monitorIds.includes(r.body?.data?.monitor?.id))
          .length >= monitorIds.length
          ? true
          : undefined,
      10_000,
      "notifications",
    );
    await new Promise((r) => setTimeout(r, 1000));
    for (const id of monitorIds) {
      const got = received.filter((r) => r.type === "incident.started" && r.body?.data?.monitor?.id === id);
      assert.equal(got.length, 1, `monitor ${id} notified ${got.length} times`);
    }
  });

  it("sends each delivery from one node at a time, once when it succeeds", async () => {
    const p = await newProject("deliveries");
    const w = await next().rest.post(
      `/v1/projects/${p.id}/webhooks`,
      { name: "orders", type: "http", url: receiverUrl, events: ["order.created"] },
      { cookie },
    );
    assert.equal(w.status, 201, w.text);
    await new Promise((r) => setTimeout(r, 500)); // subscription caches refresh across nodes
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await next().rest.post(
        "/v1/events/batch",
        { events: Array.from({ length: 10 }, (_, j) => ({ type: "order.created", data: { i, j } })) },
        { key: p.key },
      );
      ids.push(...r.body.data.events.map((e: any) => e.id));
    }
    const mine = () => received.filter((r) => r.type === "order.created" && ids.includes(r.body?.data?.id));
    await poll(async () => (mine().length >= ids.length ? true : undefined), 15_000, "60 deliveries");
    await new Promise((r) => setTimeout(r, 1000));
    const byDelivery = new Map<string, number>();
    for (const r of mine()) byDelivery.set(r.deliveryId, (byDelivery.get(r.deliveryId) ?? 0) + 1);
    assert.equal(byDelivery.size, ids.length);
    for (const [id, n] of byDelivery) assert.equal(n, 1, `delivery ${id} sent ${n} times`);
    assert.equal(overlapping, 0, "a delivery was in flight from two nodes at once");
  });

  it("loses nothing a node acknowledged before it was killed with -9", async () => {
    const p = await newProject("crash");
    const victim = nodes[2];
    const acked: string[] = [];
    let stop = false;
    const loops = Array.from({ length: 6 }, async (_, l) => {
      for (let i = 0; !stop; i++) {
        try {
          const r = await victim.rest.post(
            "/v1/events/batch",
            { events: Array.from({ length: 25 }, (_, j) => ({ type: "load", data: { l, i, j } })) },
            { key: p.key },
          );
          if (r.status === 202) acked.push(...r.body.data.events.map((e: any) => e.id));
        } catch {
          return; // connection died with the node
        }
      }
    });
    await poll(async () => (acked.length >= 500 ? true : undefined), 20_000, "load to build up");
    victim.child.kill("SIGKILL");
    stop = true;
    await Promise.all(loops);
    nodes = nodes.slice(0, 2);
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const r = await nodes[0].rest.get(
        `/v1/projects/self/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        { key: p.key },
      );
      for (const e of r.body.data) seen.add(e.id);
      cursor = r.body.pagination.hasMore ? r.body.pagination.nextCursor : undefined;
    } while (cursor);
    const lost = acked.filter((id) => !seen.has(id));
    assert.equal(lost.length, 0, `${lost.length} of ${acked.length} acknowledged events lost`);
  });
});
