import type { Logger } from "pino";
import { clientAddress, type ClientInfo } from "../shared/context.js";
import { ApiError, methodNotAllowed, notFound, toRestError } from "../shared/errors.js";
import { assertNever } from "../shared/never.js";
import type { HttpRoutes } from "../shared/feature.js";
import type { RateLimiter } from "../shared/ratelimit.js";
import type { AnyRequest } from "../transcoding/body.js";
import { checkText, type AnyResponse } from "../transcoding/rest.js";
import { markup } from "./escape.js";
import { HTML_CSP } from "./html.js";
import { parseSlug } from "./requests.js";
import type { Representation, Snapshot } from "./snapshot.js";

// The public pages over plain HTTP, answered from the snapshot's ready bytes (never re-serialized
// per request), before the REST transcoder (src/server/app.ts):
//   GET /v1/status/{slug}            the JSON of GetStatusPage (the same bytes the transcoder would write)
//   GET /status/{slug}               the HTML page
//   GET /status/{slug}/badge.svg     the page's badge; ?monitor=<monitor slug> one monitor's
//   GET /status/{slug}/feed.atom     the incidents as Atom
// Each answer: Cache-Control public for the refresh interval, a weak ETag (304 on If-None-Match),
// gzip when accepted (Vary: Accept-Encoding); HEAD too. Order of checks: the path's text (NUL, as the
// transcoder does), the per-address rate limit (statusReads, before any lookup), the slug's grammar,
// then the cache. Errors are the decisions.md JSON body, except on the HTML page, which answers a
// small HTML page with the same status and message.

type Kind = "json" | "html" | "badge" | "feed";

interface Match {
  kind: Kind;
  rawSlug: string;
}

const PATTERNS: { re: RegExp; kind: Kind; template: string }[] = [
  { re: /^\/v1\/status\/([^/]+)$/, kind: "json", template: "/v1/status/{slug}" },
  { re: /^\/status\/([^/]+)$/, kind: "html", template: "/status/{slug}" },
  { re: /^\/status\/([^/]+)\/badge\.svg$/, kind: "badge", template: "/status/{slug}/badge.svg" },
  { re: /^\/status\/([^/]+)\/feed\.atom$/, kind: "feed", template: "/status/{slug}/feed.atom" },
];

function matchPath(pathname: string): (Match & { template: string }) | undefined {
  const p = pathname.replace(/\/+$/, "");
  for (const { re, kind, template } of PATTERNS) {
    const m = re.exec(p);
    if (m) return { kind, rawSlug: m[1], template };
  }
  return undefined;
}

/** True when the Accept-Encoding header takes gzip (q > 0). */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const v = Array.isArray(header) ? header.join(",") : (header ?? "");
  let star = false;
  for (const part of v.toLowerCase().split(",")) {
    const [coding, ...params] = part.trim().split(";");
    const q = params.map((x) => x.trim()).find((x) => x.startsWith("q="));
    const ok = q === undefined || Number(q.slice(2)) > 0;
    if (coding === "gzip" || coding === "x-gzip") return ok;
    if (coding === "*") star = ok;
  }
  return star;
}

/** True when If-None-Match names the ETag (weak comparison, RFC 9110 13.1.2) or is `*`. */
export function etagMatches(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const opaque = (t: string) => t.trim().replace(/^W\//, "");
  const mine = opaque(etag);
  return (Array.isArray(header) ? header.join(",") : header)
    .split(",")
    .some((t) => t.trim() === "*" || opaque(t) === mine);
}

export interface StatusHttpOptions {
  pages: { get(slug: string): Promise<Snapshot | undefined> };
  limits: Pick<RateLimiter, "take">;
  /** max-age of the answers (the refresh interval, rounded up to a second). */
  maxAgeSeconds: number;
  log: Logger;
}

export function createStatusHttp(o: StatusHttpOptions): HttpRoutes {
  const represent = (s: Snapshot, kind: Kind, url: URL): Representation => {
    switch (kind) {
      case "json":
        return s.json;
      case "html":
        return s.html;
      case "feed":
        return s.feed;
      case "badge": {
        const monitor = url.searchParams.get("monitor");
        if (monitor === null) return s.badge;
        const r = s.monitorBadges.get(monitor);
        if (!r) throw notFound("monitor on this page");
        return r;
      }
      default:
        return assertNever(kind);
    }
  };

  async function serve(req: AnyRequest, res: AnyResponse, m: Match, client: ClientInfo): Promise<void> {
    const verb = (req.method ?? "GET").toUpperCase();
    req.resume();
    try {
      const url = new URL(req.url ?? "/", "http://vigil.local");
      if (verb !== "GET" && verb !== "HEAD") throw methodNotAllowed(url.pathname, verb, ["GET", "HEAD"]);
      let raw: string;
      try {
        raw = decodeURIComponent(m.rawSlug);
      } catch {
        throw new ApiError(404, "not_found", `no route for ${verb} ${url.pathname}`); // not UTF-8: no such path
      }
      checkText("slug", raw);
      for (const [name, value] of url.searchParams) checkText(name, value);
      await o.limits.take("statusReads", clientAddress(client));
      const slug = parseSlug(raw);
      const snapshot = await o.pages.get(slug);
      if (!snapshot) throw notFound("status page");
      send(req, res, verb, represent(snapshot, m.kind, url), m.kind);
    } catch (err) {
      fail(res, err, m.kind, client);
    }
  }

  function send(req: AnyRequest, res: AnyResponse, verb: string, r: Representation, kind: Kind): void {
    res.setHeader("cache-control", `public, max-age=${o.maxAgeSeconds}`);
    res.setHeader("etag", r.etag);
    res.setHeader("vary", "Accept-Encoding");
    res.setHeader("x-content-type-options", "nosniff");
    if (kind === "html") {
      res.setHeader("content-security-policy", HTML_CSP);
      res.setHeader("referrer-policy", "no-referrer");
    } else {
      // Public data: other sites may read it (no credentials are ever involved).
      res.setHeader("access-control-allow-origin", "*");
      if (kind === "badge") res.setHeader("content-security-policy", "default-src 'none'");
    }
    if (etagMatches(req.headers["if-none-match"], r.etag)) {
      res.writeHead(304);
      res.end();
      return;
    }
    const gz = acceptsGzip(req.headers["accept-encoding"]);
    const body = gz ? r.gzip : r.body;
    const headers: Record<string, string | number> = { "content-type": r.type, "content-length": body.length };
    if (gz) headers["content-encoding"] = "gzip";
    res.writeHead(200, headers);
    if (verb === "HEAD") res.end();
    else res.end(body);
  }

  function fail(res: AnyResponse, err: unknown, kind: Kind, client: ClientInfo): void {
    writeRouteError(res, err, {
      log: o.log,
      requestId: client.requestId,
      what: "status page failed",
      html:
        kind === "html"
          ? {
              csp: "default-src 'none'",
              page: (status, message) => {
                const title = status === 404 ? "Page not found" : "Status page unavailable";
                return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title}</title></head>
<body><main><h1>${title}</h1><p>${markup(message)}</p></main></body></html>
`;
              },
            }
          : undefined,
    });
  }

  return {
    route(pathname) {
      const m = matchPath(pathname);
      return m && { template: m.template, serve: (req, res, client) => void serve(req, res, m, client) };
    },
  };
}

/**
 * The error answer of the public routes (status pages, subscriber links): the status and headers of
 * `toRestError` (less its code, type and length), `no-store`, `nosniff`, a 5xx logged without its
 * details reaching the client; the decisions.md JSON body, or with `html` a page (and its CSP).
 */
export function writeRouteError(
  res: AnyResponse,
  err: unknown,
  o: {
    log: Logger;
    requestId: string;
    what: string;
    html?: { csp: string; page: (status: number, message: string) => string };
  },
): void {
  const { status, body, headers } = toRestError(err);
  if (status >= 500) o.log.error({ err, requestId: o.requestId }, o.what);
  if (res.headersSent) {
    res.end();
    return;
  }
  headers.forEach((value, key) => {
    if (key !== "vigil-error-code" && key !== "content-type" && key !== "content-length") res.setHeader(key, value);
  });
  res.setHeader("cache-control", "no-store");
  res.setHeader("x-content-type-options", "nosniff");
  if (o.html) res.setHeader("content-security-policy", o.html.csp);
  const payload = o.html ? o.html.page(status, body.error.message) : JSON.stringify(body);
  const type = o.html ? "text/html; charset=utf-8" : "application/json; charset=utf-8";
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(payload) });
  res.end(payload);
}
