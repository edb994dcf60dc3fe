import assert from "node:assert/strict";
import http2 from "node:http2";
import { readdirSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { ScalarType, create, toBinary, toJson, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { AnalyticsService } from "../../gen/vigil/v1/analytics_pb.js";
import {
  GetMonitorRequestSchema,
  GetMonitorStatsRequestSchema,
  IncidentSchema,
  ListIncidentsRequestSchema,
  MonitorSchema,
  MonitorStatsSchema,
} from "../../gen/vigil/v1/uptime_pb.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { ingest } from "../helpers/events.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";

// Counts, limits and milliseconds are integers in the proto (issue #20: Python got 1.0), and REST
// still writes them as plain JSON numbers.

const GEN = new URL("../../gen/vigil/v1/", import.meta.url);

/** Every message of gen/vigil (nested ones too). */
async function allMessages(): Promise<DescMessage[]> {
  const out = new Map<string, DescMessage>();
  const walk = (m: DescMessage) => {
    if (out.has(m.typeName)) return;
    out.set(m.typeName, m);
    m.nestedMessages.forEach(walk);
  };
  for (const f of readdirSync(GEN).filter((n) => n.endsWith("_pb.ts"))) {
    const mod = (await import(new URL(f, GEN).href)) as Record<string, { kind?: string; messages?: DescMessage[] }>;
    for (const v of Object.values(mod)) if (v?.kind === "file") v.messages!.forEach(walk);
  }
  return [...out.values()];
}

// The only fractional quantities: metric and aggregation values, percentages, a funnel step's
// conversion (a ratio, 0..1) and median time between steps (microsecond precision, and the mean of
// the middle two for an even count), and latencies (a heartbeat may report 12.5 ms). Anything else
// typed double/float is an integral value mistyped.
const FRACTIONAL = /^(value|conversion|median_time_ms|uptime_percentage(_24h)?|(avg_|min_|max_)?latency_ms)$/;

describe("integral fields in the proto", () => {
  it("no field outside the fractional kinds is double or float", async () => {
    const messages = await allMessages();
    assert.ok(messages.length > 50, `walked ${messages.length} messages`);
    const bad: string[] = [];
    let fractional = 0;
    for (const m of messages) {
      for (const f of m.fields) {
        const scalar =
          f.fieldKind === "scalar"
            ? f.scalar
            : f.fieldKind === "list" && f.listKind === "scalar"
              ? f.scalar
              : undefined;
        if (scalar !== ScalarType.DOUBLE && scalar !== ScalarType.FLOAT) continue;
        if (FRACTIONAL.test(f.name)) fractional++;
        else bad.push(`${m.typeName}.${f.name} (${ScalarType[scalar]})`);
      }
    }
    assert.deepEqual(bad, [], "integral values typed as floating point");
    assert.ok(fractional >= 10, `the fractional allowance still matches real fields (${fractional})`);
  });
});

// A unary gRPC call over h2c by hand: the response message's raw bytes, not a client's decoding.
async function grpcRaw<S extends DescMessage>(
  url: string,
  path: string,
  schema: S,
  req: MessageInitShape<S>,
  key: string,
): Promise<Uint8Array> {
  const body = toBinary(schema, create(schema, req));
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  frame.set(body, 5);
  const session = http2.connect(url);
  try {
    return await new Promise<Uint8Array>((resolve, reject) => {
      const s = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
        authorization: `Bearer ${key}`,
      });
      const chunks: Buffer[] = [];
      s.on("data", (c: Buffer) => chunks.push(c));
      s.on("trailers", (t) => {
        if (t["grpc-status"] !== "0") reject(new Error(`grpc-status ${t["grpc-status"]}: ${t["grpc-message"]}`));
      });
      s.on("end", () => {
        const all = Buffer.concat(chunks);
        resolve(all.subarray(5, 5 + all.readUInt32BE(1)));
      });
      s.on("error", reject);
      s.end(frame);
    });
  } finally {
    session.close();
  }
}

/** The fields of one encoded message: number -> [wire type, raw value] (varints as bigint). */
function fields(bytes: Uint8Array): Map<number, { wire: WireType; value: bigint | number | Uint8Array }> {
  const out = new Map<number, { wire: WireType; value: bigint | number | Uint8Array }>();
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wire] = r.tag();
    const value =
      wire === WireType.Varint
        ? BigInt(r.int64())
        : wire === WireType.Bit64
          ? r.double()
          : wire === WireType.LengthDelimited
            ? r.bytes()
            : (r.skip(wire), 0);
    out.set(no, { wire, value });
  }
  return out;
}

/** Field `name` of `schema` in the encoded message: must be a varint; its value. */
function varint(schema: DescMessage, msg: Uint8Array, name: string): number {
  const f = schema.fields.find((x) => x.name === name);
  assert.ok(f, `${schema.typeName}.${name} exists`);
  const got = fields(msg).get(f.number);
  if (got === undefined) return 0; // proto3: a zero is not written
  assert.equal(got.wire, WireType.Varint, `${schema.typeName}.${name} is sent as an integer (varint), not a double`);
  return Number(got.value);
}

describe("integral fields on the wire and over REST", () => {
  let t: TestApp;
  let p: ProjectFixture;
  let id: string;
  before(async () => {
    t = await startTestApp();
    p = await project(t.rest);
    const base = `/v1/projects/${p.projectId}`;
    // An interval past 2^31 ms: int32 would not hold it.
    const m = await t.rest.post(
      `${base}/monitors`,
      { name: "Wire", slug: "wire", expectedIntervalMs: 3_000_000_000, gracePeriodMs: 1500 },
      { key: p.key },
    );
    assert.equal(m.status, 201, m.text);
    id = m.body.data.id;
    for (const status of ["up", "down", "up"]) {
      const hb = await t.rest.post(`${base}/heartbeats/wire`, { status, latencyMs: 12.5 }, { key: p.key });
      assert.equal(hb.status, 200, hb.text);
      await new Promise((r) => setTimeout(r, 5));
    }
  });
  after(() => t.close());

  it("GetMonitor, GetMonitorStats and ListIncidents send counts and milliseconds as varints, equal to REST's plain numbers", async () => {
    const rest = (path: string) => t.rest.get(`/v1/projects/${p.projectId}/monitors/${id}${path}`, { key: p.key });

    const monBytes = fields(
      await grpcRaw(
        t.url,
        "/vigil.v1.UptimeService/GetMonitor",
        GetMonitorRequestSchema,
        { projectId: "self", monitorId: id },
        p.key,
      ),
    ).get(1)!.value as Uint8Array;
    const monRest = (await rest("")).body.data;
    assert.equal(varint(MonitorSchema, monBytes, "expected_interval_ms"), 3_000_000_000);
    assert.equal(varint(MonitorSchema, monBytes, "grace_period_ms"), 1500);
    varint(MonitorSchema, monBytes, "time_up");
    assert.deepEqual(
      [monRest.expectedIntervalMs, monRest.gracePeriodMs, typeof monRest.timeUp],
      [3_000_000_000, 1500, "number"],
    );

    const statsBytes = fields(
      await grpcRaw(
        t.url,
        "/vigil.v1.UptimeService/GetMonitorStats",
        GetMonitorStatsRequestSchema,
        { projectId: "self", monitorId: id },
        p.key,
      ),
    ).get(1)!.value as Uint8Array;
    const statsRest = (await rest("/stats")).body.data;
    const wire = Object.fromEntries(
      ["incident_count", "total_heartbeats", "successful_heartbeats", "failed_heartbeats", "downtime_ms"].map((n) => [
        n,
        varint(MonitorStatsSchema, statsBytes, n),
      ]),
    );
    assert.deepEqual(wire, {
      incident_count: 1,
      total_heartbeats: 3,
      successful_heartbeats: 2,
      failed_heartbeats: 1,
      downtime_ms: statsRest.downtimeMs,
    });
    assert.ok(statsRest.downtimeMs > 0, JSON.stringify(statsRest));
    assert.deepEqual(
      [statsRest.incidentCount, statsRest.totalHeartbeats, statsRest.successfulHeartbeats, statsRest.failedHeartbeats],
      [1, 3, 2, 1],
    );
    // A latency stays fractional.
    assert.equal(statsRest.avgLatencyMs, 12.5);

    const listBytes = await grpcRaw(
      t.url,
      "/vigil.v1.UptimeService/ListIncidents",
      ListIncidentsRequestSchema,
      { projectId: "self", monitorId: id, limit: 10 },
      p.key,
    );
    const incBytes = fields(listBytes).get(1)!.value as Uint8Array;
    const incRest = (await rest("/incidents")).body.data[0];
    assert.equal(varint(IncidentSchema, incBytes, "duration_ms"), incRest.durationMs);
    assert.equal(typeof incRest.durationMs, "number");
  });

  it("analytics unique counts are int64 over gRPC and plain {value, count} over REST", async () => {
    await ingest(t.rest, p.key, [
      { type: "signup", timestamp: "2024-03-01T10:00:00Z", data: { plan: "pro" } },
      { type: "signup", timestamp: "2024-03-01T11:00:00Z", data: { plan: "pro" } },
      { type: "signup", timestamp: "2024-03-01T12:00:00Z", data: { plan: 7 } },
    ]);
    const time = { start: "2024-03-01T00:00:00Z", end: "2024-03-02T00:00:00Z" };
    const rest = await t.rest.post(
      `/v1/projects/${p.projectId}/analytics/unique`,
      { field: "plan", time },
      { key: p.key },
    );
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.text.includes('"values":[{"value":"pro","count":2},{"value":7,"count":1}]'), true, rest.text);
    const client = createClient(AnalyticsService, createGrpcTransport({ baseUrl: t.url }));
    const g = await client.unique(
      { projectId: "self", field: "plan", time },
      { headers: { authorization: `Bearer ${p.key}` } },
    );
    assert.deepEqual(
      g.data?.values.map((v) => [toJson(ValueSchema, v.value!), v.count]),
      [
        ["pro", 2n],
        [7, 1n],
      ],
    );
  });

  it("REST refuses fractional, huge and malformed integers with 400 validation_failed naming the field", async () => {
    const base = `/v1/projects/${p.projectId}`;
    const cases: [string, string, string][] = [
      ["POST", `${base}/monitors`, '{"name":"a","expectedIntervalMs":1.5}'],
      ["POST", `${base}/monitors`, '{"name":"a","gracePeriodMs":1e300}'],
      ["POST", `${base}/monitors`, '{"name":"a","expectedIntervalMs":"9223372036854775808"}'],
      ["PATCH", `${base}/monitors/${id}`, '{"expectedIntervalMs":9007199254740993}'],
      ["POST", `${base}/heartbeats/wire`, '{"gracePeriodMs":"1.5"}'],
      ["POST", `${base}/heartbeats/wire`, '{"expectedIntervalMs":"12"}'],
      ["GET", `${base}/monitors/${id}/heartbeats?limit=1.5`, ""],
      ["GET", `${base}/monitors/${id}/incidents?limit=1e300`, ""],
    ];
    for (const [method, path, raw] of cases) {
      const r = await t.rest.req(method, path, {
        key: p.key,
        raw: raw || undefined,
        contentType: raw ? "application/json" : undefined,
      });
      assert.equal(r.status, 400, `${method} ${path} ${raw}: ${r.text}`);
      assert.equal(r.body.error.code, "validation_failed", r.text);
      const field = /limit/.test(path) ? "limit" : /"(\w+)"/.exec(raw.replace('"name":"a",', ""))![1];
      assert.ok(JSON.stringify(r.body.error.details).includes(`"${field}"`), `details name ${field}: ${r.text}`);
    }
    // Whole numbers as strings are proto3 JSON, accepted as before.
    const ok = await t.rest.req("PATCH", `${base}/monitors/${id}`, {
      key: p.key,
      raw: '{"gracePeriodMs":"2000"}',
      contentType: "application/json",
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.data.gracePeriodMs, 2000);
  });
});
