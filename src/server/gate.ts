import type { IncomingHttpHeaders } from "node:http";
import { getOption, hasOption, type DescMethod } from "@bufbuild/protobuf";
import { no_credentials } from "../../gen/vigil/v1/options_pb.js";
import { PUBLISHABLE_ONLY_INGESTS, checkOrigin, type CredentialHeaders, type Principal } from "../auth/principal.js";
import { ApiError, forbidden, unauthenticated } from "../shared/errors.js";
import { isJsonContentType } from "../transcoding/body.js";
import { NodeRequestHeaders } from "../transcoding/context.js";
import type { RateLimiter } from "../shared/ratelimit.js";
import { BROWSER_INGEST, INGEST_LIMITS, PING_URLS } from "./ingest-routes.js";

// The request gate: what every request passes, over every protocol, BEFORE its body is read.
//
// 1. Cross-site request forgery. A write that does not carry an API key (cookie-authenticated, or
//    a sign-up/login that will set the cookie) must come from the dashboard's own origin: it is
//    refused (403) when the browser says it is cross-site (`Sec-Fetch-Site`) or its `Origin` is
//    not this host. Over REST a POST, PATCH or PUT must also be `Content-Type: application/json`
//    (415 otherwise, even with an empty body): a cross-site page can send form and text/plain
//    bodies without a preflight, but not JSON (nor a DELETE). Requests with `Authorization: Bearer` are not cookie-borne and pass.
//    The media type is checked after the credentials (2): without them, the answer is 401, not 415.
// 2. Credentials. Unless the RPC is marked `(vigil.v1.no_credentials)`, the caller is resolved
//    from the headers (401 for missing, unknown or revoked credentials) so that an anonymous
//    client cannot make the service read or parse a large body.
//    On the browser ingestion routes a publishable key may come in `?key=` instead (sendBeacon).
// 3. Publishable keys (vk_pub_...) may call the browser ingestion RPCs only: anything else is a 403
//    here, over every protocol (src/auth refuses them too, in `project` and `session`); and from an
//    origin of the project's allowedOrigins when the request has an `Origin` (src/auth `checkOrigin`).
// 4. Ingestion rate limits. On the ingestion RPCs (`INGEST_LIMITS`) an API key's limit is taken
//    here, for its project, before the body is read: a caller over its limit costs no read,
//    inflation or parse (429 with Retry-After). Sessions (metrics, heartbeats) are counted by the
//    handler, once the project of the path is known.
// 5. Ping URLs (`PING_URLS`): the key is in the path, not a header. Over REST it is resolved here
//    (a ping key only: 401 unknown or revoked, 403 another kind) and the heartbeat limit taken, before
//    the body is read; rules 1-3 do not apply (no header, no cookie). Over RPC the key is in the
//    message: the handler resolves and counts it (`auth.pingKey`). Ping keys (vk_ping_...) in a
//    header are refused by src/auth on every route whose access is not `heartbeat` (403).

export type Protocol = "rest" | "connect" | "grpc" | "grpc-web";

interface GateRequest {
  method: DescMethod;
  /** HTTP verb. */
  verb: string;
  headers: IncomingHttpHeaders;
  protocol: Protocol;
  /** REST: the values of the `key` query parameter (sendBeacon cannot set an Authorization header). */
  queryKeys?: string[];
  /** REST, on the ping URLs (`PING_URLS`): the key of the path. */
  pathKey?: string;
}

export type Gate = (r: GateRequest) => Promise<Principal | undefined>;

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);
const SAME_ORIGIN_FETCH = new Set(["same-origin", "none"]);

function header(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

/** True when a browser tells us the request comes from another site. */
function isCrossSite(h: IncomingHttpHeaders): boolean {
  const site = header(h, "sec-fetch-site");
  if (site !== undefined) return !SAME_ORIGIN_FETCH.has(site.toLowerCase());
  const origin = header(h, "origin");
  if (origin === undefined) return false; // not a browser, or a same-origin GET/HEAD
  let host: string;
  try {
    host = new URL(origin).host.toLowerCase();
  } catch {
    return true; // "null" (sandboxed frames, file:) and garbage
  }
  const own = [header(h, "host"), header(h, ":authority"), header(h, "x-forwarded-host")]
    .filter((x): x is string => !!x)
    .map((x) => x.split(",")[0].trim().toLowerCase());
  return !own.includes(host);
}

const publicMethods = new WeakMap<DescMethod, boolean>();

export function isPublic(method: DescMethod): boolean {
  let p = publicMethods.get(method);
  if (p === undefined)
    publicMethods.set(method, (p = hasOption(method, no_credentials) && getOption(method, no_credentials)));
  return p;
}

export function createGate(
  auth: {
    fromHeaders(h: CredentialHeaders): Promise<Principal>;
    fromQueryKey(key: string): Promise<Principal>;
    fromPingKey(key: string): Promise<Principal>;
  },
  limits: Pick<RateLimiter, "take">,
): Gate {
  // Taken on the ingestion RPCs only; in process it answers without a promise (no await per request).
  const ingestLimit = (method: DescMethod, principal: Principal) => {
    const limit = INGEST_LIMITS.get(method);
    return limit && principal.kind === "apiKey" ? limits.take(limit, principal.projectId) : undefined;
  };
  return async ({ method, verb, headers, protocol, queryKeys, pathKey }) => {
    // A ping URL carries its key in the path (curl from a crontab): no header, no cookie, any body type.
    if (PING_URLS.has(method)) {
      if (pathKey === undefined) return undefined; // gRPC, Connect: in the message (the handler's)
      const principal = await auth.fromPingKey(pathKey);
      const limited = ingestLimit(method, principal);
      if (limited) await limited;
      return principal;
    }
    // navigator.sendBeacon: a publishable key in `?key=` on a browser ingestion route, with a
    // text/plain body (rest.ts reads it as JSON). It carries a key, not a cookie: the cross-site
    // rule does not apply, the origin check does.
    if (protocol === "rest" && queryKeys?.length && BROWSER_INGEST.has(method)) {
      if (queryKeys.length > 1 || headers.authorization !== undefined)
        throw unauthenticated("send the key once: in the Authorization header, or as one ?key= parameter");
      const principal = await auth.fromQueryKey(queryKeys[0]);
      checkOrigin(principal, header(headers, "origin"));
      const limited = ingestLimit(method, principal);
      if (limited) await limited;
      return principal;
    }
    if (!SAFE.has(verb) && headers.authorization === undefined && protocol !== "grpc") {
      if (isCrossSite(headers))
        throw forbidden(
          "cross-site request refused: send it from the dashboard's origin, or authenticate with an API key",
        );
    }
    // Credentials before the media type: a caller without them learns 401, whatever it sent.
    const principal = isPublic(method) ? undefined : await auth.fromHeaders(new NodeRequestHeaders(headers));
    // Every REST write but DELETE says its body is JSON, whoever sends it (the document's
    // `requestBody.required`): for a cookie it is also the cross-site rule (a form cannot send
    // application/json); an API key's absent body is refused the same way, not read as `{}`.
    if (
      !SAFE.has(verb) &&
      protocol === "rest" &&
      verb !== "DELETE" &&
      !isJsonContentType(header(headers, "content-type"))
    ) {
      throw new ApiError(
        415,
        "unsupported_media_type",
        "request body must be JSON (Content-Type: application/json), also when it is empty",
      );
    }
    if (principal === undefined) return undefined;
    if (principal.kind === "apiKey" && principal.keyKind === "publishable" && !BROWSER_INGEST.has(method))
      throw forbidden(PUBLISHABLE_ONLY_INGESTS);
    checkOrigin(principal, header(headers, "origin"));
    const limited = ingestLimit(method, principal);
    if (limited) await limited;
    return principal;
  };
}
