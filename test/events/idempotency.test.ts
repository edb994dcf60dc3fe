import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { eventsOf, GENEROUS_LIMITS, metricOf, startTestApp, type TestApp } from "../helpers/app.js";
import { errorBody, project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { loadVigil, struct, unary } from "../clients/grpc-js-util.js";
import { purgeClaims } from "../../src/events/claims.js";
import { useReceiver, waitFor } from "../webhooks/receiver.js";

// Idempotent ingestion (decisions.md "Idempotent ingestion and browser SDKs"): an event with a client
// `id` already stored in the project (within 7 days) stores nothing new and is answered as the first
// was, over REST and gRPC, on the one-statement path and the transaction, under concurrency, across
// a restart; duplicates reach no projection, no webhook; the purge forgets ids after the window.

const { t, p } = useProject({ ...GENEROUS_LIMITS, WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_BACKOFF_BASE_MS: "50" });
const rx = useReceiver();

const db = () => t.app.deps.db;

async function send(body: object, key = p.key) {
  const r = await t.rest.post("/v1/events", body, { key });
  assert.equal(r.status, 202, r.text);
  return r.body.data;
}
async function batch(events: unknown[], key = p.key) {
  const r = await t.rest.post("/v1/events/batch", { events }, { key });
  assert.equal(r.status, 202, r.text);
  return r.body.data;
}
const rows = async (type: string, projectId = p.projectId) =>
  (
    await db().query<{ id: string }>("SELECT id FROM events WHERE project_id = $1 AND type = $2 ORDER BY id", [
      projectId,
      type,
    ])
  ).rows.map((r) => r.id);
const claims = async (clientId: string, projectId = p.projectId) =>
  (
    await db().query<{ kind: string; record_id: string }>(
      "SELECT kind, record_id FROM ingest_ids WHERE project_id = $1 AND client_id = $2",
      [projectId, clientId],
    )
  ).rows;

async function commits(): Promise<{ statement: number; transaction: number }> {
  const values = (await metricOf(t.app, "vigil_ingest_commits_total").get()).values;
  const n = (path: string) => values.find((v) => v.labels.path === path)?.value ?? 0;
  return { statement: n("statement"), transaction: n("transaction") };
}

describe("idempotent ingestion of events", () => {
  it("answers a repeated single event as the first (status, id, body) and stores it once", async () => {
    const id = randomUUID();
    const first = await send({ id, type: "idem.single", userId: "u1", data: { n: 1 } });
    // The retry may even differ (a careless client): what was stored first is the answer.
    const again = await send({ id, type: "idem.single", userId: "u1", data: { n: 2 } });
    assert.deepEqual(again, first);
    assert.deepEqual(await rows("idem.single"), [first.id]);
    assert.deepEqual(await claims(id), [{ kind: "event", record_id: first.id }]);
    // Any case: stored lowercase, the same id.
    const upper = await send({ id: id.toUpperCase(), type: "idem.single" });
    assert.equal(upper.id, first.id);
    assert.equal((await rows("idem.single")).length, 1);
    // Without an id every request stores a new event.
    const a = await send({ type: "idem.single" });
    const b = await send({ type: "idem.single" });
    assert.notEqual(a.id, b.id);
    assert.equal((await rows("idem.single")).length, 3);
  });

  it("keeps the one-statement path for new ids and sends a repeat through the transaction", async () => {
    await send({ type: "idem.warm", id: randomUUID() }); // partitions, registry cached
    const id = randomUUID();
    const before = await commits();
    const first = await send({ type: "idem.path", id, data: { k: "v" } });
    const mid = await commits();
    assert.equal(mid.statement - before.statement, 1, JSON.stringify({ before, mid }));
    assert.equal(mid.transaction, before.transaction);
    const again = await send({ type: "idem.path", id, data: { k: "v" } });
    const end = await commits();
    assert.equal(end.transaction - mid.transaction, 1, "the statement refused the taken id; the transaction answered");
    assert.equal(end.statement, mid.statement);
    assert.deepEqual(again, first);
    assert.deepEqual(await rows("idem.path"), [first.id]);
  });

  it("answers a batch's repeated items with the first's ids: within one batch and across batches", async () => {
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const items = [
      { id: a, type: "idem.batch", data: { i: 0 } },
      { id: b, type: "idem.batch", data: { i: 1 } },
      { id: a, type: "idem.batch", data: { i: 2 } }, // the same id again in this batch
      { type: "idem.batch", data: { i: 3 } }, // no id
      { id: c, type: "idem.batch", data: { i: 4 } },
    ];
    const first = await batch(items);
    assert.equal(first.accepted, 5);
    assert.equal(first.rejected, 0);
    assert.equal(first.events[2].id, first.events[0].id);
    assert.equal(new Set(first.events.map((e: { id: string }) => e.id)).size, 4);
    assert.equal((await rows("idem.batch")).length, 4);

    const second = await batch(items);
    assert.equal(second.accepted, 5);
    for (const i of [0, 1, 2, 4]) assert.equal(second.events[i].id, first.events[i].id, `item ${i}`);
    assert.notEqual(second.events[3].id, first.events[3].id, "the item without an id is a new event");
    assert.equal((await rows("idem.batch")).length, 5);

    // A large batch (the COPY path) with ids, sent twice.
    const big = Array.from({ length: 300 }, (_, i) => ({ id: randomUUID(), type: "idem.big", data: { i } }));
    const x = await batch(big);
    const y = await batch(big);
    assert.deepEqual(
      y.events.map((e: { id: string }) => e.id),
      x.events.map((e: { id: string }) => e.id),
    );
    assert.equal((await rows("idem.big")).length, 300);

    // Half of a large batch (a COPY-sized group) stored already: the stored half answers its first
    // ids, the new half is stored once.
    const mixed = [
      ...big.slice(0, 150),
      ...Array.from({ length: 150 }, (_, i) => ({ id: randomUUID(), type: "idem.big", data: { i: 300 + i } })),
    ];
    const z = await batch(mixed);
    assert.equal(z.accepted, 300);
    assert.deepEqual(
      z.events.slice(0, 150).map((e: { id: string }) => e.id),
      x.events.slice(0, 150).map((e: { id: string }) => e.id),
    );
    assert.equal((await rows("idem.big")).length, 450);
  });

  it("stores each event once when large batches of the same ids race", async () => {
    const items = Array.from({ length: 250 }, (_, i) => ({ id: randomUUID(), type: "idem.big-race", data: { i } }));
    const answers = await Promise.all(Array.from({ length: 6 }, () => batch(items)));
    for (const a of answers) {
      assert.equal(a.accepted, 250);
      assert.deepEqual(
        a.events.map((e: { id: string }) => e.id),
        answers[0].events.map((e: { id: string }) => e.id),
      );
    }
    assert.equal((await rows("idem.big-race")).length, 250);
  });

  it("stores one event for 20 concurrent requests with one id (single and batch)", async () => {
    const id = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send({ id, type: "idem.race", data: { i } })),
    );
    assert.equal(new Set(answers.map((a) => a.id)).size, 1, JSON.stringify(answers.map((a) => a.id)));
    assert.equal((await rows("idem.race")).length, 1);

    const ids = Array.from({ length: 10 }, () => randomUUID());
    const batches = await Promise.all(
      Array.from({ length: 20 }, (_, j) =>
        batch(ids.map((id, i) => ({ id, type: "idem.race-batch", data: { i, j } })).reverse()),
      ),
    );
    for (const b of batches) {
      assert.equal(b.accepted, 10);
      assert.deepEqual(
        b.events.map((e: { id: string }) => e.id),
        batches[0].events.map((e: { id: string }) => e.id),
      );
    }
    assert.equal((await rows("idem.race-batch")).length, 10);
    const n = await db().query("SELECT count(*)::int AS n FROM ingest_ids WHERE client_id = ANY($1::uuid[])", [ids]);
    assert.equal(n.rows[0].n, 10);
  });

  it("keeps projects apart: another project's same id is its own event", async () => {
    const other = await project(t.rest);
    const id = randomUUID();
    const mine = await send({ id, type: "idem.tenant" });
    const theirs = await send({ id, type: "idem.tenant" }, other.key);
    assert.notEqual(theirs.id, mine.id);
    assert.equal(theirs.projectId, other.projectId);
    assert.deepEqual(await rows("idem.tenant"), [mine.id]);
    assert.deepEqual(await rows("idem.tenant", other.projectId), [theirs.id]);
    // Sent again by each: each gets its own back (never the other tenant's event).
    assert.equal((await send({ id, type: "idem.tenant" }, other.key)).id, theirs.id);
    assert.equal((await send({ id, type: "idem.tenant" })).id, mine.id);
    // An event id of another project used as a client id is just a new id here.
    const borrowed = await send({ id: theirs.id, type: "idem.tenant" });
    assert.notEqual(borrowed.id, theirs.id);
  });

  it("refuses anything but a UUID with a 400 naming id (a batch item alone)", async () => {
    const bad: unknown[] = [
      "",
      "abc",
      "not-a-uuid-not-a-uuid-not-a-uuid-xx",
      `${randomUUID()}\u0000`,
      `{${randomUUID()}}`,
      `urn:uuid:${randomUUID()}`,
      randomUUID().replace(/-/g, ""),
      randomUUID().replace(/[0-9a-f]$/, "g"),
      ` ${randomUUID()}`,
      "__proto__",
      "constructor",
      "x".repeat(100_000),
    ];
    for (const id of bad) {
      const r = await t.rest.post("/v1/events", { id, type: "idem.bad" }, { key: p.key });
      assert.equal(r.status, 400, `${JSON.stringify(id).slice(0, 50)}: ${r.text.slice(0, 200)}`);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.equal((e.details as { field: string }[] | undefined)?.[0]?.field, "id", r.text.slice(0, 200));
    }
    // Wrong JSON types for the single route: refused by the body's decoding, never a 500.
    for (const id of [123, true, { a: 1 }, [randomUUID()], 1e308]) {
      const r = await t.rest.post("/v1/events", { id, type: "idem.bad" }, { key: p.key });
      assert.equal(r.status, 400, `${JSON.stringify(id)}: ${r.text}`);
    }
    const good = randomUUID();
    const b = await t.rest.post(
      "/v1/events/batch",
      {
        events: [
          { id: "nope", type: "idem.bad" },
          { id: good, type: "idem.bad" },
          { id: 42, type: "idem.bad" },
          { id: { __proto__: { x: 1 } }, type: "idem.bad" },
          { id: null, type: "idem.bad" },
        ],
      },
      { key: p.key },
    );
    assert.equal(b.status, 202, b.text);
    assert.equal(b.body.data.accepted, 2);
    assert.deepEqual(
      b.body.data.errors.map((e: { index: number; code: string; message: string }) => [e.index, e.code]),
      [
        [0, "validation_failed"],
        [2, "validation_failed"],
        [3, "validation_failed"],
      ],
    );
    for (const e of b.body.data.errors) assert.match(e.message, /^id: id must be a UUID/);
    assert.equal((await rows("idem.bad")).length, 2);
  });

  it("reaches projections and webhooks once: user counts, analytics counts, one delivery", async () => {
    const url = rx.on("/idem", () => ({ status: 200 }));
    const w = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: "idem", url, events: ["idem.hook"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(w.status, 201, w.text);
    const id = randomUUID();
    const ts = "2024-06-01T10:00:00Z";
    const body = { id, type: "idem.hook", userId: "idem-user", timestamp: ts };
    const first = await send(body);
    await Promise.all(Array.from({ length: 5 }, () => send(body)));
    await batch([body, body]);
    await send(body);
    await waitFor(() => (rx.at("/idem").length ? true : undefined), "the delivery");
    await new Promise((r) => setTimeout(r, 1500)); // time for any second delivery to show up
    assert.equal(rx.at("/idem").length, 1);
    assert.equal(JSON.parse(rx.at("/idem")[0].raw).data.id, first.id);

    const u = await t.rest.get(`/v1/projects/${p.projectId}/users/idem-user`, { key: p.key });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.data.eventCount, 1);
    const c = await t.rest.post(
      `/v1/projects/${p.projectId}/analytics/count`,
      { time: { start: "2024-06-01T00:00:00Z", end: "2024-06-02T00:00:00Z" }, filters: [] },
      { key: p.key },
    );
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.data.count, 1, c.text);
  });

  it("over gRPC (grpc-js): the same answer for the same id, single and batch", async () => {
    const services = loadVigil();
    const client = new services.EventService(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure());
    try {
      const md = { authorization: `Bearer ${p.key}` };
      const id = randomUUID();
      const one = await unary(client, "ingestEvent")({ id, type: "idem.grpc", data: struct({ a: 1 }) }, md);
      const two = await unary(client, "ingestEvent")({ id, type: "idem.grpc", data: struct({ a: 1 }) }, md);
      assert.equal(two.res.data.id, one.res.data.id);
      const item = (cid: string) => ({
        structValue: { fields: { id: { stringValue: cid }, type: { stringValue: "idem.grpc" } } },
      });
      const x = randomUUID();
      const b1 = await unary(client, "ingestEventBatch")({ events: [item(x), item(id), item(x)] }, md);
      assert.equal(b1.res.data.accepted, 3);
      assert.equal(b1.res.data.events[1].id, one.res.data.id);
      assert.equal(b1.res.data.events[2].id, b1.res.data.events[0].id);
      assert.equal((await rows("idem.grpc")).length, 2);
      const bad = await unary(client, "ingestEvent")({ id: "nope", type: "idem.grpc" }, md).catch((e) => e);
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
      assert.match(bad.details, /id must be a UUID/);
    } finally {
      client.close();
    }
  });

  it("a repeat whose event is gone since (retention, a user's deletion) keeps its id and stores nothing", async () => {
    const id = randomUUID();
    const first = await send({ id, type: "idem.gone", userId: "gone-user", timestamp: "2024-07-01T00:00:00Z" });
    await db().query("DELETE FROM events WHERE project_id = $1 AND type = 'idem.gone'", [p.projectId]);
    const again = await send({ id, type: "idem.gone", userId: "gone-user", timestamp: "2024-07-01T00:00:00Z" });
    assert.equal(again.id, first.id);
    assert.equal(again.timestamp, first.timestamp);
    const b = await batch([{ id, type: "idem.gone" }]);
    assert.equal(b.events[0].id, first.id);
    assert.deepEqual(await rows("idem.gone"), []);
  });

  it("purges in chunks until nothing older is left, and stops when asked", async () => {
    const q = await project(t.rest);
    const old = new Date(Date.now() - 8 * 86_400_000);
    const insert = (n: number, at: Date) =>
      db().query(
        "INSERT INTO ingest_ids (project_id, kind, client_id, created_at) SELECT $1, 'event', gen_random_uuid(), $2 FROM generate_series(1, $3)",
        [q.projectId, at, n],
      );
    const left = async () =>
      (await db().query("SELECT count(*)::int AS n FROM ingest_ids WHERE project_id = $1", [q.projectId])).rows[0].n;
    await insert(7, old);
    await insert(3, new Date());
    const cutoff = new Date(Date.now() - 7 * 86_400_000);
    assert.equal(await purgeClaims(db(), cutoff, { chunk: 2, stopped: () => true }), 2, "one chunk, then stopped");
    assert.equal(await left(), 8);
    assert.equal(await purgeClaims(db(), cutoff, { chunk: 2 }), 5);
    assert.equal(await left(), 3, "the recent ones stay");
  });

  it("forgets ids after the 7-day window (the purge), not before", async () => {
    const id = randomUUID();
    const first = await send({ id, type: "idem.purge" });
    const events = eventsOf(t.app);
    assert.equal(await events.purgeIngestIds(new Date(Date.now() + 6 * 86_400_000)), 0);
    assert.equal((await send({ id, type: "idem.purge" })).id, first.id);
    assert.ok((await events.purgeIngestIds(new Date(Date.now() + 7 * 86_400_000 + 60_000))) >= 1);
    assert.deepEqual(await claims(id), []);
    const later = await send({ id, type: "idem.purge" });
    assert.notEqual(later.id, first.id, "after the window the id is new again");
    assert.equal((await rows("idem.purge")).length, 2);
  });
});

describe("idempotent ingestion across a restart", () => {
  const apps: TestApp[] = [];
  after(async () => {
    for (const a of apps) await a.close().catch(() => undefined);
  });

  it("answers a retry sent to a new process on the same database as the first (a crash after commit)", async () => {
    const first = await startTestApp(GENEROUS_LIMITS);
    apps.push(first);
    const q = await project(first.rest);
    const id = randomUUID();
    const batchIds = [randomUUID(), randomUUID()];
    const one = await first.rest.post("/v1/events", { id, type: "idem.restart", data: { v: 1 } }, { key: q.key });
    assert.equal(one.status, 202, one.text);
    const many = await first.rest.post(
      "/v1/events/batch",
      { events: batchIds.map((x) => ({ id: x, type: "idem.restart" })) },
      { key: q.key },
    );
    assert.equal(many.status, 202, many.text);
    // The answers are lost, the process goes away; the client retries against a new one.
    await first.close();
    const second = await startTestApp(GENEROUS_LIMITS, { databaseUrl: first.databaseUrl });
    apps.push(second);
    const r = await second.rest.post("/v1/events", { id, type: "idem.restart", data: { v: 1 } }, { key: q.key });
    assert.equal(r.status, 202, r.text);
    assert.deepEqual(r.body.data, one.body.data);
    const b = await second.rest.post(
      "/v1/events/batch",
      { events: batchIds.map((x) => ({ id: x, type: "idem.restart" })) },
      { key: q.key },
    );
    assert.equal(b.status, 202, b.text);
    assert.deepEqual(b.body.data.events, many.body.data.events);
    const n = await second.app.deps.db.query("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [
      q.projectId,
    ]);
    assert.equal(n.rows[0].n, 3);
  });

  it("two nodes on one database: concurrent repeats across nodes store one event, one increment", async () => {
    const a = await startTestApp(GENEROUS_LIMITS);
    apps.push(a);
    const b = await startTestApp(GENEROUS_LIMITS, { databaseUrl: a.databaseUrl });
    apps.push(b);
    const q = await project(a.rest);
    for (let round = 0; round < 5; round++) {
      const id = randomUUID();
      const answers = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          (i % 2 ? b : a).rest.post(
            i % 4 < 2 ? "/v1/events" : "/v1/events/batch",
            i % 4 < 2 ? { id, type: "idem.nodes" } : { events: [{ id, type: "idem.nodes" }] },
            { key: q.key },
          ),
        ),
      );
      for (const r of answers) assert.equal(r.status, 202, r.text);
      const ids = answers.map((r, i) => (i % 4 < 2 ? r.body.data.id : r.body.data.events[0].id));
      assert.equal(new Set(ids).size, 1, JSON.stringify(ids));
      const metric = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? b : a).rest.post(
            "/v1/projects/self/metrics",
            { id, type: "increment", name: "idem_nodes", value: 1 },
            { key: q.key },
          ),
        ),
      );
      for (const r of metric) assert.equal(r.status, 201, r.text);
    }
    const n = await a.app.deps.db.query("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND type = $2", [
      q.projectId,
      "idem.nodes",
    ]);
    assert.equal(n.rows[0].n, 5);
    const total = await a.rest.post("/v1/projects/self/metrics/current", { name: "idem_nodes" }, { key: q.key });
    assert.equal(total.body.data.value, 5, total.text);
  });
});
