// The RPC half of the security battery, generated from the service descriptors: every RPC over
// gRPC (HTTP/2) and Connect gets no credentials, forged and revoked ones, the wrong kind (an API
// key on session RPCs), another tenant's project, garbage protobuf, and NUL or prototype-member
// names in every string field. No call may end INTERNAL or UNKNOWN, hang, or leak.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create, ScalarType, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { isPublic } from "../../src/server/gate.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { tenants, type Account, type ProjectFixture } from "../helpers/fixtures.js";
import { assertNoLeak } from "./leaks.js";
import { useApp } from "../helpers/use.js";

let a: ProjectFixture;
let b: ProjectFixture;
let stranger: Account;
let revokedKey: string;
let services: DescService[];
let transports: [string, Transport][];

const { t } = useApp(GENEROUS_LIMITS, {}, async () => {
  ({ a, b, stranger, revokedKey } = await tenants(t.rest));
  services = t.app.features.flatMap((f) => f.services.map((s) => s.desc));
  transports = [
    ["gRPC", createGrpcTransport({ baseUrl: t.url })],
    ["Connect", createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })],
  ];
});

const methods = () => services.flatMap((s) => s.methods.map((m) => [s, m] as const));
const hasProject = (m: DescMethod) => m.input.fields.some((f) => f.name === "project_id");

interface Outcome {
  code: Code | "ok";
  message: string;
}

async function call(
  transport: Transport,
  s: DescService,
  m: DescMethod,
  input: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<Outcome> {
  const client = createClient(s, transport) as unknown as Record<
    string,
    (i: unknown, o: unknown) => Promise<unknown> | AsyncIterable<unknown>
  >;
  try {
    const out = client[m.localName](create(m.input, input as never), {
      headers,
      signal: AbortSignal.timeout(10_000),
    });
    // A server stream (ExportEvents) fails or succeeds as it is read: read it all.
    let res: unknown;
    if (m.methodKind === "server_streaming") {
      const all: unknown[] = [];
      for await (const x of out as AsyncIterable<unknown>) all.push(x);
      res = all;
    } else res = await out;
    assertNoLeak(
      JSON.stringify(res, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
      [a.key, b.key, revokedKey],
    );
    return { code: "ok", message: "" };
  } catch (err) {
    const e = ConnectError.from(err);
    assert.notEqual(e.code, Code.Internal, `${m.name}: INTERNAL ${e.rawMessage}`);
    assert.notEqual(e.code, Code.Unknown, `${m.name}: UNKNOWN ${e.rawMessage}`);
    assert.notEqual(e.code, Code.DeadlineExceeded, `${m.name}: no answer within 10 s`);
    assertNoLeak(e.rawMessage, [a.key, b.key, revokedKey]);
    return { code: e.code, message: e.rawMessage };
  }
}

describe("security battery over every RPC (gRPC and Connect)", () => {
  it("covers the RPCs the service registers", () => {
    assert.ok(methods().length >= 40, `only ${methods().length} RPCs`);
  });

  it("refuses missing, forged, unknown and revoked credentials with UNAUTHENTICATED", async () => {
    for (const [name, transport] of transports) {
      for (const [s, m] of methods()) {
        if (isPublic(m)) continue;
        const forged: Record<string, string>[] = [
          {},
          { authorization: "Basic Zm9vOmJhcg==" },
          { authorization: "Bearer vk_" + "0".repeat(40) },
          { authorization: `Bearer ${revokedKey}` },
          { cookie: "vigil_session=forged.signature" },
        ];
        for (const headers of forged) {
          const r = await call(transport, s, m, { projectId: a.projectId }, headers);
          assert.equal(
            r.code,
            Code.Unauthenticated,
            `${name} ${m.name} with ${JSON.stringify(headers)}: ${r.code} ${r.message}`,
          );
        }
      }
    }
  });

  it("never lets one tenant reach another's project, by key or by session", async () => {
    for (const [name, transport] of transports) {
      for (const [s, m] of methods().filter(([, m]) => hasProject(m))) {
        for (const headers of [{ authorization: `Bearer ${a.key}` }, { cookie: stranger.cookie }] as Record<
          string,
          string
        >[]) {
          const r = await call(transport, s, m, { projectId: b.projectId }, headers);
          assert.ok(
            r.code === Code.NotFound || r.code === Code.PermissionDenied,
            `${name} ${m.name} with ${Object.keys(headers)[0]}: ${r.code} ${r.message}`,
          );
        }
      }
    }
  });

  it("answers garbage protobuf with INVALID_ARGUMENT (or UNAUTHENTICATED without credentials)", async () => {
    for (const [s, m] of methods()) {
      // Bytes no message accepts: a length past the end, an invalid wire type (7), a varint that
      // never ends; and invalid UTF-8 where field 1 is a string.
      const bodies = [
        Buffer.from([0x0a, 0x05, 0x61]),
        Buffer.from([0x0f, 0x00]),
        Buffer.from([0x08, 0xff, 0xff, 0xff]),
      ];
      const f1 = m.input.fields.find((f) => f.number === 1);
      if (f1?.fieldKind === "scalar" && f1.scalar === ScalarType.STRING)
        bodies.push(Buffer.from([0x0a, 0x02, 0xc3, 0x28]));
      for (const body of bodies) {
        const r = await fetch(`${t.url}/${s.typeName}/${m.name}`, {
          method: "POST",
          headers: { "content-type": "application/proto", "connect-protocol-version": "1", cookie: a.owner.cookie },
          body,
        });
        const text = await r.text();
        assert.ok(r.status === 400, `${m.name}: ${r.status} ${text}`);
        assert.equal(JSON.parse(text).code, "invalid_argument", `${m.name}: ${text}`);
      }
    }
  });

  it("NUL, lone surrogates and prototype-member names in every string field never end INTERNAL", async () => {
    let calls = 0;
    const [, grpc] = transports[0];
    for (const [s, m] of methods()) {
      for (const f of m.input.fields) {
        if (f.fieldKind !== "scalar" || f.scalar !== ScalarType.STRING) continue;
        for (const v of ["a\u0000", "__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"]) {
          const input: Record<string, unknown> = { projectId: a.projectId, [f.localName]: v };
          for (const headers of [{ cookie: a.owner.cookie }, { authorization: `Bearer ${a.key}` }] as Record<
            string,
            string
          >[]) {
            const r = await call(grpc, s, m, input, headers);
            if (v.includes("\u0000"))
              assert.ok(
                r.code === Code.InvalidArgument || r.code === Code.Unauthenticated || r.code === Code.PermissionDenied,
                `${m.name}.${f.name} with NUL: ${r.code} ${r.message}`,
              );
            calls++;
          }
        }
      }
    }
    assert.ok(calls > 200, `only ${calls} calls`);
  });
});
