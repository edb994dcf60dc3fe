import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import type { AnyRequest } from "./body.js";

// CORS for the browser ingestion routes only (the routes come from the caller: RestOptions of
// rest.ts). A preflight carries no key, so it is answered for any origin; the project's
// allowedOrigins is enforced on the actual request (src/auth/principal.ts `checkOrigin`), whose
// refusal leaves without these headers so the browser refuses it too. Never
// Access-Control-Allow-Credentials: these routes take a key, never a cookie. Every other route
// answers OPTIONS with 404 and sets no CORS header (cookie routes stay same-origin).

type AnyResponse = ServerResponse | Http2ServerResponse;

/** The request's `Origin`, when it is one a header may echo (printable ASCII, bounded). */
export function requestOrigin(req: AnyRequest): string | undefined {
  const o = req.headers.origin;
  return typeof o === "string" && /^[\x21-\x7e]{1,2048}$/.test(o) ? o : undefined;
}

/** On every answer of a browser ingestion route (errors included: 400, 401, 413 and 429 must be readable). */
export function setCorsHeaders(res: AnyResponse, origin: string | undefined): void {
  res.setHeader("vary", "Origin");
  if (origin === undefined) return;
  res.setHeader("access-control-allow-origin", origin);
  res.setHeader("access-control-expose-headers", "Retry-After");
}

/** Undoes setCorsHeaders (an origin the project does not allow). */
export function dropCorsHeaders(res: AnyResponse): void {
  res.removeHeader("access-control-allow-origin");
  res.removeHeader("access-control-expose-headers");
}

/** 204 to `OPTIONS` on a browser ingestion route. */
export function answerPreflight(res: AnyResponse, origin: string | undefined): void {
  res.setHeader("allow", "POST, OPTIONS");
  res.setHeader("vary", "Origin");
  if (origin !== undefined) {
    res.setHeader("access-control-allow-origin", origin);
    res.setHeader("access-control-allow-methods", "POST");
    res.setHeader("access-control-allow-headers", "authorization, content-type, content-encoding");
    res.setHeader("access-control-max-age", "86400");
  }
  res.writeHead(204);
  res.end();
}
