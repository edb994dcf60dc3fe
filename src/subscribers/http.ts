import type { Logger } from "pino";
import { clientAddress, type ClientInfo } from "../shared/context.js";
import { ApiError, methodNotAllowed, notFound } from "../shared/errors.js";
import type { HttpRoutes } from "../shared/feature.js";
import type { RateLimiter } from "../shared/ratelimit.js";
import { markup } from "../status/escape.js";
import { writeRouteError } from "../status/http.js";
import { parseSlug } from "../status/requests.js";
import { readBody, parseJsonBody, type AnyRequest } from "../transcoding/body.js";
import { checkText, type AnyResponse } from "../transcoding/rest.js";

// The public subscriber routes of a page (decisions.md "Status communication"; docs/pages.md
// "Subscribers"), served like the page's other public routes, before the REST transcoder:
//   POST /v1/status/{slug}/subscribe        {email}: 202, the same body whether or not the address is known
//   GET  /status/{slug}/confirm?token=      a page with a button; POST confirms (single use)
//   GET  /status/{slug}/unsubscribe?token=  a page with a button; POST (List-Unsubscribe=One-Click) removes
// Without SMTP_URL (or PUBLIC_URL, which every link needs) every one is a 404. Order of checks: the
// method (405), the path's text, the per-address rate limit, the slug's grammar, then the page.
// Errors: the JSON body on the /v1 route, a small HTML page with the same status on the others.

type Kind = "subscribe" | "confirm" | "unsubscribe";

const PATTERNS: { re: RegExp; kind: Kind; template: string }[] = [
  { re: /^\/v1\/status\/([^/]+)\/subscribe$/, kind: "subscribe", template: "/v1/status/{slug}/subscribe" },
  { re: /^\/status\/([^/]+)\/confirm$/, kind: "confirm", template: "/status/{slug}/confirm" },
  { re: /^\/status\/([^/]+)\/unsubscribe$/, kind: "unsubscribe", template: "/status/{slug}/unsubscribe" },
];

/** Answers of the subscriber routes' domain side (service.ts). */
export interface SubscriberActions {
  /** False: no SMTP_URL or PUBLIC_URL (every route is a 404). */
  enabled: boolean;
  subscribe(slug: string, body: unknown): Promise<void>;
  /** Whether the page exists and the link is one of ours (the GET page), then the POST's change. */
  confirmable(slug: string, token: string): Promise<{ title: string }>;
  confirm(slug: string, token: string): Promise<{ title: string }>;
  unsubscribable(slug: string, token: string): Promise<{ title: string }>;
  unsubscribe(slug: string, token: string): Promise<{ title: string }>;
}

export interface SubscriberHttpOptions {
  actions: SubscriberActions;
  limits: Pick<RateLimiter, "take">;
  maxBodyBytes: number;
  log: Logger;
}

/** The one body of every accepted subscription request: it tells nothing about the address. */
const SUBSCRIBE_ACCEPTED = JSON.stringify({
  data: { message: "if this address can subscribe, a confirmation link has been sent to it" },
});

const HTML_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${markup(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#111}button{font:inherit;padding:.5rem 1rem}</style></head>
<body><main><h1>${markup(title)}</h1>${body}</main></body></html>
`;
}

export function createSubscriberHttp(o: SubscriberHttpOptions): HttpRoutes {
  async function serve(req: AnyRequest, res: AnyResponse, kind: Kind, rawSlug: string, client: ClientInfo) {
    const verb = (req.method ?? "GET").toUpperCase();
    try {
      const url = new URL(req.url ?? "/", "http://vigil.local");
      const allowed = kind === "subscribe" ? ["POST"] : ["GET", "HEAD", "POST"];
      if (!allowed.includes(verb)) throw methodNotAllowed(url.pathname, verb, allowed);
      if (!o.actions.enabled) throw new ApiError(404, "not_found", `no route for ${verb} ${url.pathname}`);
      let raw: string;
      try {
        raw = decodeURIComponent(rawSlug);
      } catch {
        throw new ApiError(404, "not_found", `no route for ${verb} ${url.pathname}`);
      }
      checkText("slug", raw);
      for (const [name, value] of url.searchParams) checkText(name, value);
      await o.limits.take(kind === "subscribe" ? "subscribeAddress" : "statusReads", clientAddress(client));
      const slug = parseSlug(raw);
      if (kind === "subscribe") {
        const body = parseJsonBody(await readBody(req, o.maxBodyBytes), req.headers["content-type"]);
        await o.actions.subscribe(slug, body);
        res.writeHead(202, {
          "content-type": "application/json; charset=utf-8",
          "content-length": Buffer.byteLength(SUBSCRIBE_ACCEPTED),
          "cache-control": "no-store",
        });
        res.end(SUBSCRIBE_ACCEPTED);
        return;
      }
      const token = url.searchParams.get("token") ?? "";
      let html: string;
      if (verb === "POST") {
        const form = (await readBody(req, 4096)).toString("utf8");
        if (kind === "confirm") {
          const { title } = await o.actions.confirm(slug, token);
          html = page("Subscription confirmed", `<p>You will receive the notices of ${markup(title)} by email.</p>`);
        } else {
          // RFC 8058: the one-click POST's body is `List-Unsubscribe=One-Click` (our own form sends the same).
          if (!new URLSearchParams(form).has("List-Unsubscribe"))
            throw new ApiError(400, "validation_failed", "the body must be List-Unsubscribe=One-Click", [
              { field: "List-Unsubscribe", message: "is required" },
            ]);
          const { title } = await o.actions.unsubscribe(slug, token);
          html = page("Unsubscribed", `<p>This address will receive no more notices of ${markup(title)}.</p>`);
        }
      } else {
        req.resume();
        const action = `?token=${encodeURIComponent(token)}`;
        if (kind === "confirm") {
          const { title } = await o.actions.confirmable(slug, token);
          html = page(
            `Confirm your subscription to ${title}`,
            `<form method="post" action="${markup(action)}"><button type="submit">Confirm the subscription</button></form>`,
          );
        } else {
          const { title } = await o.actions.unsubscribable(slug, token);
          html = page(
            `Unsubscribe from ${title}`,
            `<form method="post" action="${markup(action)}"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`,
          );
        }
      }
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-length": Buffer.byteLength(html),
        "cache-control": "no-store",
        "content-security-policy": HTML_CSP,
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
      });
      if (verb === "HEAD") res.end();
      else res.end(html);
    } catch (err) {
      fail(req, res, err, kind, client);
    }
  }

  function fail(req: AnyRequest, res: AnyResponse, err: unknown, kind: Kind, client: ClientInfo): void {
    req.resume();
    writeRouteError(res, err, {
      log: o.log,
      requestId: client.requestId,
      what: "status page subscriber route failed",
      html:
        kind === "subscribe"
          ? undefined
          : {
              csp: HTML_CSP,
              page: (status, message) =>
                page(status === 404 ? "Link not found" : "Something went wrong", `<p>${markup(message)}</p>`),
            },
    });
  }

  return {
    route(pathname) {
      const p = pathname.replace(/\/+$/, "");
      for (const { re, kind, template } of PATTERNS) {
        const m = re.exec(p);
        if (m) return { template, serve: (req, res, client) => void serve(req, res, kind, m[1], client) };
      }
      return undefined;
    },
  };
}

/** The 404 of a link that is not (or no longer) valid: the same for every reason. */
export const unknownLink = () => notFound("link (it may have expired or been used already)");
