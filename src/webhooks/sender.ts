import http from "node:http";
import https from "node:https";
import net from "node:net";
import { BlockedAddressError, isPublicAddress, safeLookup, urlHost } from "./address.js";
import { discordMessage } from "./discord.js";
import type { Envelope } from "./payload.js";
import type { AttemptOutcome } from "./retry.js";
import { signatureHeader } from "./signature.js";

// One delivery attempt over HTTP. Never follows redirects, reads at most BODY_CAP bytes of the
// answer, and is bounded by the timeout end to end (connect, answer, body): the socket is destroyed
// when it fires, so a slow receiver cannot hold a worker longer.

export const USER_AGENT = "Vigil-Webhooks/1.0";
export const BODY_CAP = 16 * 1024;
export const RECORDED_BODY_CHARS = 1024;

export interface Target {
  type: "http" | "discord";
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
}

const agentOpts = { keepAlive: true, maxSockets: 256, scheduling: "fifo" as const };
const httpAgent = new http.Agent(agentOpts);
const httpsAgent = new https.Agent(agentOpts);

/** Discord's JSON `retry_after` (seconds) or a Retry-After header (seconds or HTTP date), in ms. */
export function retryAfterMs(status: number, headers: http.IncomingHttpHeaders, body: string, now: Date): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  try {
    const j = JSON.parse(body) as { retry_after?: unknown };
    if (typeof j?.retry_after === "number" && j.retry_after >= 0) return Math.ceil(j.retry_after * 1000);
  } catch {
    // not JSON
  }
  const h = headers["retry-after"];
  if (typeof h === "string" && h.trim() !== "") {
    if (/^\d+(\.\d+)?$/.test(h.trim())) return Math.ceil(Number(h) * 1000);
    const at = Date.parse(h);
    if (!Number.isNaN(at)) return Math.max(0, at - now.getTime());
  }
  return undefined;
}

export function requestBody(target: Target, env: Envelope): string {
  return JSON.stringify(target.type === "discord" ? discordMessage(env) : env);
}

export async function sendAttempt(target: Target, env: Envelope, eventId: string, opts: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const at = opts.now.toISOString();
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
  const guard = target.type === "http" && !opts.allowPrivate;
  const host = urlHost(url);
  if (guard && net.isIP(host) && !isPublicAddress(host)) return fail(new BlockedAddressError(host, host).message);

  const body = requestBody(target, env);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    "content-length": String(Buffer.byteLength(body)),
  };
  if (target.type === "http") {
    headers["x-vigil-event-id"] = eventId;
    headers["x-vigil-delivery-id"] = env.id;
    if (target.secret) headers["x-vigil-signature"] = signatureHeader(target.secret, body, Math.floor(opts.now.getTime() / 1000));
  }

  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (r: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const lib = url.protocol === "https:" ? https : http;
    const req = lib.request(url, {
      method: "POST",
      headers,
      agent: url.protocol === "https:" ? httpsAgent : httpAgent,
      lookup: guard ? (safeLookup as never) : undefined,
    });
    const timer = setTimeout(() => {
      finish(fail(`timeout: no complete answer within ${opts.timeoutMs} ms`));
      req.destroy();
    }, opts.timeoutMs);
    req.on("error", (err: NodeJS.ErrnoException) => {
      const msg = err instanceof BlockedAddressError ? err.message : `${err.code ?? "error"}: ${err.message}`;
      finish(fail(msg));
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
        if (!ok) error = status >= 300 && status < 400 ? `redirect (${status}${res.headers.location ? ` to ${res.headers.location}` : ""}) not followed` : `HTTP ${status}`;
        finish({
          record: { at, statusCode: status, durationMs, error, responseBody: recorded },
          outcome: { ok, retryAfterMs: ok ? undefined : retryAfterMs(status, res.headers, text, opts.now) },
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
}
