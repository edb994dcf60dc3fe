// Client-id claims per key kind (decisions.md "Corrections from the second round"): a publishable key
// can never read an event it did not send through a client `id`, nor claim an id away from a secret
// key. Each key kind's repeat answers from its own namespace only; single events and batches, REST
// and Connect, both orders. Metric points and heartbeats (secret-only) keep their idempotency.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { publishableKey } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

let pub: string;
const { t, p } = useProject(GENEROUS_LIMITS, {}, async () => {
  pub = (await publishableKey(t.rest, p)).secret;
});

async function send(body: object, key: string) {
  // The server's requests carry a user agent of their own: a leak of its event would show it.
  const headers: Record<string, string> = key === pub ? {} : { "user-agent": "agent/secret-server" };
  const r = await t.rest.post("/v1/events", body, { key, headers });
  assert.equal(r.status, 202, r.text);
  return r.body.data;
}
async function batch(events: unknown[], key: string) {
  const r = await t.rest.post("/v1/events/batch", { events }, { key });
  assert.equal(r.status, 202, r.text);
  return r.body.data;
}
const stored = async (type: string) =>
  (
    await t.app.deps.db.query<{ id: string; data: object }>(
      "SELECT id::text, data FROM events WHERE project_id = $1 AND type = $2 ORDER BY id",
      [p.projectId, type],
    )
  ).rows;

describe("client ids are claimed per key kind", () => {
  it("a publishable repeat of a secret key's id is stored as its own and never answers the secret event", async () => {
    const id = randomUUID();
    const secret = await send({ id, type: "kk.secret", userId: "u-1", data: { ssn: "123-45-6789" } }, p.key);
    const mine = await send({ id, type: "kk.pub" }, pub);
    assert.notEqual(mine.id, secret.id);
    assert.equal(mine.type, "kk.pub");
    assert.equal(mine.userId, null);
    assert.deepEqual(mine.data, {});
    assert.doesNotMatch(JSON.stringify(mine), /123-45-6789|secret-server/);
    assert.equal((await stored("kk.pub")).length, 1);
    // Each kind's repeat answers from its own namespace.
    assert.deepEqual(await send({ id, type: "kk.pub.again" }, pub), mine);
    assert.deepEqual(await send({ id, type: "kk.secret.again" }, p.key), secret);
    assert.equal((await stored("kk.secret")).length, 1);
    assert.equal((await stored("kk.pub")).length, 1);
    assert.equal((await stored("kk.pub.again")).length + (await stored("kk.secret.again")).length, 0);
  });

  it("a publishable key cannot claim an id first and swallow a secret key's later event", async () => {
    const id = randomUUID();
    const first = await send({ id, type: "kk.squat" }, pub);
    const server = await send({ id, type: "kk.server", data: { order: 7 } }, p.key);
    assert.notEqual(server.id, first.id);
    assert.equal(server.type, "kk.server");
    assert.deepEqual(server.data, { order: 7 });
    assert.deepEqual(
      (await stored("kk.server")).map((r) => r.id),
      [server.id],
    );
  });

  it("batches: a publishable batch never answers a secret event's id, and the reverse", async () => {
    const a = randomUUID();
    const b = randomUUID();
    const s = await batch([{ id: a, type: "kk.b.secret", data: { ssn: "1" } }], p.key);
    const q = await batch([{ id: b, type: "kk.b.pub" }], pub);
    const mixed = await batch(
      [
        { id: a, type: "kk.b.pub2" },
        { id: b, type: "kk.b.pub3" },
      ],
      pub,
    );
    assert.notEqual(mixed.events[0].id, s.events[0].id);
    assert.equal(mixed.events[0].type, "kk.b.pub2");
    assert.equal(mixed.events[1].id, q.events[0].id); // its own repeat
    const back = await batch(
      [
        { id: a, type: "kk.b.x" },
        { id: b, type: "kk.b.secret2" },
      ],
      p.key,
    );
    assert.equal(back.events[0].id, s.events[0].id);
    assert.notEqual(back.events[1].id, q.events[0].id);
    assert.equal(back.events[1].type, "kk.b.secret2");
    assert.equal((await stored("kk.b.pub2")).length, 1);
    assert.equal((await stored("kk.b.secret2")).length, 1);
    assert.equal((await stored("kk.b.pub3")).length + (await stored("kk.b.x")).length, 0);
  });

  it("over Connect, as over REST", async () => {
    const events = createClient(EventService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }));
    const id = randomUUID();
    const auth = (k: string) => ({ headers: { authorization: `Bearer ${k}` } });
    const secret = await events.ingestEvent(
      { id, type: "kk.c.secret", userId: "u-2", data: { ssn: "987-65-4321" } },
      auth(p.key),
    );
    const mine = await events.ingestEvent({ id, type: "kk.c.pub" }, auth(pub));
    assert.notEqual(mine.data?.id, secret.data?.id);
    assert.equal(mine.data?.type, "kk.c.pub");
    assert.equal(mine.data?.userId, undefined);
    const again = await events.ingestEvent({ id, type: "kk.c.pub.again" }, auth(pub));
    assert.equal(again.data?.id, mine.data?.id);
  });

  it("metric points and heartbeats with ids stay idempotent (secret keys)", async () => {
    const id = randomUUID();
    for (let i = 0; i < 2; i++) {
      const m = await t.rest.post(
        "/v1/projects/self/metrics",
        { id, type: "increment", name: "kk.metric", value: 1 },
        { key: p.key },
      );
      assert.equal(m.status, 201, m.text);
    }
    const points = await t.app.deps.db.query("SELECT 1 FROM ingest_ids WHERE project_id = $1 AND client_id = $2", [
      p.projectId,
      id,
    ]);
    assert.equal(points.rowCount, 1);
    const hb = randomUUID();
    for (let i = 0; i < 2; i++) {
      const h = await t.rest.post("/v1/projects/self/heartbeats/kk-job", { id: hb, status: "up" }, { key: p.key });
      assert.ok(h.status < 300, h.text);
    }
    const beats = await t.app.deps.db.query("SELECT kind, key_kind FROM ingest_ids WHERE client_id = $1", [hb]);
    assert.deepEqual(beats.rows, [{ kind: "heartbeat", key_kind: "secret" }]);
  });
});
