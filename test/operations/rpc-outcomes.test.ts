// A failed gRPC or gRPC-web call answers HTTP 200; its outcome is the grpc-status trailer. Each
// finished RPC is counted in grpc_server_handled_total by that code (go-grpc-prometheus's names) and
// logged with it, at the level its code calls for.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { WebhookService } from "../../gen/vigil/v1/webhooks_pb.js";
import { GENEROUS_LIMITS, startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { grpcError, loadVigil, struct, unary } from "../clients/grpc-js-util.js";

let t: TestApp;
let p: ProjectFixture;
const lines: Record<string, any>[] = [];
const protocols: [string, Transport][] = [];

before(async () => {
  const log = pino({ level: "info" }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  t = await startTestApp(GENEROUS_LIMITS, { log });
  p = await project(t.rest);
  protocols.push(
    ["grpc", createGrpcTransport({ baseUrl: t.url })],
    ["grpc-web", createGrpcWebTransport({ baseUrl: t.url, httpVersion: "1.1" })],
    ["connect", createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })],
  );
});
after(() => t.close());

async function code(p: Promise<unknown>): Promise<Code | 0> {
  try {
    await p;
    return 0;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

/** The value of one series of the metrics text (0 when absent). */
function series(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const body = line.slice(name.length + 1, line.lastIndexOf("}"));
    const got = Object.fromEntries([...body.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (
      Object.entries(labels).every(([k, v]) => got[k] === v) &&
      Object.keys(got).length === Object.keys(labels).length
    )
      return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return 0;
}

describe("RPC outcomes in metrics and logs", () => {
  it("counts each RPC by its gRPC status code, per protocol, in grpc_server_handled_total", async () => {
    const auth = { headers: { authorization: `Bearer ${p.key}` } };
    for (const [, tr] of protocols) {
      assert.equal(await code(createClient(EventService, tr).ingestEvent({ type: "x" })), Code.Unauthenticated);
      assert.equal(await code(createClient(EventService, tr).ingestEvent({ type: "x" }, auth)), 0);
      assert.equal(
        await code(createClient(WebhookService, tr).listWebhooks({ projectId: p.projectId }, auth)),
        Code.PermissionDenied,
      );
    }
    const text = await (await fetch(`${t.metricsUrl}/metrics`)).text();
    const labels = (protocol: string, service: string, method: string, grpc_code: string) => ({
      grpc_type: "unary",
      grpc_service: `vigil.v1.${service}`,
      grpc_method: method,
      grpc_code,
      protocol,
    });
    for (const [protocol] of protocols) {
      assert.equal(
        series(text, "grpc_server_handled_total", labels(protocol, "EventService", "IngestEvent", "Unauthenticated")),
        1,
        `${protocol} Unauthenticated`,
      );
      assert.equal(
        series(text, "grpc_server_handled_total", labels(protocol, "EventService", "IngestEvent", "OK")),
        1,
        `${protocol} OK`,
      );
      assert.equal(
        series(
          text,
          "grpc_server_handled_total",
          labels(protocol, "WebhookService", "ListWebhooks", "PermissionDenied"),
        ),
        1,
        `${protocol} PermissionDenied`,
      );
    }
    // The standard services are counted the same way (grpc.health.v1: an unknown service is NOT_FOUND).
    for (const [, tr] of protocols) {
      assert.equal(await code(createClient(Health, tr).check({ service: "no.such.Service" })), Code.NotFound);
      assert.equal(await code(createClient(Health, tr).check({ service: "" })), 0);
    }
    const after = await (await fetch(`${t.metricsUrl}/metrics`)).text();
    for (const [protocol] of protocols) {
      const health = (grpc_code: string) => ({
        grpc_type: "unary",
        grpc_service: "grpc.health.v1.Health",
        grpc_method: "Check",
        grpc_code,
        protocol,
      });
      assert.equal(series(after, "grpc_server_handled_total", health("NotFound")), 1, `${protocol} health NotFound`);
      assert.equal(series(after, "grpc_server_handled_total", health("OK")), 1, `${protocol} health OK`);
    }
    // vigil_http_requests_total: a gRPC or gRPC-web call (both labelled protocol "grpc" there) counts
    // under the HTTP status its code maps to, not the 200 on the wire; Connect's status is real.
    const http = (protocol: string, route: string, status: string) =>
      series(text, "vigil_http_requests_total", { protocol, route: `/vigil.v1.${route}`, status });
    assert.equal(http("grpc", "EventService/IngestEvent", "200"), 2, "grpc OK");
    assert.equal(http("grpc", "EventService/IngestEvent", "401"), 2, "grpc Unauthenticated");
    assert.equal(http("grpc", "WebhookService/ListWebhooks", "403"), 2, "grpc PermissionDenied");
    assert.equal(http("grpc", "WebhookService/ListWebhooks", "200"), 0, "no failed call counted as 200");
    assert.equal(http("connect", "EventService/IngestEvent", "401"), 1, "connect Unauthenticated");
    assert.equal(http("connect", "WebhookService/ListWebhooks", "403"), 1, "connect PermissionDenied");
  });

  it("logs each RPC with its gRPC code, at the level the code calls for", async () => {
    const rpcLines = (route: string, protocol: string) =>
      lines.filter((l) => l.msg === "request" && l.route === route && l.protocol === protocol);
    const ingest = rpcLines("/vigil.v1.EventService/IngestEvent", "grpc");
    assert.deepEqual(ingest.map((l) => [l.status, l.grpcCode, l.level]).sort(), [
      [200, "OK", 30],
      [200, "OK", 30], // grpc-web is logged as protocol "grpc" too
      [200, "Unauthenticated", 30],
      [200, "Unauthenticated", 30],
    ]);
    const denied = rpcLines("/vigil.v1.WebhookService/ListWebhooks", "grpc");
    assert.deepEqual(
      denied.map((l) => [l.grpcCode, l.level]),
      [
        ["PermissionDenied", 40],
        ["PermissionDenied", 40],
      ],
    );
    const connect = rpcLines("/vigil.v1.WebhookService/ListWebhooks", "connect");
    assert.deepEqual(
      connect.map((l) => [l.status, l.grpcCode, l.level]),
      [[403, "PermissionDenied", 40]],
    );
    // REST lines carry no gRPC code.
    assert.ok(lines.some((l) => l.msg === "request" && l.protocol === "rest" && !("grpcCode" in l)));
  });

  it("counts a failed @grpc/grpc-js call under its code's HTTP status in vigil_http_requests_total", async () => {
    const services = loadVigil();
    const c = new services.EventService(new URL(t.url).host, grpc.credentials.createInsecure());
    try {
      const counts = async () => {
        const text = await (await fetch(`${t.metricsUrl}/metrics`)).text();
        const at = (status: string) =>
          series(text, "vigil_http_requests_total", {
            protocol: "grpc",
            route: "/vigil.v1.EventService/IngestEvent",
            status,
          });
        return { ok: at("200"), unauthenticated: at("401"), invalid: at("400") };
      };
      const before = await counts();
      const ingest = unary(c, "ingestEvent");
      const auth = { authorization: `Bearer ${p.key}` };
      assert.equal((await grpcError(ingest({ type: "x" }))).code, grpc.status.UNAUTHENTICATED);
      assert.equal((await grpcError(ingest({ type: "x" }, { authorization: "Bearer nope" }))).code, 16);
      const invalid = await grpcError(ingest({ type: "" }, auth));
      assert.equal(invalid.code, grpc.status.INVALID_ARGUMENT, invalid.details);
      await ingest({ type: "x", data: struct({ n: 1 }) }, auth);
      const now = await counts();
      assert.deepEqual(
        {
          ok: now.ok - before.ok,
          unauthenticated: now.unauthenticated - before.unauthenticated,
          invalid: now.invalid - before.invalid,
        },
        { ok: 1, unauthenticated: 2, invalid: 1 },
        "only the successful call counts as 200",
      );
    } finally {
      c.close();
    }
  });
});
