import http from "node:http";
import https from "node:https";
import net from "node:net";
import { badRequest } from "../../shared/errors.js";
import {
  BlockedAddressError,
  pinTarget,
  systemResolver,
  UnresolvedHostError,
  urlHost,
  type ResolvedAddress,
} from "./address.js";
import type { Envelope } from "./envelope.js";
import type { Links } from "./links.js";
import { retryAfterMs as defaultRetryAfterMs } from "./retry-after.js";
import type { CheckContext, DeliverContext, Destination, SendResult, WebhookTarget } from "./target.js";

// The HTTP delivery shared by every HTTP-based type (http, discord, slack, mattermost, pagerduty):
// one JSON POST to a checked public address. Never follows redirects, reads at most BODY_CAP bytes
// of the answer, and is bounded by the timeout end to end (resolve, connect, answer, body): the
// socket is destroyed when it fires, so a slow receiver cannot hold a worker longer.
//
// Address rule (address.ts): each attempt resolves the host, checks every address, and connects to
// the checked address itself (the request's host is the IP; Host header and TLS servername carry the
// name). Keep-alive pools are keyed by that IP, so a socket opened for one resolution is never used
// for another: a name that re-resolves elsewhere gets a new, checked connection or none.

const USER_AGENT = "Vigil-Webhooks/1.0";
const BODY_CAP = 16 * 1024;
const RECORDED_BODY_CHARS = 1024;

/** Pools are keyed by host:port (+ TLS servername); the host is always the checked IP. */
export const AGENT_OPTIONS = { keepAlive: true, maxSockets: 256, scheduling: "fifo" as const };
const httpAgent = new http.Agent(AGENT_OPTIONS);
const httpsAgent = new https.Agent(AGENT_OPTIONS);

const refuseLookup: net.LookupFunction = (_host, _opts, cb) => cb(new BlockedAddressError(), "", 4);

/** Connect-phase failures after which the next checked address of the name is tried. */
const UNREACHABLE = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "EAFNOSUPPORT"]);

/** From a failed answer: how long the receiver asked us to wait (ms), if it said (retry.ts waits at least that). */
type RetryAfter = (
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  now: Date,
) => number | undefined;

/** One JSON POST (the request's own headers beyond content-type, user-agent, content-length and host). */
export interface JsonPost {
  url: string;
  body: string;
  headers?: Record<string, string>;
  retryAfterMs?: RetryAfter;
}

/** One attempt of one POST: the record and the outcome, never a throw. */
export async function postJson(post: JsonPost, ctx: DeliverContext): Promise<SendResult> {
  const started = performance.now();
  const at = ctx.now.toISOString();
  const retryAfterMs = post.retryAfterMs ?? defaultRetryAfterMs;
  const fail = (error: string, statusCode: number | null = null, responseBody: string | null = null): SendResult => ({
    record: { at, statusCode, durationMs: Math.round(performance.now() - started), error, responseBody },
    outcome: { ok: false },
  });

  let url: URL;
  try {
    url = new URL(post.url);
  } catch {
    return fail("invalid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return fail(`unsupported scheme ${url.protocol}`);
  const host = urlHost(url);

  // One deadline for the whole attempt: resolve, connect (each address tried), answer, body.
  const timeoutMessage = `timeout: no complete answer within ${ctx.timeoutMs} ms`;
  let current: http.ClientRequest | undefined;
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const deadline = new Promise<SendResult>((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      current?.destroy();
      resolve(fail(timeoutMessage));
    }, ctx.timeoutMs);
  });

  const run = async (): Promise<SendResult> => {
    let addrs: ResolvedAddress[];
    try {
      addrs = await pinTarget(host, { allowPrivate: ctx.allowPrivate, resolve: ctx.resolve ?? systemResolver });
    } catch (err) {
      return fail(
        err instanceof BlockedAddressError || err instanceof UnresolvedHostError
          ? err.message
          : "host could not be resolved",
      );
    }
    const headers: Record<string, string> = {
      host: url.host,
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      "content-length": String(Buffer.byteLength(post.body)),
      ...post.headers,
    };
    let last = fail(timeoutMessage);
    for (const a of addrs) {
      if (timedOut) break;
      const r = await send(url, host, a, headers, post.body);
      if (!r.unreachable) return r.result;
      last = r.result;
    }
    return last;
  };

  /** One request to one checked address. */
  const send = (u: URL, name: string, a: ResolvedAddress, headers: Record<string, string>, body: string) =>
    new Promise<{ result: SendResult; unreachable?: boolean }>((resolve) => {
      let settled = false;
      const finish = (result: SendResult, unreachable = false) => {
        if (settled) return;
        settled = true;
        resolve({ result, unreachable });
      };
      const tls = u.protocol === "https:";
      const req = (current = (tls ? https : http).request({
        // The checked IP, never the name: Node does no lookup for an IP host, and the pool key is the IP.
        host: a.address,
        family: a.family,
        port: u.port || (tls ? 443 : 80),
        path: `${u.pathname}${u.search}`,
        method: "POST",
        headers,
        agent: tls ? (ctx.agents?.https ?? httpsAgent) : (ctx.agents?.http ?? httpAgent),
        // Never called for an IP host; here so that no future change can connect by an unchecked name.
        lookup: refuseLookup,
        // Certificates are checked against the name ("" = no SNI for an IP literal URL).
        ...(tls ? { servername: net.isIP(name) ? "" : name } : {}),
      }));
      req.on("error", (err: NodeJS.ErrnoException) => {
        // Socket errors name the IP they connected to; record the code and the name only.
        finish(
          fail(`${err.code ?? "error"}: ${err.message.split(a.address).join(name)}`),
          UNREACHABLE.has(err.code ?? ""),
        );
      });
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        const done = (truncated: boolean) => {
          const text = Buffer.concat(chunks).toString("utf8");
          const recorded = text.length > 0 ? text.slice(0, RECORDED_BODY_CHARS) : null;
          const durationMs = Math.round(performance.now() - started);
          const ok = status >= 200 && status < 300;
          let error: string | null = null;
          if (!ok)
            error =
              status >= 300 && status < 400
                ? `redirect (${status}${res.headers.location ? ` to ${res.headers.location}` : ""}) not followed`
                : `HTTP ${status}`;
          finish({
            record: { at, statusCode: status, durationMs, error, responseBody: recorded },
            outcome: { ok, retryAfterMs: ok ? undefined : retryAfterMs(status, res.headers, text, ctx.now) },
          });
          if (truncated) res.destroy();
        };
        res.on("data", (c: Buffer) => {
          if (settled) return;
          const room = BODY_CAP - size;
          chunks.push(c.length > room ? c.subarray(0, room) : c);
          size += Math.min(c.length, room);
          if (size >= BODY_CAP) done(true);
        });
        res.on("end", () => done(false));
        res.on("error", () => done(true));
      });
      req.end(body);
    });

  try {
    return await Promise.race([run(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The shared rules of a webhook URL, on create and on a URL change: its host resolves to public
 * addresses only (unless WEBHOOK_ALLOW_PRIVATE): for discord "the host is not checked" means any
 * public host, not any address. The message never says what the name resolved to. `postJson`
 * checks again before every connection.
 */
export async function checkPublicUrl(target: string, allowPrivate: boolean): Promise<URL> {
  const url = new URL(target);
  if (!allowPrivate) {
    try {
      await pinTarget(urlHost(url), { allowPrivate, resolve: systemResolver });
    } catch (err) {
      const message =
        err instanceof BlockedAddressError || err instanceof UnresolvedHostError
          ? err.message
          : "host could not be resolved";
      throw badRequest(`invalid request: url: ${message}`, [{ field: "url", message }]);
    }
  }
  return url;
}

/** A 400 naming `url`. */
export function badUrl(message: string): never {
  throw badRequest(`invalid request: url: ${message}`, [{ field: "url", message }]);
}

/** What an HTTP-based type with a `url` says: its URL rules, its body, its headers, the receiver's wait. */
export interface JsonTargetSpec {
  signed: boolean;
  /** Rules beyond "a public http(s) URL" (throw `badUrl`). */
  checkUrl?(url: URL): void;
  /** The body; `links` only when `links` is set (else empty). */
  body(env: Envelope, links: Links): string;
  /** The message carries links (PUBLIC_URL): looked up before each attempt. */
  links?: boolean;
  headers?(attempt: {
    env: Envelope;
    eventId: string;
    body: string;
    secret: string | null;
    previousSecret: string | null;
    now: Date;
  }): Record<string, string>;
  retryAfterMs?: RetryAfter;
}

/** A type that POSTs JSON to the webhook's own `url` (http, discord, slack, mattermost). */
export function jsonTarget(spec: JsonTargetSpec): WebhookTarget {
  return {
    signed: spec.signed,
    address: "url",
    async check(dest: Destination, ctx: CheckContext) {
      const url = await checkPublicUrl(dest.url ?? "", ctx.allowPrivate);
      spec.checkUrl?.(url);
    },
    open: (settings) => ({
      async deliver({ dest, env, eventId }, ctx) {
        const body = spec.body(env, spec.links ? await settings.links(env) : {});
        const headers =
          spec.headers?.({
            env,
            eventId,
            body,
            secret: dest.secret,
            previousSecret: dest.previousSecret ?? null,
            now: ctx.now,
          }) ?? {};
        return postJson({ url: dest.url ?? "", body, headers, retryAfterMs: spec.retryAfterMs }, ctx);
      },
    }),
  };
}
