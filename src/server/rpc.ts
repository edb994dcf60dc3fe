import { isUtf8 } from "node:buffer";
import { fromBinary, type DescMethod } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextKey,
  type ContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import { errorToJson } from "@connectrpc/connect/protocol-connect";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { Compression, UniversalHandler } from "@connectrpc/connect/protocol";
import type { Logger } from "pino";
import { ApiError, rpcError, tooLarge } from "../shared/errors.js";
import type { ServiceBinding } from "../shared/feature.js";
import { assertStorableMessage } from "../shared/message-check.js";
import { bodyBudgetKey, UNBOUNDED, type BodyBudget } from "../shared/inflight.js";
import { readBody, type AnyRequest } from "../transcoding/body.js";
import type { Admit, AnyResponse } from "../transcoding/rest.js";
import type { ClientInfo } from "../shared/context.js";
import { watchStatus } from "./grpc-status.js";
import type { Protocol } from "./gate.js";

// gRPC, gRPC-web and Connect: connect-es's router, driven by our own small Node adapter so that
// every call passes the same edge as REST, in this order, before any handler runs:
//
// 1. `admit` (the gate: cross-site checks, credentials) from the headers alone;
// 2. the body, read under MAX_BODY_BYTES (413 over Connect, RESOURCE_EXHAUSTED over gRPC);
// 3. the bytes checked to be a valid message (garbage, truncated frames, invalid UTF-8, nesting
//    past protobuf-es's recursion limit): INVALID_ARGUMENT, where connect-es would answer INTERNAL;
// 4. the decoded message checked for unstorable text and non-finite numbers (an interceptor).
//
// Then connect-es reads the very same bytes. Vigil RPCs are unary or server-streaming.

export interface RpcOptions {
  bindings: ServiceBinding[];
  maxBodyBytes: number;
  admit: Admit;
  log: Logger;
  shutdownSignal: AbortSignal;
}

const compressions: Compression[] = [compressionGzip, compressionBrotli];

export function protocolOf(contentType: string | undefined): Exclude<Protocol, "rest"> {
  const t = (contentType ?? "").toLowerCase();
  if (t.startsWith("application/grpc-web")) return "grpc-web";
  if (t.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/**
 * Outermost: every error a handler (or the checks below) raises leaves as rpcError() made it, with
 * its google.rpc.Status details (ErrorInfo, BadRequest, RetryInfo); its code is kept for logs (in
 * `outcomeKey`, when the call set one). The standard services' router uses it too (grpc-services.ts).
 */
export const richErrors: Interceptor = (next) => async (req) => {
  const fail = (err: unknown) => {
    const e = rpcError(err);
    const outcome = req.contextValues.get(outcomeKey);
    if (outcome) outcome.code = e.code;
    return e;
  };
  try {
    const res = await next(req);
    if (!res.stream) return res;
    // A server stream fails while it is read (before or after its first message): same treatment.
    const messages = res.message;
    return {
      ...res,
      message: (async function* () {
        try {
          yield* messages;
        } catch (err) {
          throw fail(err);
        }
      })(),
    };
  } catch (err) {
    throw fail(err);
  }
};

/** The code of the error a call's handler raised, for the status watch (src/server/grpc-status.ts). */
export const outcomeKey = createContextKey<{ code?: Code } | undefined>(undefined);

const checkMessages: Interceptor = (next) => async (req) => {
  if (!req.stream) {
    assertStorableMessage(req.method.input, req.message);
    return next(req);
  }
  // A server-streaming call's one request message arrives as a stream of one: checked as it is read.
  const input = req.message;
  const method = req.method;
  return next({
    ...req,
    message: (async function* () {
      for await (const m of input) {
        assertStorableMessage(method.input, m);
        yield m;
      }
    })(),
  });
};

const invalid = (what: string) => new ApiError(400, "invalid_message", `request message is not valid: ${what}`);

/** The decompressed bytes are charged to the request's `budget` (shared/inflight.ts). */
async function decompress(
  name: string | undefined,
  bytes: Uint8Array,
  max: number,
  budget: BodyBudget,
): Promise<Uint8Array> {
  if (!name || name === "identity") return bytes;
  const c = compressions.find((x) => x.name === name);
  if (!c) throw new ConnectError(`unsupported compression '${name}'`, Code.Unimplemented);
  let out: Uint8Array;
  try {
    out = await c.decompress(bytes, max);
  } catch (err) {
    if (err instanceof ConnectError && err.code === Code.ResourceExhausted)
      throw tooLarge(`request message exceeds ${max} bytes once decompressed`);
    throw invalid("cannot decompress");
  }
  budget.take(out.length);
  return out;
}

function parses(method: DescMethod, bytes: Uint8Array): void {
  try {
    fromBinary(method.input, bytes);
  } catch {
    throw invalid("malformed protobuf (garbage, truncated, invalid UTF-8 or nested too deeply)");
  }
}

/** Checks the body's message(s) the way connect-es will read them, before it does. */
async function checkBody(
  method: DescMethod,
  protocol: Exclude<Protocol, "rest">,
  req: AnyRequest,
  body: Buffer,
  max: number,
  budget: BodyBudget,
): Promise<void> {
  const type = String(req.headers["content-type"] ?? "").toLowerCase();
  const json = /[+/]json\b/.test(type);
  // Connect's streaming calls (a server stream's one request too) send enveloped messages, like gRPC.
  const connectStream = protocol === "connect" && type.startsWith("application/connect+");
  if (protocol === "connect" && !connectStream) {
    const bytes = await decompress(req.headers["content-encoding"] as string | undefined, body, max, budget);
    if (json ? !isUtf8(bytes) : false) throw invalid("JSON is not valid UTF-8");
    if (!json) parses(method, bytes);
    return;
  }
  // gRPC, gRPC-web and Connect streams: length-prefixed frames (flags, 4-byte length, message).
  let data: Uint8Array = body;
  if (type.startsWith("application/grpc-web-text")) data = Buffer.from(body.toString("latin1"), "base64");
  const encoding = req.headers[connectStream ? "connect-content-encoding" : "grpc-encoding"] as string | undefined;
  let pos = 0;
  while (pos < data.length) {
    if (data.length - pos < 5) throw invalid("truncated frame header");
    const flags = data[pos];
    const len = Buffer.from(data.buffer, data.byteOffset + pos + 1, 4).readUInt32BE(0);
    pos += 5;
    if (len > data.length - pos) throw invalid("truncated frame");
    let msg = data.subarray(pos, pos + len);
    pos += len;
    if (flags & 0b1000_0000) continue; // a gRPC-web trailer frame
    if (flags & 1) msg = await decompress(encoding, msg, max, budget);
    if (json) {
      if (!isUtf8(msg)) throw invalid("JSON is not valid UTF-8");
    } else parses(method, msg);
  }
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

async function* failing(err: unknown): AsyncIterable<Uint8Array> {
  throw err;
}

export function createRpcHandler(opts: RpcOptions) {
  const router = createConnectRouter({
    readMaxBytes: opts.maxBodyBytes,
    shutdownSignal: opts.shutdownSignal,
    acceptCompression: compressions,
    interceptors: [richErrors, checkMessages],
  });
  for (const b of opts.bindings) router.service(b.desc, b.impl as never);
  const paths = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));

  /** Answers `err` in the request's protocol: Connect with our HTTP status, gRPC through connect-es. */
  async function refuse(
    req: AnyRequest,
    res: AnyResponse,
    handler: UniversalHandler,
    protocol: Exclude<Protocol, "rest">,
    values: ContextValues | undefined,
    err: unknown,
    client: ClientInfo,
  ): Promise<void> {
    const e = rpcError(err);
    if (protocol === "connect") {
      client.rpcCode = e.code;
      const status = err instanceof ApiError ? err.status : e.code === Code.Unimplemented ? 415 : 400;
      const body = JSON.stringify(errorToJson(e, {}));
      e.metadata.forEach((value, key) => res.setHeader(key, value));
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const uReq = {
      ...universalRequestFromNodeRequest(req as never, res as never, undefined, values),
      body: failing(e),
    };
    await universalResponseToNodeResponse(
      watchStatus(
        await handler(uReq),
        protocol,
        () => e.code,
        (code) => (client.rpcCode = code),
      ),
      res as never,
    );
  }

  return async function handleRpc(req: AnyRequest, res: AnyResponse, client: ClientInfo): Promise<void> {
    const path = (req.url ?? "").split("?", 1)[0];
    const handler = paths.get(path);
    if (!handler) {
      req.resume();
      res.writeHead(404);
      res.end();
      return;
    }
    const protocol = protocolOf(req.headers["content-type"]);
    const verb = (req.method ?? "POST").toUpperCase();
    let values: ContextValues | undefined;
    let bodyRead = false;
    const outcome: { code?: Code } = {};
    // The request's share of the bytes in flight (shared/inflight.ts), released once it is answered.
    let budget: BodyBudget = UNBOUNDED;
    try {
      values = (await opts.admit(handler.method, verb, req, client)).set(outcomeKey, outcome);
      budget = values.get(bodyBudgetKey);
      let body: Buffer | undefined;
      if (verb === "POST") {
        body = await readBody(req, opts.maxBodyBytes, budget);
        bodyRead = true;
        await checkBody(handler.method, protocol, req, body, opts.maxBodyBytes, budget);
      }
      const uReq = universalRequestFromNodeRequest(req as never, res as never, undefined, values);
      const uRes = await handler(body ? { ...uReq, body: once(body) } : uReq);
      await universalResponseToNodeResponse(
        watchStatus(
          uRes,
          protocol,
          () => outcome.code,
          (code) => (client.rpcCode = code),
        ),
        res as never,
      );
    } catch (err) {
      if (!bodyRead) {
        req.resume();
        if ("shouldKeepAlive" in res) res.shouldKeepAlive = false;
      }
      if (res.headersSent) {
        if (!res.writableEnded) res.end();
        return;
      }
      await refuse(req, res, handler, protocol, values, err, client).catch((e2) =>
        opts.log.debug({ err: e2 }, "could not answer a refused RPC"),
      );
    } finally {
      budget.release();
    }
  };
}
