import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { COLUMN_ALIASES, EVENT_COLUMNS, EVENT_FIELD_NAMES, EVENT_RECORD } from "../../src/events/record.js";
import { COPY_MIN_ROWS } from "../../src/events/ingest.js";
import { useProject } from "../helpers/use.js";
import { Receiver, waitFor } from "./receiver.js";

// The event record is one table (src/events/record.ts): every reader writes the same object, the
// one GET /v1/projects/:id/events/:eventId answers, with exactly the table's fields in its order, and
// both write paths (one INSERT, COPY for large groups) store every field. A webhook payload's `data`
// (built in SQL at send time) is that object too; this file also runs with Temporal as the runner.

let rx: Receiver;
const { t, p } = useProject({ WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_BACKOFF_BASE_MS: "50" }, {}, async () => {
  rx = await Receiver.start();
});
after(() => rx.close());

const owner = () => ({ cookie: p.owner.cookie });
const data = { amount: 12.5, count: 3, ok: true, none: null, items: [1, "two", { three: 3 }], note: 'é😀 "q" \\ \t\n' };
/** An event with every field of the record set. */
const full = (userId: string, n = 0) => ({
  type: "order.paid",
  userId,
  groupId: `g-${userId}`,
  source: "checkout",
  timestamp: new Date(Date.UTC(2026, 10, 20, 10, 0, 0, 123) + n).toISOString(),
  data: { ...data, n },
  context: { locale: "fr-FR", page: { path: "/cart" } },
  tags: { env: "prod", "a b": "c,d" },
});

async function getEvent(id: string) {
  const r = await t.rest.get(`/v1/projects/${p.projectId}/events/${id}`, { key: p.key });
  assert.equal(r.status, 200, r.text);
  return r.body.data as Record<string, unknown>;
}
async function query(filters: object) {
  const r = await t.rest.post(
    `/v1/projects/${p.projectId}/events/query`,
    { filters, pagination: { limit: 100 } },
    { key: p.key },
  );
  assert.equal(r.status, 200, r.text);
  return r.body.data as Record<string, unknown>[];
}
const lines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));

describe("the event record: one table, every reader", () => {
  it("a webhook payload's data deep-equals GET .../events/:eventId, as do the list, the query and both exports", async () => {
    const url = rx.on("/record", () => ({ status: 200 }));
    const w = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: "record", url, events: ["order.paid"] },
      owner(),
    );
    assert.equal(w.status, 201, w.text);
    const sent = full("u-record");
    const ingested = await t.rest.post("/v1/events", sent, { key: p.key });
    assert.equal(ingested.status, 202, ingested.text);
    const id = ingested.body.data.id as string;

    const event = await getEvent(id);
    // Exactly the table's fields, in its order (the message's), and every one set.
    assert.deepEqual(Object.keys(event), EVENT_FIELD_NAMES);
    for (const [k, v] of Object.entries(event)) assert.notEqual(v, null, `${k} is set`);
    assert.deepEqual(
      [event.type, event.userId, event.groupId, event.timestamp, event.data, event.tags],
      [sent.type, sent.userId, sent.groupId, sent.timestamp, sent.data, sent.tags],
    );
    assert.deepEqual(ingested.body.data, event, "the ingest answer");

    const [delivery] = await waitFor(() => (rx.at("/record").length ? rx.at("/record") : undefined), "the delivery");
    const payload = JSON.parse(delivery.raw);
    assert.deepEqual(payload.data, event, "the webhook payload's data");
    assert.deepEqual(Object.keys(payload.data).sort(), [...EVENT_FIELD_NAMES].sort());

    const list = await t.rest.get(`/v1/projects/${p.projectId}/events?userId=u-record`, { key: p.key });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.data, [event], "the event list");
    assert.deepEqual(await query({ field: "userId", operator: "equals", value: "u-record" }), [event], "events/query");

    const exported = await t.rest.post(
      `/v1/projects/${p.projectId}/events/export`,
      { filters: { field: "userId", operator: "equals", value: "u-record" } },
      { key: p.key },
    );
    assert.equal(exported.status, 200, exported.text);
    // Byte for byte the REST JSON of the event (same keys, same order).
    assert.equal(exported.text, JSON.stringify(event) + "\n", "the NDJSON export");
    const csv = await t.rest.post(
      `/v1/projects/${p.projectId}/events/export`,
      { format: "csv", filters: { field: "userId", operator: "equals", value: "u-record" } },
      { key: p.key },
    );
    assert.equal(csv.status, 200, csv.text);
    assert.equal(
      csv.text.split("\r\n")[0],
      "id,type,timestamp,userId,groupId,sourceId",
      "the CSV export's default columns",
    );

    const user = await t.rest.get(`/v1/projects/${p.projectId}/users/u-record/export`, { key: p.key });
    assert.equal(user.status, 200, user.text);
    assert.deepEqual(lines(user.text).slice(1), [event], "the user export");
  });

  it("every filter alias of the table names its field: equals the GET value finds the event", async () => {
    const r = await t.rest.post("/v1/events", full("u-alias"), { key: p.key });
    assert.equal(r.status, 202, r.text);
    const event = await getEvent(r.body.data.id);
    const checked: string[] = [];
    for (const f of EVENT_RECORD) {
      for (const alias of f.aliases) {
        assert.equal(COLUMN_ALIASES.get(alias)?.column, f.column);
        const found = await query({
          and: [
            { field: "userId", operator: "equals", value: "u-alias" },
            { field: alias, operator: "equals", value: event[f.field] },
          ],
        });
        assert.deepEqual(found, [event], `the alias ${alias}`);
        checked.push(alias);
      }
    }
    assert.deepEqual(checked.sort(), [...COLUMN_ALIASES.keys()].sort());
  });

  it("both write paths store every field: one INSERT for a small group, COPY for a large one", async () => {
    for (const size of [1, COPY_MIN_ROWS]) {
      const userId = `u-write-${size}`;
      const events = Array.from({ length: size }, (_, n) => full(userId, n));
      const r = await t.rest.post("/v1/events/batch", { events }, { key: p.key });
      assert.equal(r.status, 202, r.text);
      assert.equal(r.body.data.accepted, size, r.text);
      for (const n of [0, size - 1]) {
        const got = await getEvent(r.body.data.events[n].id);
        assert.deepEqual(Object.keys(got), EVENT_FIELD_NAMES);
        // context: the sent one merged with the server's (ip, userAgent, receivedAt).
        const { source: _source, context, ...rest } = events[n];
        for (const [k, v] of Object.entries(rest)) assert.deepEqual(got[k], v, `${k} through ${size} rows`);
        assert.deepEqual({ ...(got.context as object), ...context }, got.context, `context through ${size} rows`);
        assert.equal(typeof got.sourceId, "string", `sourceId through ${size} rows`);
      }
    }
  });

  it("every column of the table exists in the events table with the table's type (a new field needs its migration)", async () => {
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const r = await db.query<{ column_name: string; type: string }>(
        `SELECT a.attname AS column_name, format_type(a.atttypid, NULL) AS type FROM pg_attribute a
         WHERE a.attrelid = 'events'::regclass AND a.attnum > 0 AND NOT a.attisdropped`,
      );
      const types = new Map(r.rows.map((x) => [x.column_name, x.type]));
      const alias: Record<string, string> = { timestamptz: "timestamp with time zone" };
      for (const c of EVENT_COLUMNS)
        assert.equal(types.get(c.column), alias[c.sqlType] ?? c.sqlType, `events.${c.column} (${c.sqlType})`);
    } finally {
      await db.end();
    }
  });
});
