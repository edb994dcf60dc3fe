// @grpc/grpc-js as a second, independent gRPC client: the service definitions come from proto/
// through @grpc/proto-loader (protobufjs), not from gen/, so nothing of connect-es or protobuf-es
// sits between the test and the wire. Calls go through a counting TCP proxy, so a test can tell how
// many connections were opened and how many bytes went each way.
import net from "node:net";
import path from "node:path";
import { readdirSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  RetryInfoSchema,
  type BadRequest,
  type ErrorInfo,
  type RetryInfo,
} from "../../gen/google/rpc/error_details_pb.js";

const PROTO_DIR = path.resolve(import.meta.dirname, "../../proto");

/** Every vigil.v1 service, as grpc-js client constructors, loaded from proto/vigil/v1/*.proto. */
export function loadVigil(): Record<string, grpc.ServiceClientConstructor> {
  const files = readdirSync(path.join(PROTO_DIR, "vigil/v1"))
    .filter((f) => f.endsWith(".proto"))
    .map((f) => `vigil/v1/${f}`);
  // longs as Number: integral fields read as plain numbers whether the proto says double or int64.
  const def = protoLoader.loadSync(files, {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    longs: Number,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { vigil: { v1: Record<string, unknown> } };
  const out: Record<string, grpc.ServiceClientConstructor> = {};
  for (const [name, v] of Object.entries(pkg.vigil.v1)) {
    if (typeof v === "function" && "service" in v) out[name] = v as grpc.ServiceClientConstructor;
  }
  return out;
}

export interface Proxy {
  port: number;
  connections: number;
  /** Bytes client → server and server → client since the last reset(). */
  up: number;
  down: number;
  reset(): void;
  /** Drops every open connection and stops listening: new ones are refused (on a unix socket, its file is removed). */
  close(): Promise<void>;
  /** Listens again on the same port (or path). */
  reopen(): Promise<void>;
}

/**
 * A TCP proxy to 127.0.0.1:target (or any `net.connect` target: a unix socket's path) that counts
 * connections and bytes. It listens on a random loopback port, or on the unix socket `listenPath`
 * (then `port` is 0).
 */
export async function countingProxy(target: number | net.NetConnectOpts, listenPath?: string): Promise<Proxy> {
  const sockets = new Set<net.Socket>();
  const p: Proxy = {
    port: 0,
    connections: 0,
    up: 0,
    down: 0,
    reset() {
      p.up = 0;
      p.down = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
    reopen: () =>
      new Promise<void>((resolve) =>
        listenPath === undefined ? server.listen(p.port, "127.0.0.1", resolve) : server.listen(listenPath, resolve),
      ),
  };
  const server = net.createServer((client) => {
    p.connections++;
    const upstream = typeof target === "number" ? net.connect(target, "127.0.0.1") : net.connect(target);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    client.on("data", (d) => (p.up += d.length));
    upstream.on("data", (d) => (p.down += d.length));
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  if (listenPath !== undefined) {
    await p.reopen();
    return p;
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  p.port = (server.address() as net.AddressInfo).port;
  return p;
}

export type Unary = (
  req: object,
  md?: Record<string, string>,
  opts?: grpc.CallOptions,
) => Promise<{ res: any; headers: grpc.Metadata }>;

/** Promise form of every unary method of a grpc-js client; `headers` is the response's initial metadata. */
export function unary(client: grpc.Client, method: string): Unary {
  const fn = (client as unknown as Record<string, Function>)[method];
  if (typeof fn !== "function") throw new Error(`no method ${method}`);
  return (req, md = {}, opts = {}) =>
    new Promise((resolve, reject) => {
      const meta = new grpc.Metadata();
      for (const [k, v] of Object.entries(md)) meta.set(k, v);
      let headers = new grpc.Metadata();
      const call = fn.call(client, req, meta, opts, (err: grpc.ServiceError | null, res: unknown) =>
        err ? reject(err) : resolve({ res, headers }),
      );
      call.on("metadata", (m: grpc.Metadata) => (headers = m));
    });
}

/** Runs `p`, expecting a gRPC error; returns it. */
export async function grpcError(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    if ((err as grpc.ServiceError).code === undefined) throw err;
    return err as grpc.ServiceError;
  }
  throw new Error("the call succeeded; an error was expected");
}

export interface StatusDetails {
  code: number;
  message: string;
  errorInfo?: ErrorInfo;
  badRequest?: BadRequest;
  retryInfo?: RetryInfo;
  typeUrls: string[];
}

/** google.rpc.Status from an error's `grpc-status-details-bin` trailer, decoded with gen/google/rpc. */
export function statusDetails(err: grpc.ServiceError): StatusDetails {
  const bin = err.metadata.get("grpc-status-details-bin")[0];
  if (!(bin instanceof Buffer)) throw new Error(`no grpc-status-details-bin on ${err.code} ${err.details}`);
  const status = fromBinary(StatusSchema, bin);
  const out: StatusDetails = {
    code: status.code,
    message: status.message,
    typeUrls: status.details.map((d) => d.typeUrl),
  };
  for (const any of status.details) {
    out.errorInfo ??= anyUnpack(any, ErrorInfoSchema);
    out.badRequest ??= anyUnpack(any, BadRequestSchema);
    out.retryInfo ??= anyUnpack(any, RetryInfoSchema);
  }
  return out;
}

/** A google.protobuf.Struct as protobufjs objects take it (no JSON mapping there). */
export function struct(o: Record<string, string | number | boolean>): object {
  const fields: Record<string, object> = {};
  for (const [k, v] of Object.entries(o))
    fields[k] =
      typeof v === "string" ? { stringValue: v } : typeof v === "number" ? { numberValue: v } : { boolValue: v };
  return { fields };
}
