import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import { finished } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import type { Http2ServerRequest } from "node:http2";
import type { JsonValue } from "@bufbuild/protobuf";
import { ApiError, tooLarge } from "../shared/errors.js";
import { UNBOUNDED, type BodyBudget } from "../shared/inflight.js";

// Reads a request body as JSON under a byte cap. An over-long body is refused as soon as the
// declared length or the bytes read pass the cap, never buffered whole. The bytes kept are charged
// to the request's `budget` (shared/inflight.ts) as they arrive: over it, the read stops there.

export type AnyRequest = IncomingMessage | Http2ServerRequest;

export function readBody(req: AnyRequest, maxBytes: number, budget: BodyBudget = UNBOUNDED): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    return Promise.reject(tooLarge(`request body exceeds ${maxBytes} bytes`));
  }
  // 'data' listeners and stream.finished (end, error, or the client gone: ERR_STREAM_PREMATURE_CLOSE)
  // rather than an async iterator: this runs on every request, and the iterator costs a promise per
  // chunk plus its own machinery. Refused early (the cap, the budget), the rest of the body is
  // discarded (resume), never the request destroyed: over HTTP/1.1 that would destroy the socket,
  // and the 413 could never be written (the client would hang).
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const stop = (err: unknown) => {
      req.off("data", onData);
      cleanup();
      req.resume();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > maxBytes) return stop(tooLarge(`request body exceeds ${maxBytes} bytes`));
      try {
        budget.take(chunk.length);
      } catch (err) {
        return stop(err);
      }
      chunks.push(chunk);
    };
    const cleanup = finished(req as Readable, { writable: false }, (err) => {
      req.off("data", onData);
      cleanup();
      if (err) reject(err);
      else resolve(Buffer.concat(chunks, total));
    });
    req.on("data", onData);
  });
}

/**
 * True for a gzip body, false for none (absent or `identity`); 415 for any other encoding, and for
 * gzip on a route that does not take it (`gzipAllowed`: the ingestion routes).
 */
export function bodyEncoding(header: string | string[] | undefined, gzipAllowed: boolean): boolean {
  const value = (Array.isArray(header) ? header.join(",") : (header ?? "")).trim().toLowerCase();
  if (value === "" || value === "identity") return false;
  if ((value === "gzip" || value === "x-gzip") && gzipAllowed) return true;
  throw new ApiError(
    415,
    "unsupported_media_type",
    gzipAllowed
      ? "unsupported Content-Encoding: send gzip or identity"
      : "Content-Encoding is accepted on the ingestion routes only (gzip); send this body uncompressed",
  );
}

/**
 * A gzip body, decompressed as it arrives: MAX_BODY_BYTES bounds the compressed bytes AND the
 * decompressed ones, so a bomb (a few KB inflating to gigabytes) is refused with 413 after at most
 * `maxBytes` have been inflated, never inflated whole. The inflated bytes are charged to `budget` as
 * they come out (the compressed ones pass through): a node never holds more than its bound of them.
 * Corrupt or truncated gzip is a 400.
 */
export async function readGzipBody(req: AnyRequest, maxBytes: number, budget: BodyBudget = UNBOUNDED): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    throw tooLarge(`request body exceeds ${maxBytes} bytes`);
  }
  let compressed = 0;
  // destroyOnReturn: false, as in readBody: the request must outlive an early stop to be answered.
  async function* source() {
    for await (const chunk of (req as Readable).iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      compressed += chunk.length;
      if (compressed > maxBytes) throw tooLarge(`request body exceeds ${maxBytes} bytes`);
      yield chunk;
    }
  }
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    await pipeline(source, createGunzip(), async (inflated: AsyncIterable<Buffer>) => {
      for await (const chunk of inflated) {
        total += chunk.length;
        if (total > maxBytes) throw tooLarge(`request body exceeds ${maxBytes} bytes once decompressed`);
        budget.take(chunk.length);
        chunks.push(chunk);
      }
    });
  } catch (err) {
    req.resume();
    if (err instanceof ApiError) throw err;
    // zlib's errors (Z_DATA_ERROR, Z_BUF_ERROR: corrupt or truncated); others (the client went away) as they are.
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("Z_"))
      throw new ApiError(400, "invalid_body", "request body is not valid gzip (Content-Encoding: gzip)");
    throw err;
  }
  return Buffer.concat(chunks, total);
}

export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  if (value === "application/json") return true; // what nearly every client sends: no parsing
  const type = value.split(";")[0].trim().toLowerCase();
  return type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

/** `text/plain` (any charset): what navigator.sendBeacon sends a string or a text Blob as. */
function isTextPlain(value: string | undefined): boolean {
  return !!value && value.split(";")[0].trim().toLowerCase() === "text/plain";
}

/** `textPlain`: a text/plain body is read as JSON too (sendBeacon on the browser ingestion routes). */
export function parseJsonBody(buf: Buffer, contentType: string | undefined, textPlain = false): JsonValue | undefined {
  if (buf.length === 0) return undefined;
  if (!isJsonContentType(contentType) && !(textPlain && isTextPlain(contentType))) {
    throw new ApiError(415, "unsupported_media_type", "request body must be JSON (Content-Type: application/json)");
  }
  try {
    return JSON.parse(buf.toString("utf8"));
  } catch {
    throw new ApiError(400, "invalid_json", "request body is not valid JSON");
  }
}
