// One check of free-form JSON input (src/shared/json.ts) on every route that takes some: numbers
// must be finite (1e400 parses as Infinity; a binary protobuf double may be NaN) and are refused
// with a 400 naming the field; keys are data, `__proto__` and `constructor` included.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import { errorBody } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

let webhookId: string;
let monitorId: string;
const base = () => `/v1/projects/${p.projectId}`;

const { t, p } = useProject({ WEBHOOK_ALLOW_PRIVATE: "true" }, {}, async () => {
  const w = await t.rest.post(
    `${base()}/webhooks`,
    { name: "sink", type: "http", url: "http://127.0.0.1:9/sink", events: ["event.created"] },
    { cookie: p.owner.cookie },
  );
  assert.equal(w.status, 201, w.text);
  webhookId = w.body.data.id;
  const m = await t.rest.post(`${base()}/monitors`, { name: "m", slug: "json-values" }, { key: p.key });
  monitorId = m.body.data.id;
});

/** A raw JSON body (1e400 cannot be written by JSON.stringify). */
const raw = (method: string, path: string, body: string, auth: "key" | "cookie" = "key") =>
  t.rest.req(method, path, {
    raw: body,
    contentType: "application/json",
    ...(auth === "key" ? { key: p.key } : { cookie: p.owner.cookie }),
  });

// [route, method, path, auth, body with a marker X standing for the value, the field a refusal names]
const ROUTES: [string, string, () => string, "key" | "cookie", string, string][] = [
  ["event data", "POST", () => "/v1/events", "key", '{"type":"j","data":{"n":{"deep":[1,X]}}}', "data.n.deep[1]"],
  ["event context", "POST", () => "/v1/events", "key", '{"type":"j","context":{"c":X}}', "context.c"],
  ["event tags", "POST", () => "/v1/events", "key", '{"type":"j","tags":{"t":X}}', "tags.t"],
  [
    "identify properties",
    "POST",
    () => `${base()}/identify`,
    "cookie",
    '{"externalId":"u","properties":{"a":{"b":X}}}',
    "properties.a.b",
  ],
  [
    "monitor metadata (create)",
    "POST",
    () => `${base()}/monitors`,
    "key",
    '{"name":"m2","metadata":{"a":X}}',
    "metadata.a",
  ],
  ["monitor tags (create)", "POST", () => `${base()}/monitors`, "key", '{"name":"m3","tags":{"a":[X]}}', "tags.a[0]"],
  [
    "monitor metadata (update)",
    "PATCH",
    () => `${base()}/monitors/${monitorId}`,
    "key",
    '{"metadata":{"a":X}}',
    "metadata.a",
  ],
  [
    "heartbeat metadata",
    "POST",
    () => `${base()}/heartbeats/json-values`,
    "key",
    '{"metadata":{"latency":X}}',
    "metadata.latency",
  ],
  [
    "metric tags",
    "POST",
    () => `${base()}/metrics`,
    "key",
    '{"type":"measurement","name":"j","value":1,"tags":{"t":X}}',
    "tags.t",
  ],
  [
    "webhook test data",
    "POST",
    () => `${base()}/webhooks/${webhookId}/test`,
    "cookie",
    '{"data":{"amount":X}}',
    "data.amount",
  ],
];

describe("numbers beyond float64 range", () => {
  for (const [label, method, path, auth, body, field] of ROUTES) {
    it(`${label}: 1e400 and -1e400 are a 400 naming ${field}; 1e300 is fine`, async () => {
      for (const x of ["1e400", "-1e400"]) {
        const r = await raw(method, path(), body.replace("X", x), auth);
        assert.equal(r.status, 400, `${x}: ${r.text}`);
        const e = errorBody(r);
        assert.ok(JSON.stringify(e.details).includes(`"${field}"`), `names ${field}: ${r.text}`);
      }
      const ok = await raw(
        method,
        path(),
        body.replace("X", "1e300").replace('"m2"', '"m4"').replace('"m3"', '"m5"'),
        auth,
      );
      assert.ok(ok.status >= 200 && ok.status < 300, ok.text);
    });
  }

  it("a batch refuses the item (event or metric) and keeps the others", async () => {
    const ev = await raw("POST", "/v1/events/batch", '{"events":[{"type":"ok"},{"type":"j","tags":{"t":1e400}}]}');
    assert.equal(ev.status, 202, ev.text);
    assert.deepEqual([ev.body.data.accepted, ev.body.data.errors.map((e: { index: number }) => e.index)], [1, [1]]);
    const m = await raw(
      "POST",
      `${base()}/metrics/batch`,
      '{"metrics":[{"type":"measurement","name":"j","value":1},{"type":"measurement","name":"j","value":1,"tags":{"t":-1e400}}]}',
    );
    assert.equal(m.status, 201, m.text);
    assert.deepEqual([m.body.data.accepted, m.body.data.errors.map((e: { index: number }) => e.index)], [1, [1]]);
  });

  it("NaN and Infinity sent as binary protobuf doubles over gRPC are INVALID_ARGUMENT", async () => {
    const headers = { authorization: `Bearer ${p.key}` };
    const uptime = createClient(UptimeService, createGrpcTransport({ baseUrl: t.url }));
    const events = createClient(EventService, createGrpcTransport({ baseUrl: t.url }));
    for (const bad of [NaN, Infinity, -Infinity]) {
      await assert.rejects(
        uptime.sendHeartbeat({ projectId: "self", monitorSlug: "json-values", metadata: { x: bad } }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
        String(bad),
      );
      await assert.rejects(
        uptime.createMonitor({ projectId: "self", name: "g", metadata: { x: { y: bad } } }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
        String(bad),
      );
      await assert.rejects(
        events.ingestEvent({ type: "g", data: { x: bad } }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
        String(bad),
      );
    }
    // Nothing of it was stored: the monitor's metadata is unchanged.
    const m = await t.rest.get(`${base()}/monitors/${monitorId}`, { key: p.key });
    assert.equal(JSON.stringify(m.body.data.metadata).includes("null"), false, m.text);
  });
});

describe("keys are data", () => {
  const PROTO = '{"__proto__":{"x":1},"constructor":1,"toString":"s"}';
  const expectKeys = (o: Record<string, unknown>, label: string) => {
    assert.deepEqual(Object.keys(o).sort(), ["__proto__", "constructor", "toString"], `${label}: ${JSON.stringify(o)}`);
    assert.deepEqual(Object.getOwnPropertyDescriptor(o, "__proto__")?.value, { x: 1 }, label);
    assert.equal(o.constructor, 1, label);
  };

  it("identify properties keep __proto__ and constructor, and read back with the user", async () => {
    const r = await raw("POST", `${base()}/identify`, `{"externalId":"proto-user","properties":${PROTO}}`, "cookie");
    assert.equal(r.status, 200, r.text);
    expectKeys(JSON.parse(r.text).data.properties, "identify answer");
    const u = await t.rest.get(`${base()}/users/proto-user`, { key: p.key });
    expectKeys(JSON.parse(u.text).data.properties, "user read");
    // A second identify merges onto them, still as data.
    await raw("POST", `${base()}/identify`, '{"externalId":"proto-user","properties":{"plan":"pro"}}', "cookie");
    const again = JSON.parse((await t.rest.get(`${base()}/users/proto-user`, { key: p.key })).text).data.properties;
    assert.deepEqual(Object.keys(again).sort(), ["__proto__", "constructor", "plan", "toString"]);
  });

  it("group properties from $group events keep them", async () => {
    const r = await raw(
      "POST",
      "/v1/events/batch",
      `{"events":[{"type":"$group","groupId":"proto-group","data":${PROTO}}]}`,
    );
    assert.equal(r.status, 202, r.text);
    await t.rest.get(`${base()}/users`, { key: p.key }); // settles the derived records
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const g = await db.query(
        "SELECT properties::text AS p FROM groups WHERE project_id = $1 AND group_id = 'proto-group'",
        [p.projectId],
      );
      expectKeys(JSON.parse(g.rows[0].p), "group");
    } finally {
      await db.end();
    }
  });

  it("monitor metadata and tags (create, update), heartbeat metadata keep them", async () => {
    const c = await raw(
      "POST",
      `${base()}/monitors`,
      `{"name":"proto","slug":"proto-mon","metadata":${PROTO},"tags":${PROTO}}`,
    );
    assert.equal(c.status, 201, c.text);
    const id = JSON.parse(c.text).data.id;
    const got = JSON.parse((await t.rest.get(`${base()}/monitors/${id}`, { key: p.key })).text).data;
    expectKeys(got.metadata, "monitor metadata");
    expectKeys(got.tags, "monitor tags");
    const u = await raw("PATCH", `${base()}/monitors/${id}`, `{"metadata":${PROTO}}`);
    expectKeys(JSON.parse(u.text).data.metadata, "updated metadata");
    const hb = await raw("POST", `${base()}/heartbeats/proto-mon`, `{"metadata":${PROTO}}`);
    assert.equal(hb.status, 200, hb.text);
    const list = JSON.parse((await t.rest.get(`${base()}/monitors/${id}/heartbeats`, { key: p.key })).text).data;
    expectKeys(list[0].metadata, "heartbeat metadata");
  });

  it("metric tags keep a tag named __proto__", async () => {
    const r = await raw(
      "POST",
      `${base()}/metrics`,
      '{"type":"measurement","name":"proto_metric","value":1,"tags":{"__proto__":"p","constructor":"c"}}',
    );
    assert.equal(r.status, 201, r.text);
    const pts = await t.rest.post(
      `${base()}/metrics/points`,
      { name: "proto_metric", time: { start: "2000-01-01T00:00:00Z", end: "2100-01-01T00:00:00Z" } },
      { key: p.key },
    );
    const tags = JSON.parse(pts.text).data.points[0].tags;
    assert.deepEqual(Object.keys(tags).sort(), ["__proto__", "constructor"], pts.text);
    assert.equal(Object.getOwnPropertyDescriptor(tags, "__proto__")?.value, "p");
  });

  it("webhook test data keeps them in the delivery's payload", async () => {
    const r = await raw("POST", `${base()}/webhooks/${webhookId}/test`, `{"data":${PROTO}}`, "cookie");
    assert.equal(r.status, 202, r.text);
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const d = await db.query("SELECT payload::text AS p FROM webhook_deliveries WHERE id = $1", [
        JSON.parse(r.text).data.id,
      ]);
      expectKeys(JSON.parse(d.rows[0].p), "webhook test payload");
    } finally {
      await db.end();
    }
  });
});
