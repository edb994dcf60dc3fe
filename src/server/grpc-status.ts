import { create } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { Code, encodeBinaryHeader } from "@connectrpc/connect";
import { codeFromHttpStatus, codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ERROR_DOMAIN, codeName } from "../shared/errors.js";
import type { Protocol } from "./gate.js";

// Where an RPC's response finishes: the status it ended with (for logs and grpc_server_handled_total;
// over gRPC the HTTP status is always 200, the outcome is in the trailers), and the trailers made
// right for every gRPC client:
//
// * `grpc-message` percent-encoded as the gRPC spec says (only bytes outside 0x20-0x7E and `%`).
//   connect-es writes encodeURIComponent(), which also escapes `:`, `/`, `,`... as %3A etc.;
//   @grpc/grpc-js decodes with decodeURI(), which leaves those escapes as they are, so its
//   `err.details` read "missing credentials%3A send...". The spec's form decodes right in both.
// * `grpc-status-details-bin` on every failure: errors raised inside connect-es itself (a malformed
//   grpc-timeout, say) never pass our interceptor; they get the ErrorInfo of their code here.

const unencoded = /^[\x20-\x24\x26-\x7e]*$/;

/** The gRPC spec's Percent-Encoded form of a status message (UTF-8 bytes outside 0x20-0x7E, and `%`). */
function encodeGrpcMessage(message: string): string {
  if (unencoded.test(message)) return message;
  let out = "";
  for (const b of Buffer.from(message, "utf8")) {
    out +=
      b >= 0x20 && b <= 0x7e && b !== 0x25
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function decodeLoosely(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Fixes a gRPC trailer (or trailers-only header) block in place; returns its status code, if any. */
function fixGrpcTrailer(t: Headers): Code | 0 | undefined {
  const raw = t.get("grpc-status");
  if (raw === null) return undefined;
  const code = Number(raw);
  const message = t.get("grpc-message");
  if (message !== null) t.set("grpc-message", encodeGrpcMessage(decodeLoosely(message)));
  if (code !== 0 && code in Code && !t.has("grpc-status-details-bin")) {
    const status = create(StatusSchema, {
      code,
      message: message === null ? "" : decodeLoosely(message),
      details: [anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason: codeName(code), domain: ERROR_DOMAIN }))],
    });
    t.set("grpc-status-details-bin", encodeBinaryHeader(status, StatusSchema));
  }
  return Number.isInteger(code) ? (code as Code | 0) : undefined;
}

/** A gRPC-web trailer frame's status (flag 0x80, then "grpc-status: N\r\n..." as text). */
function grpcWebStatus(chunk: Uint8Array): number | undefined {
  if (chunk.length < 5 || !(chunk[0] & 0x80)) return undefined;
  const len = Buffer.from(chunk.buffer, chunk.byteOffset + 1, 4).readUInt32BE(0);
  if (len !== chunk.length - 5) return undefined;
  const m = /^grpc-status:\s*(\d+)\s*$/im.exec(Buffer.from(chunk.buffer, chunk.byteOffset + 5, len).toString("latin1"));
  return m ? Number(m[1]) : undefined;
}

/**
 * Wraps the response connect-es produced so that, once its body has been written, `done` learns
 * the RPC's status code (0 = OK), and gRPC trailers are fixed (see above) before they are sent.
 * Connect errors are unary JSON with an HTTP status; `errorCode` is the code of the error our
 * interceptor saw, when it saw one.
 */
export function watchStatus(
  uRes: UniversalServerResponse,
  protocol: Exclude<Protocol, "rest">,
  errorCode: () => Code | undefined,
  done: (code: number) => void,
): UniversalServerResponse {
  if (protocol === "connect") {
    done(uRes.status === 200 ? 0 : (errorCode() ?? codeFromHttpStatus(uRes.status)));
    return uRes;
  }
  const body = uRes.body;
  const finish = (fromBody: number | undefined) => {
    const fromTrailer = uRes.trailer ? fixGrpcTrailer(uRes.trailer) : undefined;
    const fromHeader = fixGrpcTrailer(uRes.header ?? new Headers());
    done(
      fromTrailer ??
        fromBody ??
        fromHeader ??
        (uRes.status === 200 ? (errorCode() ?? 0) : codeFromHttpStatus(uRes.status)),
    );
  };
  if (!body || !(Symbol.asyncIterator in body)) {
    finish(undefined);
    return uRes;
  }
  async function* watched(): AsyncIterable<Uint8Array> {
    let webStatus: number | undefined;
    for await (const chunk of body as AsyncIterable<Uint8Array>) {
      if (protocol === "grpc-web") webStatus = grpcWebStatus(chunk) ?? webStatus;
      yield chunk;
    }
    finish(webStatus);
  }
  return { ...uRes, body: watched() };
}

/**
 * The status `vigil_http_requests_total` counts a request under. gRPC and gRPC-web answer HTTP 200
 * whatever the RPC's outcome (it travels in the trailers), so a finished call counts under the HTTP
 * status its gRPC code maps to, by the table the Connect protocol uses (connect-es's
 * `codeToHttpStatus`: InvalidArgument 400, Unauthenticated 401, Unavailable 503...; OK 200). Any
 * other answer (REST, Connect, a gRPC call refused with a non-200 status) counts as it was sent.
 */
export function requestStatus(httpStatus: number, protocol: Protocol, rpcCode: number | undefined): number {
  if (protocol !== "grpc" && protocol !== "grpc-web") return httpStatus;
  if (httpStatus !== 200 || rpcCode === undefined) return httpStatus;
  return rpcCode === 0 ? 200 : codeToHttpStatus(rpcCode);
}

/** The status code's name as gRPC's own libraries print it ("OK", "InvalidArgument", ...). */
export const grpcCodeName = (code: number): string => (code === 0 ? "OK" : (Code[code] ?? "Unknown"));

/**
 * The level a finished RPC is logged at, by its code (go-grpc-middleware's server defaults): the
 * caller's own mistakes at info, what an operator may need to look at at warn, server faults at error.
 */
export function rpcLogLevel(code: number): "info" | "warn" | "error" {
  switch (code) {
    case Code.DeadlineExceeded:
    case Code.PermissionDenied:
    case Code.ResourceExhausted:
    case Code.FailedPrecondition:
    case Code.Aborted:
    case Code.OutOfRange:
    case Code.Unavailable:
      return "warn";
    case Code.Unknown:
    case Code.Unimplemented:
    case Code.Internal:
    case Code.DataLoss:
      return "error";
    default:
      return "info";
  }
}
