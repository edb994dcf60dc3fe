import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { expandOutbox } from "../../src/webhooks/outbox.js";
import { Receiver, waitFor } from "./receiver.js";

// The delivery outbox: the ingest transaction writes one row per (batch, watching webhook); the
// expander turns rows into deliveries exactly once. ROLE=api runs no expander, so the rows written
// by ingestion stay put and the test expands them itself, from several connections at once (as
// several worker nodes would), then a worker node expands and sends what is left.

let t: TestApp;
let p: ProjectFixture;
let rx: Receiver;
let db: pg.Pool;

before(async () => {
  t = await startTestApp({ ROLE: "api", WEBHOOK_ALLOW_PRIVATE: "true" });
  p = await project(t.rest);
  rx = await Receiver.start();
  db = new pg.Pool({ connectionString: t.databaseUrl, max: 6 });
});
after(async () => {
  await db?.end();
  await t.close();
  await rx.close();
});

const owner = () => ({ cookie: p.owner.cookie });
async function hook(path: string, events: string[]) {
  const r = await t.rest.post(
    `/v1/projects/${p.projectId}/webhooks`,
    { name: path, url: rx.on(path, () => ({ status: 200 })), events },
    owner(),
  );
  assert.equal(r.status, 201, r.text);
  return r.body.data.id as string;
}
async function batch(types: string[]) {
  const r = await t.rest.post(
    "/v1/events/batch",
    { events: types.map((type, i) => ({ type, data: { i } })) },
    { key: p.key },
  );
  assert.equal(r.status, 202, r.text);
  return r.body.data.events.map((e: any) => e.id) as string[];
}

describe("delivery outbox", () => {
  it("one outbox row per batch and watching webhook; expanded exactly once by concurrent expanders", async () => {
    const a = await hook("/ob-a", ["o.paid", "o.refunded"]);
    const b = await hook("/ob-b", ["o.paid"]);
    const ids1 = await batch(["o.paid", "o.refunded", "other", "o.paid", "o.paid"]);
    const ids2 = await batch(["o.paid", "o.refunded"]);

    const ob = await db.query(
      "SELECT webhook_id, cardinality(event_ids) AS n FROM webhook_outbox WHERE project_id = $1 ORDER BY id",
      [p.projectId],
    );
    assert.deepEqual(
      ob.rows.map((r) => [r.webhook_id, r.n]),
      [
        [a, 4],
        [b, 3],
        [a, 2],
        [b, 1],
      ],
    );
    assert.equal(
      (await db.query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1", [p.projectId])).rows[0]
        .n,
      0,
    );

    // Disabled after its events were accepted: its deliveries exist, paused (as before the outbox).
    const off = await t.rest.patch(`/v1/projects/${p.projectId}/webhooks/${b}`, { enabled: false }, owner());
    assert.equal(off.status, 200, off.text);

    // Four expanders, one row at a time, until the outbox is empty.
    let expanded = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (;;) {
          const r = await expandOutbox(db, 1, new Date(), 5);
          expanded += r.rows;
          if (r.rows === 0) break;
        }
      }),
    );
    assert.equal(expanded, 4);
    assert.equal((await db.query("SELECT count(*)::int AS n FROM webhook_outbox")).rows[0].n, 0);

    const d = await db.query<{
      webhook_id: string;
      event_id: string;
      id: string;
      next_attempt_at: Date | null;
      status: string;
      attempt_limit: number;
    }>(
      "SELECT webhook_id, event_id, id, next_attempt_at, status, attempt_limit FROM webhook_deliveries WHERE project_id = $1",
      [p.projectId],
    );
    const of = (w: string) => d.rows.filter((r) => r.webhook_id === w);
    const expectA = [ids1[0], ids1[1], ids1[3], ids1[4], ids2[0], ids2[1]].sort();
    const expectB = [ids1[0], ids1[3], ids1[4], ids2[0]].sort();
    assert.deepEqual(
      of(a)
        .map((r) => r.event_id)
        .sort(),
      expectA,
      "each event once for a",
    );
    assert.deepEqual(
      of(b)
        .map((r) => r.event_id)
        .sort(),
      expectB,
      "each event once for b",
    );
    assert.equal(new Set(d.rows.map((r) => r.id)).size, d.rows.length);
    for (const r of d.rows) {
      assert.match(r.id, /^whd_[0-9a-f]{24}$/);
      assert.equal(r.status, "pending");
      assert.equal(r.attempt_limit, 5);
    }
    assert.ok(
      of(a).every((r) => r.next_attempt_at !== null),
      "a's deliveries are due",
    );
    assert.ok(
      of(b).every((r) => r.next_attempt_at === null),
      "b's deliveries are paused",
    );

    // Enabling b makes its paused deliveries due, like any paused delivery.
    await t.rest.patch(`/v1/projects/${p.projectId}/webhooks/${b}`, { enabled: true }, owner());
    const due = await db.query(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1 AND next_attempt_at IS NOT NULL",
      [b],
    );
    assert.equal(due.rows[0].n, 4);
  });

  it("a deleted webhook's queued rows go with it; a worker started later expands and sends what is left", async () => {
    const gone = await hook("/ob-gone", ["late"]);
    const kept = await hook("/ob-kept", ["late"]);
    const ids = await batch(["late", "late", "late"]);
    assert.equal(
      (await db.query("SELECT count(*)::int AS n FROM webhook_outbox WHERE webhook_id = ANY($1)", [[gone, kept]]))
        .rows[0].n,
      2,
    );
    assert.equal((await t.rest.del(`/v1/projects/${p.projectId}/webhooks/${gone}`, owner())).status, 204);
    assert.equal(
      (await db.query("SELECT count(*)::int AS n FROM webhook_outbox WHERE webhook_id = $1", [gone])).rows[0].n,
      0,
    );

    // A worker node on the same database: its start-up pass expands the row left behind.
    const worker = await startTestApp(
      { ROLE: "worker", WEBHOOK_ALLOW_PRIVATE: "true" },
      { databaseUrl: t.databaseUrl },
    );
    try {
      await waitFor(() => rx.at("/ob-kept").length >= 3, "three deliveries sent by the worker");
      const list = await waitFor(async () => {
        const r = await t.rest.get(`/v1/projects/${p.projectId}/webhooks/${kept}/deliveries`, owner());
        return r.body?.data?.length === 3 && r.body.data.every((x: any) => x.status === "succeeded")
          ? r.body.data
          : undefined;
      }, "three succeeded deliveries");
      assert.deepEqual(list.map((x: any) => x.eventId).sort(), [...ids].sort());
      assert.deepEqual(
        rx
          .at("/ob-kept")
          .map((r) => r.headers["x-vigil-delivery-id"])
          .sort(),
        list.map((x: any) => x.id).sort(),
      );
      assert.equal(rx.at("/ob-gone").length, 0);
    } finally {
      await worker.close();
    }
  });
});

describe("delivery outbox: a row skipped under its webhook's lock", () => {
  it("is expanded soon after the lock goes, not at the 30 s safety net", async () => {
    // A node that expands (ROLE all), on its own database.
    const node = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: "true" });
    const sql = new pg.Client({ connectionString: node.databaseUrl });
    await sql.connect();
    try {
      const q = await project(node.rest);
      const created = await node.rest.post(
        `/v1/projects/${q.projectId}/webhooks`,
        { name: "locked", url: rx.on("/ob-locked", () => ({ status: 200 })), events: ["locked.event"] },
        { cookie: q.owner.cookie },
      );
      assert.equal(created.status, 201, created.text);
      // The lock an attempt's failing-streak UPDATE (store.ts noteOutcomes) or a PATCH takes on the webhook row.
      await sql.query("BEGIN");
      await sql.query("SELECT 1 FROM webhooks WHERE id = $1 FOR NO KEY UPDATE", [created.body.data.id]);
      const r = await node.rest.post("/v1/events", { type: "locked.event" }, { key: q.key });
      assert.equal(r.status, 202, r.text);
      // The expander's pass (woken by the ingest's NOTIFY) skips the row while the lock is held.
      await new Promise((res) => setTimeout(res, 1_000));
      assert.equal(rx.at("/ob-locked").length, 0, "nothing sent while the webhook row is locked");
      assert.equal(
        (await sql.query("SELECT count(*)::int AS n FROM webhook_outbox")).rows[0].n,
        1,
        "the row waits in the outbox",
      );
      await sql.query("COMMIT");
      const released = Date.now();
      await waitFor(() => rx.at("/ob-locked").length === 1, "the delivery after the lock went", 5_000);
      assert.ok(Date.now() - released < 5_000);
    } finally {
      await sql.end();
      await node.close();
    }
  });
});
