// Server reflection as the tools use it: `buf curl` with no schema (it downloads the schema over
// grpc.reflection.v1 or v1alpha) against the real port over gRPC (h2c), plus the protocol's corner
// cases through connect-es's own client.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import { create, createFileRegistry, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createValidator } from "@bufbuild/protovalidate";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { GrpcReflection } from "grpc-js-reflection-client";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  ServerReflection,
  type ServerReflectionRequestSchema,
  type ServerReflectionResponse,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { startTestApp } from "../helpers/app.js";
import { useProject } from "../helpers/use.js";

const BUF = path.resolve(import.meta.dirname, "../../node_modules/.bin/buf");
const run = promisify(execFile);

const { t, p } = useProject();

/** `buf curl` over gRPC with h2c and no schema: everything it knows comes from reflection. */
async function bufCurl(
  reflect: "grpc-v1" | "grpc-v1alpha",
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(
      BUF,
      ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--reflect-protocol", reflect, ...args],
      { timeout: 30_000 },
    );
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? String(err) };
  }
}

for (const reflect of ["grpc-v1", "grpc-v1alpha"] as const) {
  describe(`buf curl without a schema (reflection ${reflect})`, () => {
    it("lists the services and their methods", async () => {
      const services = await bufCurl(reflect, ["--list-services", t.url]);
      assert.equal(services.code, 0, services.stderr);
      const names = services.stdout.trim().split("\n");
      for (const s of [
        "vigil.v1.EventService",
        "vigil.v1.ProjectService",
        "vigil.v1.HealthService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
      ]) {
        assert.ok(names.includes(s), `${s} missing from: ${services.stdout}`);
      }
      const methods = await bufCurl(reflect, ["--list-methods", t.url]);
      assert.equal(methods.code, 0, methods.stderr);
      for (const m of [
        "vigil.v1.EventService/IngestEvent",
        "vigil.v1.UptimeService/ListMonitors",
        "grpc.health.v1.Health/Check",
        "grpc.health.v1.Health/Watch",
      ]) {
        assert.ok(methods.stdout.includes(m), `${m} missing from: ${methods.stdout}`);
      }
    });

    it("calls grpc.health.v1.Health/Check with no credentials", async () => {
      const r = await bufCurl(reflect, ["-d", '{"service": ""}', `${t.url}/grpc.health.v1.Health/Check`]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { status: "SERVING" });
    });

    it("calls an authenticated vigil.v1 method with an API key (messages with google.protobuf.Struct)", async () => {
      const type = `buf_curl_${reflect.replace("-", "_")}`;
      const r = await bufCurl(reflect, [
        "-H",
        `authorization: Bearer ${p.key}`,
        "-d",
        JSON.stringify({ type, data: { plan: "pro", seats: 3 } }),
        `${t.url}/vigil.v1.EventService/IngestEvent`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.equal(out.data.type, type);
      assert.deepEqual(out.data.data, { plan: "pro", seats: 3 });
      const read = await t.rest.get(`/v1/projects/self/events/${out.data.id}`, { key: p.key });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.data.type, type);
    });

    it("answers an unauthenticated vigil.v1 call with UNAUTHENTICATED, not a schema error", async () => {
      const r = await bufCurl(reflect, ["-d", "{}", `${t.url}/vigil.v1.EventService/ListEvents`]);
      assert.notEqual(r.code, 0);
      assert.match(r.stdout + r.stderr, /unauthenticated/i);
    });
  });
}

for (const version of ["v1", "v1alpha"] as const) {
  describe(`@grpc/grpc-js with grpc-js-reflection-client (${version}): schema from reflection only`, () => {
    it("lists the services, downloads a service's descriptors and calls it with metadata auth", async () => {
      const host = `127.0.0.1:${t.port}`;
      const reflection = new GrpcReflection(host, grpc.credentials.createInsecure(), {}, version);
      const services = await reflection.listServices();
      assert.ok(
        services.includes("vigil.v1.EventService") && services.includes("grpc.health.v1.Health"),
        services.join(", "),
      );

      const descriptor = await reflection.getDescriptorBySymbol("vigil.v1.EventService");
      // Through protobufjs's JSON form: the library's own getPackageObject() (and listMethods(),
      // which uses it) re-encodes the files with protobufjs and then fails on any custom option
      // ("duplicate id 51001 in .google.protobuf.MethodOptions"), on `buf build`'s image of
      // proto/ just the same.
      const def = protoLoader.fromJSON(descriptor.getProtobufJsRoot().toJSON() as never, {
        longs: Number,
        defaults: true,
      });
      const pkg = grpc.loadPackageDefinition(def) as unknown as {
        vigil: { v1: Record<string, grpc.ServiceClientConstructor> };
      };
      assert.deepEqual(Object.keys(pkg.vigil.v1.EventService.service).sort(), [
        "GetEvent",
        "IngestEvent",
        "IngestEventBatch",
        "ListEvents",
      ]);
      const events = new pkg.vigil.v1.EventService(host, grpc.credentials.createInsecure()) as unknown as grpc.Client &
        Record<string, (...a: unknown[]) => unknown>;
      try {
        const md = new grpc.Metadata();
        md.set("authorization", `Bearer ${p.key}`);
        const type = `grpc_js_${version}`;
        const ingested = await new Promise<{ data: { id: string; type: string } }>((resolve, reject) =>
          events.IngestEvent(
            { type, data: { fields: { n: { numberValue: 1 } } } },
            md,
            (err: Error | null, r: { data: { id: string; type: string } }) => (err ? reject(err) : resolve(r)),
          ),
        );
        assert.equal(ingested.data.type, type);
        // Without credentials: UNAUTHENTICATED, decoded by the reflected schema too.
        await assert.rejects(
          new Promise((resolve, reject) =>
            events.ListEvents({ projectId: "self" }, (err: Error | null, r: unknown) =>
              err ? reject(err) : resolve(r),
            ),
          ),
          (err: grpc.ServiceError) => err.code === grpc.status.UNAUTHENTICATED,
        );
      } finally {
        events.close();
      }
    });
  });
}

describe("reflection protocol (v1, one stream, connect-es gRPC client)", () => {
  const transport = () => createGrpcTransport({ baseUrl: t.url });

  async function exchange(
    requests: Array<MessageInitShape<typeof ServerReflectionRequestSchema>>,
  ): Promise<ServerReflectionResponse[]> {
    const client = createClient(ServerReflection, transport());
    async function* send() {
      for (const r of requests) yield r;
    }
    const out: ServerReflectionResponse[] = [];
    for await (const res of client.serverReflectionInfo(send() as never)) out.push(res);
    return out;
  }
  const files = (res: ServerReflectionResponse) => {
    assert.equal(res.messageResponse.case, "fileDescriptorResponse", JSON.stringify(res.messageResponse));
    return (res.messageResponse.value as { fileDescriptorProto: Uint8Array[] }).fileDescriptorProto.map((b) =>
      fromBinary(FileDescriptorProtoSchema, b),
    );
  };

  it("answers file_containing_symbol with the file and its transitive imports, each once per stream", async () => {
    const [first, second, method, field] = await exchange([
      { host: "h", messageRequest: { case: "fileContainingSymbol", value: "vigil.v1.EventService" } },
      { messageRequest: { case: "fileContainingSymbol", value: "vigil.v1.IngestEventRequest" } },
      { messageRequest: { case: "fileContainingSymbol", value: "vigil.v1.EventService.IngestEvent" } },
      { messageRequest: { case: "fileContainingSymbol", value: "vigil.v1.Event.project_id" } },
    ]);
    assert.equal(first.validHost, "h");
    assert.equal(first.originalRequest?.messageRequest.value, "vigil.v1.EventService");
    const names = files(first).map((f) => f.name);
    assert.equal(names[0], "vigil/v1/events.proto");
    for (const dep of [
      "google/api/annotations.proto",
      "google/api/http.proto",
      "google/protobuf/descriptor.proto",
      "google/protobuf/struct.proto",
      "vigil/v1/options.proto",
    ]) {
      assert.ok(names.includes(dep), `${dep} missing from ${names.join(", ")}`);
    }
    assert.equal(new Set(names).size, names.length);
    // Already sent on this stream: only the file itself again.
    for (const r of [second, method, field])
      assert.deepEqual(
        files(r).map((f) => f.name),
        ["vigil/v1/events.proto"],
      );
    const events = files(first)[0];
    assert.ok(events.service.some((s) => s.name === "EventService" && s.method.some((m) => m.name === "IngestEvent")));
    assert.ok(events.dependency.includes("google/api/annotations.proto"));
  });

  it("answers file_by_filename, list_services, extensions and the error detail types", async () => {
    const [byName, annotations, list, numbers, ext, details] = await exchange([
      { messageRequest: { case: "fileByFilename", value: "vigil/v1/uptime.proto" } },
      { messageRequest: { case: "fileByFilename", value: "google/api/annotations.proto" } },
      { messageRequest: { case: "listServices", value: "*" } },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 72295728 },
        },
      },
      // Imported by no service, but error statuses carry its messages in their Any details.
      { messageRequest: { case: "fileContainingSymbol", value: "google.rpc.ErrorInfo" } },
    ]);
    assert.equal(files(byName)[0].name, "vigil/v1/uptime.proto");
    assert.equal(files(annotations)[0].name, "google/api/annotations.proto");
    assert.equal(list.messageResponse.case, "listServicesResponse");
    const services = (list.messageResponse.value as { service: Array<{ name: string }> }).service.map((s) => s.name);
    assert.ok(
      services.includes("vigil.v1.WebhookService") && services.includes("grpc.health.v1.Health"),
      services.join(", "),
    );
    assert.equal(numbers.messageResponse.case, "allExtensionNumbersResponse");
    assert.ok((numbers.messageResponse.value as { extensionNumber: number[] }).extensionNumber.includes(72295728));
    assert.equal(files(ext)[0].name, "google/api/annotations.proto");
    assert.equal(files(details)[0].name, "google/rpc/error_details.proto");
  });

  it("answers unknown symbols, files and extensions with NOT_FOUND and keeps the stream going", async () => {
    const answers = await exchange([
      { messageRequest: { case: "fileContainingSymbol", value: "vigil.v1.NoSuchService" } },
      { messageRequest: { case: "fileByFilename", value: "vigil/v1/nope.proto" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 1 },
        },
      },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "vigil.v1.Nope" } },
      { messageRequest: { case: "fileContainingSymbol", value: "grpc.health.v1.Health" } },
    ]);
    for (const r of answers.slice(0, 4)) {
      assert.equal(r.messageResponse.case, "errorResponse", JSON.stringify(r.messageResponse));
      assert.equal((r.messageResponse.value as { errorCode: number }).errorCode, 5); // NOT_FOUND
    }
    assert.equal(files(answers[4])[0].name, "grpc/health/v1/health.proto");
  });

  it("serves the rules as protovalidate options: a client validating with them refuses what the server refuses", async () => {
    const [answer] = await exchange([
      { messageRequest: { case: "fileContainingSymbol", value: "vigil.v1.EventService" } },
    ]);
    const served = files(answer);
    assert.ok(
      served.some((f) => f.name === "buf/validate/validate.proto"),
      "validate.proto among the imports",
    );
    // Everything from reflection: the client knows no generated code of ours.
    const registry = createFileRegistry(served[0], (name) => served.find((f) => f.name === name));
    const IngestEventRequest = registry.getMessage("vigil.v1.IngestEventRequest")!;
    const validator = createValidator({ registry });
    const ingest = createClient(EventService, transport());
    const headers = { authorization: `Bearer ${p.key}` };
    for (const [type, ok] of [
      ["reflected_rules", true],
      ["", false],
      ["x".repeat(201), false],
      ["a\u0000b", false],
    ] as const) {
      const local = validator.validate(IngestEventRequest, create(IngestEventRequest, { type }));
      const fields =
        local.kind === "invalid"
          ? local.error.violations.map((v) => v.field[0]?.kind === "field" && v.field[0].name)
          : [];
      assert.deepEqual(fields, ok ? [] : ["type"], `${JSON.stringify(type)}: ${local.kind}`);
      const remote = await ingest.ingestEvent({ type }, { headers }).then(
        () => "ok" as const,
        (e: ConnectError) => e.code,
      );
      assert.equal(remote, ok ? "ok" : Code.InvalidArgument, JSON.stringify(type));
    }
  });

  it("ends the stream with INVALID_ARGUMENT for a request that asks nothing", async () => {
    await assert.rejects(exchange([{ host: "h" }]), (err: ConnectError) => err.code === Code.InvalidArgument);
  });
});

describe("GRPC_REFLECTION=off", () => {
  it("does not serve reflection, and buf curl then needs a schema", async () => {
    const off = await startTestApp({ GRPC_REFLECTION: "off" });
    try {
      const r = await run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-services", off.url], {
        timeout: 30_000,
      }).then(
        () => ({ code: 0, out: "" }),
        (e: { code: number; stderr: string }) => ({ code: e.code, out: e.stderr }),
      );
      assert.notEqual(r.code, 0);
      assert.match(r.out, /unimplemented/i);
      // Health stays.
      const h = await bufCurlAt(off.url);
      assert.equal(h, 0);
    } finally {
      await off.close();
    }
  });
});

async function bufCurlAt(url: string): Promise<number> {
  // With reflection off, buf curl needs the schema: give it the repo's proto/ module.
  const proto = path.resolve(import.meta.dirname, "../../proto");
  return run(
    BUF,
    [
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--schema",
      proto,
      "-d",
      "{}",
      `${url}/grpc.health.v1.Health/Check`,
    ],
    { timeout: 30_000 },
  ).then(
    () => 0,
    (e: { code: number }) => e.code,
  );
}
