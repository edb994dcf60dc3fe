import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createGrpcTransport, createConnectTransport } from "@connectrpc/connect-node";
import { ProjectService } from "../../gen/vigil/v1/projects_pb.js";
import { startTestApp } from "../helpers/app.js";
import { errorBody } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

const { t, p } = useProject({ MAX_BODY_BYTES: "4096" });

describe("REST edge cases", () => {
  it("answers unknown routes with a JSON 404", async () => {
    for (const [m, path] of [
      ["GET", "/v1/nope"],
      ["GET", "/nope"],
      // GET / is the dashboard (src/server/dashboard.ts); any other verb there is the API's.
      ["POST", "/"],
      ["POST", "/v1/projects/x/y/z/w"],
    ]) {
      const r = await t.rest.req(m, path, { cookie: p.owner.cookie });
      assert.equal(r.status, 404, `${m} ${path}`);
      assert.equal(errorBody(r).code, "not_found");
      assert.match(r.headers.get("content-type") ?? "", /application\/json/);
    }
  });

  it("answers malformed JSON with 400 invalid_json", async () => {
    const r = await t.rest.req("POST", "/v1/projects", {
      raw: '{"name": "x",',
      contentType: "application/json",
      cookie: p.owner.cookie,
    });
    assert.equal(r.status, 400);
    assert.equal(errorBody(r).code, "invalid_json");
  });

  it("answers a body that is not a JSON object with 400", async () => {
    for (const raw of ["[1,2]", '"str"', "42"]) {
      const r = await t.rest.req("POST", "/v1/projects", {
        raw,
        contentType: "application/json",
        cookie: p.owner.cookie,
      });
      assert.equal(r.status, 400, raw);
      errorBody(r);
    }
  });

  it("answers non-JSON bodies with 415", async () => {
    const r = await t.rest.req("POST", "/v1/projects", {
      raw: "name=x",
      contentType: "application/x-www-form-urlencoded",
      cookie: p.owner.cookie,
    });
    assert.equal(r.status, 415);
    assert.equal(errorBody(r).code, "unsupported_media_type");
  });

  it("answers bodies over the limit with 413", async () => {
    const big = JSON.stringify({ name: "x".repeat(10_000), platform: "node" });
    const r = await t.rest.req("POST", "/v1/projects", {
      raw: big,
      contentType: "application/json",
      cookie: p.owner.cookie,
    });
    assert.equal(r.status, 413);
    assert.equal(errorBody(r).code, "payload_too_large");
  });

  it("emits null for absent optional values", async () => {
    const r = await t.rest.get(`/v1/projects/${p.projectId}/api-keys`, { cookie: p.owner.cookie });
    assert.equal(r.body.data[0].lastUsedAt, null);
  });

  it("answers /health without credentials", async () => {
    const r = await t.rest.get("/health");
    assert.equal(r.status, 200);
    assert.equal(r.body.status, "ok");
  });
});

describe("the same RPC over gRPC, Connect and REST", () => {
  it("GetProject answers the same record over gRPC (HTTP/2) and REST", async () => {
    const grpc = createClient(ProjectService, createGrpcTransport({ baseUrl: t.url }));
    const g = await grpc.getProject({ projectId: "self" }, { headers: { authorization: `Bearer ${p.key}` } });
    const r = await t.rest.get("/v1/projects/self", { key: p.key });
    assert.equal(r.status, 200);
    assert.deepEqual(
      {
        id: g.data!.id,
        name: g.data!.name,
        platform: g.data!.platform,
        createdAt: g.data!.createdAt,
        updatedAt: g.data!.updatedAt,
      },
      {
        id: r.body.data.id,
        name: r.body.data.name,
        platform: r.body.data.platform,
        createdAt: r.body.data.createdAt,
        updatedAt: r.body.data.updatedAt,
      },
    );
  });

  it("ListProjects over the Connect protocol (HTTP/1.1) with the session cookie", async () => {
    const c = createClient(ProjectService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }));
    const res = await c.listProjects({}, { headers: { cookie: p.owner.cookie } });
    const r = await t.rest.get("/v1/projects", { cookie: p.owner.cookie });
    assert.deepEqual(
      res.data.map((x) => x.id),
      r.body.data.map((x: any) => x.id),
    );
  });

  it("also serves gRPC on GRPC_PORT when set", async () => {
    const { freePort } = await import("../helpers/cluster.js");
    const grpcPort = await freePort();
    const other = await startTestApp({ GRPC_PORT: String(grpcPort) }, { databaseUrl: t.databaseUrl });
    try {
      const grpc = createClient(ProjectService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${grpcPort}` }));
      const g = await grpc.getProject({ projectId: "self" }, { headers: { authorization: `Bearer ${p.key}` } });
      assert.equal(g.data!.id, p.projectId);
    } finally {
      await other.close();
    }
  });

  it("maps errors to gRPC codes", async () => {
    const grpc = createClient(ProjectService, createGrpcTransport({ baseUrl: t.url }));
    await assert.rejects(
      grpc.getProject({ projectId: "self" }),
      (e: unknown) => e instanceof ConnectError && e.code === Code.Unauthenticated,
    );
    await assert.rejects(
      grpc.createProject({ name: "x", platform: "cobol" }, { headers: { cookie: p.owner.cookie } }),
      (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
    );
  });
});

describe("REST JSON writer", () => {
  it("writes google.protobuf.Value messages as the JSON they hold", async () => {
    const { create } = await import("@bufbuild/protobuf");
    const { StructSchema, ValueSchema } = await import("@bufbuild/protobuf/wkt");
    const { messageToRestJson } = await import("../../src/transcoding/json.js");
    const msg = create(StructSchema, {
      fields: {
        n: create(ValueSchema, { kind: { case: "numberValue", value: 1.5 } }),
        s: create(ValueSchema, { kind: { case: "stringValue", value: "x" } }),
      },
    });
    assert.deepEqual(messageToRestJson(StructSchema, msg as never), { fields: { n: 1.5, s: "x" } });
  });
});
