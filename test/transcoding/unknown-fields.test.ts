// Strict REST bodies (decisions.md: "Unknown fields in a REST JSON body are a 400 `validation_failed`
// naming the field"), generated from the OpenAPI document: every operation with a request body gets
// bodies with keys that are no field of it (prototype-member names among them), nested ones inside
// its message fields, and the fields it does have (JSON and proto names) as a control, so that each
// 400 is shown to come from the extra key alone. Loose batch items (events/batch, metrics/batch) are
// refused one by one, naming the key, over REST and gRPC alike; the request message itself keeps
// protobuf's rules over gRPC and Connect.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { MetricsService } from "../../gen/vigil/v1/metrics_pb.js";
import { doc, operations, type Json, type Operation } from "../clients/openapi-check.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, pingKey } from "../helpers/fixtures.js";
import { sessionCookie, type Res } from "../helpers/rest.js";
import { useProject } from "../helpers/use.js";

let ping: { secret: string };
const { t, p } = useProject(GENEROUS_LIMITS, {}, async () => {
  ping = await pingKey(t.rest, p);
});

const bodyOps = operations.filter((o) => o.op.requestBody);
const PROTO_NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "prototype"];
const EXTRA_KEYS = ["properties", "extraField", ...PROTO_NAMES];

const label = (o: Operation) => `${o.verb} ${o.path}`;
const pathVars = (o: Operation) => [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
const pathOf = (o: Operation) =>
  o.path.replace(/\{(\w+)\}/g, (_, v: string) =>
    v === "projectId" ? p.projectId : v === "pingKey" ? ping.secret : "x1",
  );

/** A session of the owner of its own, for logout (which ends the session it is sent with). */
async function freshSession(): Promise<string> {
  return sessionCookie(await t.rest.post("/v1/auth/login", { email: p.owner.email, password: p.owner.password }));
}

/** Sends a raw JSON text to the operation with the credentials it takes (its `x-vigil-caller`). */
async function send(o: Operation, raw: string): Promise<Res> {
  const caller = o.op["x-vigil-caller"] as string;
  const cookie = o.op.operationId === "Logout" ? await freshSession() : p.owner.cookie;
  const r = await t.rest.req(o.verb, pathOf(o), {
    raw,
    contentType: "application/json",
    // A ping URL takes its key in the path (pathOf), no header.
    ...(caller === "apiKey" ? { key: p.key } : caller === "pingKey" ? {} : { cookie }),
  });
  assert.ok(r.status < 500, `${label(o)} ${raw.slice(0, 200)}: ${r.status} ${r.text}`);
  return r;
}

/** JSON text of an object with these keys (JSON.stringify of an object literal cannot hold `__proto__`). */
const objectText = (entries: [string, string][]) =>
  `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`;

/** The refusal the rule gives: 400 validation_failed, the message and details naming `field`. */
function assertUnknown(o: Operation, r: Res, field: string, why = "unknown field"): void {
  const what = `${label(o)} with ${field}`;
  assert.equal(r.status, 400, `${what}: ${r.status} ${r.text}`);
  const e = errorBody(r);
  assert.equal(e.code, "validation_failed", what);
  assert.ok(e.message.includes(`'${field}'`), `${what}: message ${e.message}`);
  assert.deepEqual(e.details, [{ field, message: why }], what);
}

/** Whether an answer is the unknown-field refusal (whatever it names). */
const isUnknownRefusal = (r: Res) =>
  r.status === 400 &&
  Array.isArray(r.body?.error?.details) &&
  r.body.error.details.some(
    (d: { message?: string }) => d.message === "unknown field" || d.message === "given by the path, not the body",
  );

/** The schema an operation's body is checked against (its `$ref`s resolved, `null` alternatives dropped). */
function resolve(s: Json): Json {
  if (s?.anyOf) return resolve(s.anyOf.find((x: Json) => x.type !== "null"));
  if (s?.$ref) return doc.components.schemas[(s.$ref as string).split("/").pop()!];
  return s;
}
const bodySchema = (o: Operation): Json => resolve(o.op.requestBody.content["application/json"].schema);

describe("unknown fields in a REST body", () => {
  it("the document has the body routes, each closed to other keys (additionalProperties: false)", () => {
    assert.ok(bodyOps.length >= 35, `only ${bodyOps.length} body routes`);
    for (const o of bodyOps) {
      const s = bodySchema(o);
      assert.equal(s.type, "object", label(o));
      assert.equal(s.additionalProperties, false, label(o));
      for (const prop of Object.values(s.properties as Record<string, Json>)) {
        const nested = resolve(prop.type === "array" ? prop.items : prop);
        if (nested?.properties) assert.equal(nested.additionalProperties, false, `${label(o)}: a nested input`);
      }
    }
  });

  it("every body route refuses a top-level key that is no field, prototype-member names included, and names it", async () => {
    for (const o of bodyOps) {
      // The control: the same request without the key is not refused for a field (it may fail otherwise).
      const control = await send(o, "{}");
      assert.ok(!isUnknownRefusal(control), `${label(o)} {}: ${control.text}`);
      const fields = Object.keys(bodySchema(o).properties);
      for (const key of EXTRA_KEYS.filter((k) => !fields.includes(k)))
        assertUnknown(o, await send(o, objectText([[key, "1"]])), key);
      // Beside valid-looking fields, and with a null value: still refused.
      const entries: [string, string][] = fields.map((f) => [f, "null"]);
      assertUnknown(o, await send(o, objectText([...entries, ["notAField", "null"]])), "notAField");
    }
  });

  it("every field a body does have is accepted by name, JSON or proto (snake_case) alike", async () => {
    let sent = 0;
    for (const o of bodyOps) {
      for (const f of Object.keys(bodySchema(o).properties)) {
        const snake = f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
        for (const name of new Set([f, snake])) {
          const r = await send(o, objectText([[name, "null"]]));
          assert.ok(!isUnknownRefusal(r), `${label(o)} {${name}: null}: ${r.text}`);
          sent++;
        }
      }
    }
    assert.ok(sent > 100, `only ${sent} bodies`);
  });

  it("a field given by the path is refused in the body, naming it", async () => {
    let checked = 0;
    for (const o of bodyOps) {
      for (const v of pathVars(o)) {
        const r = await send(o, objectText([[v, JSON.stringify(p.projectId)]]));
        assertUnknown(o, r, v, "given by the path, not the body");
        checked++;
      }
    }
    assert.ok(checked >= 25, `only ${checked} path fields`);
  });

  it("a key that is no field of a nested message is refused at its path, on every route that has one", async () => {
    let checked = 0;
    for (const o of bodyOps) {
      for (const [name, prop] of Object.entries(bodySchema(o).properties as Record<string, Json>)) {
        const list = prop.type === "array";
        const nested = resolve(list ? prop.items : prop);
        if (!nested?.properties) continue; // free-form JSON (Struct, Value) or a scalar
        for (const key of ["extra", "__proto__"]) {
          const inner = objectText([[key, "1"]]);
          const r = await send(o, objectText([[name, list ? `[${inner}]` : inner]]));
          // A batch's pass-through items (docs/architecture.md "Pass-through for bulk JSON") are
          // checked one by one: the item is rejected alone, naming the key, and the batch answered.
          if (list && r.status === 202 && r.body?.data?.rejected === 1) {
            assert.equal(r.body.data.errors[0].message, `${key}: unknown field '${key}'`, `${label(o)}: ${key}`);
            continue;
          }
          assertUnknown(o, r, list ? `${name}[0].${key}` : `${name}.${key}`);
        }
        checked++;
      }
    }
    // time, pagination, aggregations... on the analytics, events query and metrics routes.
    assert.ok(checked >= 8, `only ${checked} nested message fields`);
  });

  it("free-form JSON (Struct fields) keeps any key, prototype-member names included", async () => {
    const type = `free-${randomUUID()}`;
    const r = await t.rest.req("POST", "/v1/events", {
      raw: `{"type":"${type}","data":{"__proto__":{"a":1},"constructor":2,"properties":3}}`,
      contentType: "application/json",
      key: p.key,
    });
    assert.equal(r.status, 202, r.text);
    assert.deepEqual(r.body.data.data, JSON.parse('{"__proto__":{"a":1},"constructor":2,"properties":3}'));
  });

  it("Segment's `properties` on POST /v1/events is named, and nothing is stored", async () => {
    const type = `segment-${randomUUID()}`;
    const r = await t.rest.post("/v1/events", { type, properties: { plan: "pro" } }, { key: p.key });
    assertUnknown(
      bodyOps.find((o) => o.path === "/v1/events")!,
      r,
      "properties",
    );
    assert.match(errorBody(r).message, /unknown field 'properties'/);
    const list = await t.rest.get(`/v1/projects/${p.projectId}/events?type=${type}`, { key: p.key });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data, []);
    // The same event with its data where it belongs is stored.
    const ok = await t.rest.post("/v1/events", { type, data: { plan: "pro" } }, { key: p.key });
    assert.equal(ok.status, 202, ok.text);
  });

  it("a long or unprintable key is named shortened and escaped", async () => {
    const o = bodyOps.find((x) => x.path === "/v1/events")!;
    const long = "k".repeat(5000);
    const r = await send(o, objectText([[long, "1"]]));
    assertUnknown(o, r, "k".repeat(100) + "…");
    const nul = await send(o, objectText([["a\u0000b\n", "1"]]));
    assertUnknown(o, nul, "a\\u0000b\\n");
  });
});

describe("the other protocols keep protobuf's rules", () => {
  it("the Connect protocol's JSON ignores an unknown top-level key, as connect-es does (REST alone refuses it)", async () => {
    const type = `connect-${randomUUID()}`;
    const r = await fetch(`${t.url}/vigil.v1.EventService/IngestEvent`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${p.key}` },
      body: JSON.stringify({ type, properties: { plan: "pro" } }),
    });
    assert.equal(r.status, 200, await r.clone().text());
    const body = (await r.json()) as { data: { type: string; data: object } };
    assert.equal(body.data.type, type);
    assert.deepEqual(body.data.data, {});
  });
});

describe("unknown keys in batch items", () => {
  const errorsOf = (r: Res) => new Map((r.body.data.errors as Json[]).map((e) => [Number(e.index), e]));

  it("events/batch: each item with an unknown key is rejected alone, naming it; the others are stored", async () => {
    const type = `batch-${randomUUID()}`;
    const raw = `{"events":[
      {"type":"${type}","data":{"n":0}},
      {"type":"${type}","properties":{"n":1}},
      {"type":"${type}","user_id":"u2"},
      {"type":"${type}","__proto__":{"n":3}},
      {"type":"${type}","constructor":4},
      {"type":"${type}","id":"${randomUUID()}","userId":"u5","timestamp":"${new Date().toISOString()}"}
    ]}`;
    const r = await t.rest.req("POST", "/v1/events/batch", { raw, contentType: "application/json", key: p.key });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.received, 6);
    assert.equal(r.body.data.accepted, 2, r.text);
    assert.equal(r.body.data.rejected, 4);
    const errors = errorsOf(r);
    assert.deepEqual([...errors.keys()].sort(), [1, 2, 3, 4]);
    for (const e of errors.values()) assert.equal(e.code, "validation_failed");
    assert.equal(errors.get(1).message, "properties: unknown field 'properties'");
    assert.equal(errors.get(2).message, "user_id: unknown field 'user_id' (did you mean 'userId'?)");
    assert.equal(errors.get(3).message, "__proto__: unknown field '__proto__'");
    assert.equal(errors.get(4).message, "constructor: unknown field 'constructor'");
    const list = await t.rest.get(`/v1/projects/${p.projectId}/events?type=${type}`, { key: p.key });
    assert.equal(list.body.data.length, 2);
  });

  it("metrics/batch: each point with an unknown key (its project too) is rejected alone, naming it", async () => {
    const name = `m_${randomUUID().slice(0, 8)}`;
    const point = `"type":"increment","name":"${name}","value":1`;
    const raw = `{"metrics":[
      {${point}},
      {${point},"projectId":"${p.projectId}"},
      {${point},"labels":{"a":"b"}},
      {${point},"__proto__":{"a":1}},
      {${point},"unit":"ms","tags":{"__proto__":"kept"},"timestamp":"${new Date().toISOString()}","id":"${randomUUID()}"}
    ]}`;
    const r = await t.rest.req("POST", `/v1/projects/${p.projectId}/metrics/batch`, {
      raw,
      contentType: "application/json",
      key: p.key,
    });
    assert.ok(r.status < 300, r.text);
    assert.equal(Number(r.body.data.accepted), 2, r.text);
    assert.equal(Number(r.body.data.rejected), 3);
    const errors = errorsOf(r);
    assert.deepEqual([...errors.keys()].sort(), [1, 2, 3]);
    for (const e of errors.values()) assert.equal(e.code, "validation_failed");
    assert.equal(errors.get(1).message, "projectId: unknown field 'projectId'");
    assert.equal(errors.get(2).message, "labels: unknown field 'labels'");
    assert.equal(errors.get(3).message, "__proto__: unknown field '__proto__'");
  });

  it("over gRPC the items follow the same rule (they are JSON values there too)", async () => {
    const headers = { authorization: `Bearer ${p.key}` };
    const transport = createGrpcTransport({ baseUrl: t.url });
    const value = (json: string) => fromJson(ValueSchema, JSON.parse(json));
    const events = await createClient(EventService, transport).ingestEventBatch(
      { events: [value('{"type":"grpc-ok"}'), value('{"type":"grpc-bad","properties":{}}')] },
      { headers },
    );
    assert.equal(events.data!.accepted, 1);
    assert.deepEqual(
      events.data!.errors.map((e) => [e.index, e.code, e.message]),
      [[1, "validation_failed", "properties: unknown field 'properties'"]],
    );
    const metrics = await createClient(MetricsService, transport).recordMetricBatch(
      {
        projectId: "self",
        metrics: [
          value('{"type":"measurement","name":"grpc_m","value":2}'),
          value('{"type":"measurement","name":"grpc_m","value":2,"labels":{}}'),
        ],
      },
      { headers },
    );
    assert.equal(metrics.data!.accepted, 1n);
    assert.deepEqual(
      metrics.data!.errors.map((e) => [e.index, e.message]),
      [[1n, "labels: unknown field 'labels'"]],
    );
  });
});
