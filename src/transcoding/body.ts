import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import type { Http2ServerRequest } from "node:http2";
import { ApiError, tooLarge } from "../shared/errors.js";

// Reads a request body as JSON under a byte cap. An over-long body is refused as soon as the
// declared length or the bytes read pass the cap, never buffered whole.

export type AnyRequest = IncomingMessage | Http2ServerRequest;

export async function readBody(req: AnyRequest, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    throw tooLarge(`request body exceeds ${maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  // destroyOnReturn: false — leaving the loop early (the cap) must not destroy the request: over
  // HTTP/1.1 that destroys the socket, and the 413 could never be written (the client would hang).
  for await (const chunk of (req as Readable).iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) {
      req.resume();
      throw tooLarge(`request body exceeds ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const type = value.split(";")[0].trim().toLowerCase();
  return type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

/** `text/plain` (any charset): what navigator.sendBeacon sends a string or a text Blob as. */
export function isTextPlain(value: string | undefined): boolean {
  return !!value && value.split(";")[0].trim().toLowerCase() === "text/plain";
}

/** `textPlain`: a text/plain body is read as JSON too (sendBeacon on the browser ingestion routes). */
export function parseJsonBody(buf: Buffer, contentType: string | undefined, textPlain = false): unknown {
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
