import http from "node:http";
import https from "node:https";
import net from "node:net";
import {
  BlockedAddressError,
  pinTarget,
  systemResolver,
  UnresolvedHostError,
  urlHost,
  type Resolver,
  type ResolvedAddress,
} from "./address.js";
import type { Envelope } from "./targets/envelope.js";
import type { AttemptOutcome } from "./retry.js";
import { targetOf, type WebhookType } from "./targets/index.js";

// One delivery attempt over HTTP, the same path for every webhook type (what differs per type —
// body, headers, the receiver's retry-after — is its target, targets/). Never follows redirects,
// reads at most BODY_CAP bytes of the answer, and is bounded by the timeout end to end (resolve,
// connect, answer, body): the socket is destroyed when it fires, so a slow receiver cannot hold a
// worker longer.
//
// Address rule (address.ts): each attempt resolves the host, checks every address, and connects to
// the checked address itself (the request's host is the IP; Host header and TLS servername carry the
// name). Keep-alive pools are keyed by that IP, so a socket opened for one resolution is never used
// for another: a name that re-resolves elsewhere gets a new, checked connection or none.

const USER_AGENT = "Vigil-Webhooks/1.0";
const BODY_CAP = 16 * 1024;
const RECORDED_BODY_CHARS = 1024;

export interface Target {
  type: WebhookType;
  url: string;
  secret: string | null;
}

export interface AttemptRecord {
  at: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
}

export interface SendResult {
  record: AttemptRecord;
  outcome: AttemptOutcome;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** The attempt's time (signature `t`, recorded `at`). */
  now: Date;
  /** DNS for the target's host (default: the system resolver). Every address it returns is checked. */
  resolve?: Resolver;
  /** Connection pools (default: the shared keep-alive agents below). */
  agents?: { http?: http.Agent; https?: https.Agent };
}

/** Pools are keyed by host:port (+ TLS servername); the host is always the checked IP. */
export const AGENT_OPTIONS = { keepAlive: true, maxSockets: 256, scheduling: "fifo" as const };
const httpAgent = new http.Agent(AGENT_OPTIONS);
const httpsAgent = new https.Agent(AGENT_OPTIONS);

const refuseLookup: net.LookupFunction = (_host, _opts, cb) => cb(new BlockedAddressError(), "", 4);

export { retryAfterMs } from "./targets/retry-after.js";

/** Connect-phase failures after which the next checked address of the name is tried. */
const UNREACHABLE = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "EAFNOSUPPORT"]);

export async function sendAttempt(
  target: Target,
  env: Envelope,
  eventId: string,
  opts: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  const at = opts.now.toISOString();
  const kind = targetOf(target.type);
  const fail = (error: string, statusCode: number | null = null, responseBody: string | null = null): SendResult => ({
    record: { at, statusCode, durationMs: Math.round(performance.now() - started), error, responseBody },
    outcome: { ok: false },
  });

  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    return fail("invalid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return fail(`unsupported scheme ${url.protocol}`);
  const host = urlHost(url);

  // One deadline for the whole attempt: resolve, connect (each address tried), answer, body.
  const timeoutMessage = `timeout: no complete answer within ${opts.timeoutMs} ms`;
  let current: http.ClientRequest | undefined;
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const deadline = new Promise<SendResult>((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      current?.destroy();
      resolve(fail(timeoutMessage));
    }, opts.timeoutMs);
  });

  const run = async (): Promise<SendResult> => {
    let addrs: ResolvedAddress[];
    try {
      addrs = await pinTarget(host, { allowPrivate: opts.allowPrivate, resolve: opts.resolve ?? systemResolver });
    } catch (err) {
      return fail(
        err instanceof BlockedAddressError || err instanceof UnresolvedHostError
          ? err.message
          : "host could not be resolved",
      );
    }
    const body = kind.body(env);
    const headers: Record<string, string> = {
      host: url.host,
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      "content-length": String(Buffer.byteLength(body)),
      ...kind.headers({ env, eventId, body, secret: target.secret, now: opts.now }),
    };
    let last = fail(timeoutMessage);
    for (const a of addrs) {
      if (timedOut) break;
      const r = await post(url, host, a, headers, body);
      if (!r.unreachable) return r.result;
      last = r.result;
    }
    return last;
  };

  /** One request to one checked address. */
  const post = (u: URL, name: string, a: ResolvedAddress, headers: Record<string, string>, body: string) =>
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
        agent: tls ? (opts.agents?.https ?? httpsAgent) : (opts.agents?.http ?? httpAgent),
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
            outcome: { ok, retryAfterMs: ok ? undefined : kind.retryAfterMs(status, res.headers, text, opts.now) },
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
