// google.rpc.Status details through connect-es's own clients, over each protocol it speaks
// (Connect, gRPC, gRPC-web): ErrorInfo on every error, BadRequest for validation errors, RetryInfo
// for rate limits; errors refused at the edge (gate, body) and raised by handlers alike. The REST
// body of the same error keeps its shape.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { IdentityService } from "../../gen/vigil/v1/identity_pb.js";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

let transports: [string, Transport][];

const { t, p } = useProject(
  { ...GENEROUS_LIMITS, RATE_LIMIT_IDENTIFY_PER_MINUTE: "2", MAX_BODY_BYTES: "65536" },
  {},
  async () => {
    transports = [
      ["Connect", createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })],
      ["gRPC", createGrpcTransport({ baseUrl: t.url })],
      ["gRPC-web", createGrpcWebTransport({ baseUrl: t.url, httpVersion: "1.1" })],
    ];
  },
);

async function failure(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call succeeded; an error was expected");
}

describe("google.rpc.Status details through connect-es clients", () => {
  it("carries ErrorInfo on an error refused at the gate (no credentials)", async () => {
    for (const [name, tr] of transports) {
      const e = await failure(createClient(EventService, tr).ingestEvent({ type: "x" }));
      assert.equal(e.code, Code.Unauthenticated, name);
      assert.equal(
        e.rawMessage,
        "missing credentials: send an API key (Authorization: Bearer vk_...) or a session cookie",
        name,
      );
      const [info, ...more] = e.findDetails(ErrorInfoSchema);
      assert.equal(more.length, 0, name);
      assert.equal(info?.reason, "unauthenticated", name);
      assert.equal(info?.domain, "vigil.dev", name);
      assert.equal(e.findDetails(BadRequestSchema).length, 0, name);
    }
  });

  it("carries ErrorInfo and BadRequest on a handler's validation error, matching the REST details", async () => {
    const body = { name: "Bad", slug: "Not A Slug!" };
    const rest = await t.rest.post(`/v1/projects/${p.projectId}/monitors`, body, { key: p.key });
    assert.equal(rest.status, 400);
    // The REST body is unchanged: code, message, details of {field, message}.
    assert.deepEqual(Object.keys(rest.body.error).sort(), ["code", "details", "message"]);
    for (const d of rest.body.error.details) assert.deepEqual(Object.keys(d).sort(), ["field", "message"]);
    for (const [name, tr] of transports) {
      const e = await failure(
        createClient(UptimeService, tr).createMonitor(
          { projectId: p.projectId, ...body },
          { headers: { authorization: `Bearer ${p.key}` } },
        ),
      );
      assert.equal(e.code, Code.InvalidArgument, name);
      assert.equal(e.rawMessage, rest.body.error.message, name);
      assert.equal(e.findDetails(ErrorInfoSchema)[0]?.reason, "validation_failed", name);
      const [bad] = e.findDetails(BadRequestSchema);
      assert.deepEqual(
        bad?.fieldViolations.map((v) => ({ field: v.field, message: v.description })),
        rest.body.error.details,
        name,
      );
    }
  });

  it("carries ErrorInfo on an oversized body and on malformed protobuf (refused before any handler)", async () => {
    // gRPC-web over HTTP/1.1 streams its body (chunked, no content-length): the cap is met while reading.
    for (const [name, tr] of transports) {
      const big = await failure(
        createClient(EventService, tr).ingestEvent(
          { type: "x".repeat(70_000) },
          { headers: { authorization: `Bearer ${p.key}` }, signal: AbortSignal.timeout(10_000) },
        ),
      );
      assert.equal(big.code, Code.ResourceExhausted, name);
      assert.equal(big.findDetails(ErrorInfoSchema)[0]?.reason, "payload_too_large", name);
    }
    // Garbage bytes over the Connect protocol.
    const r = await fetch(`${t.url}/vigil.v1.EventService/IngestEvent`, {
      method: "POST",
      headers: { "content-type": "application/proto", authorization: `Bearer ${p.key}` },
      body: new Uint8Array([0xff, 0xff, 0xff]),
    });
    const json = (await r.json()) as {
      code: string;
      details?: { type: string; value: string; debug?: { reason?: string } }[];
    };
    assert.equal(r.status, 400);
    assert.equal(json.code, "invalid_argument");
    assert.equal(json.details?.[0]?.type, "google.rpc.ErrorInfo");
    assert.equal(json.details?.[0]?.debug?.reason, "invalid_message");
  });

  it("carries ErrorInfo and RetryInfo on a rate limit, matching retry-after", async () => {
    for (const [name, tr] of transports) {
      const own = await project(t.rest);
      const c = createClient(IdentityService, tr);
      const opts = { headers: { cookie: own.owner.cookie } };
      for (let i = 0; i < 2; i++) await c.identify({ projectId: own.projectId, externalId: `u${i}` }, opts);
      const e = await failure(c.identify({ projectId: own.projectId, externalId: "over" }, opts));
      assert.equal(e.code, Code.ResourceExhausted, name);
      assert.equal(e.findDetails(ErrorInfoSchema)[0]?.reason, "rate_limited", name);
      const retryAfter = Number(e.metadata.get("retry-after"));
      assert.ok(retryAfter >= 1, `${name}: retry-after ${e.metadata.get("retry-after")}`);
      assert.equal(Number(e.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds), retryAfter, name);
    }
  });

  it("adds ErrorInfo to an error raised inside connect-es itself (a malformed grpc-timeout)", async () => {
    const tr = createGrpcTransport({
      baseUrl: t.url,
      interceptors: [(next) => (req) => (req.header.set("grpc-timeout", "soon"), next(req))],
    });
    const e = await failure(
      createClient(EventService, tr).ingestEvent(create(EventService.method.ingestEvent.input, { type: "x" }), {
        headers: { authorization: `Bearer ${p.key}` },
      }),
    );
    assert.notEqual(e.code, Code.Internal);
    assert.equal(
      e.findDetails(ErrorInfoSchema)[0]?.reason,
      Code[e.code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase(),
    );
  });
});
