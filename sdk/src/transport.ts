import { VigilError } from "./errors.js";
import { sleep } from "./util.js";

// One request, retried: network errors (including a timeout), 5xx and 429 are retried with
// exponential backoff and full jitter, honouring Retry-After; any other 4xx is final. Every request
// the SDK sends carries client ids, so a retry of a request the server had already committed is
// answered as the first time and stores nothing new.

export interface RetryOptions {
  /** First retry waits up to this (ms). Default 200. */
  baseMs?: number;
  /** No backoff wait exceeds this (ms); a Retry-After may (up to one hour). Default 30 000. */
  maxMs?: number;
  /** Attempts per request before giving up (reported as `gave_up`). Default Infinity for queued items. */
  maxAttempts?: number;
}

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** A Retry-After longer than this is treated as this (a wrong header must not park the SDK for days). */
const RETRY_AFTER_CAP_MS = 3_600_000;

/**
 * Full jitter (AWS's "Exponential Backoff and Jitter"): a uniformly random wait in
 * [0, min(maxMs, baseMs · 2^(attempt-1))], `attempt` counting retries from 1.
 */
export function backoffDelay(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 52));
  return Math.floor(random() * ceiling);
}

/** Retry-After as milliseconds: delta-seconds (`"3"`, `"1.5"`) or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (v === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.min(Math.round(Number(v) * 1000), RETRY_AFTER_CAP_MS);
  // An HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`); Date.parse alone would read "-5" as a year.
  if (!/^[A-Za-z]{3},? /.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - nowMs), RETRY_AFTER_CAP_MS);
}

export interface SendOptions {
  fetch: FetchLike;
  url: string;
  headers: Record<string, string>;
  body: string | Uint8Array<ArrayBuffer>;
  retry: Required<RetryOptions>;
  /** Per attempt; a hung server counts as a network error. */
  timeoutMs: number;
  /** Aborts waiting and the request in flight (shutdown's deadline): the send gives up. */
  signal?: AbortSignal;
  /** Called before each retry's wait. */
  onRetry?: (attempt: number, waitMs: number, why: string) => void;
  /** Each attempt that got an HTTP answer (any status). */
  onAnswer?: () => void;
  /** Each attempt fetch rejected (a network error; in a browser also a CORS refusal), not a timeout or an abort. */
  onNetworkError?: () => void;
  random?: () => number;
  /** Used only in error messages ("events batch", "heartbeat api"). */
  what: string;
  ids: string[];
}

export interface Answer {
  status: number;
  body: unknown;
}

type Outcome =
  | { ok: true; answer: Answer }
  | { ok: false; retry: boolean; why: string; answer?: Answer; waitMs?: number; network?: boolean };

async function attempt(o: SendOptions): Promise<Outcome> {
  // Already given up (shutdown's deadline passed): no request at all. An 'abort' listener added now
  // would never fire, and the request would wait for the server or the timeout.
  if (o.signal?.aborted) return { ok: false, retry: false, why: "aborted" };
  const ctrl = new AbortController();
  const onAbort = () => ctrl.abort();
  o.signal?.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => ctrl.abort(), o.timeoutMs);
  try {
    const res = await o.fetch(o.url, { method: "POST", headers: o.headers, body: o.body, signal: ctrl.signal });
    const text = await res.text();
    let body: unknown = undefined;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const answer = { status: res.status, body };
    if (res.status >= 200 && res.status < 300) return { ok: true, answer };
    const retry = res.status >= 500 || res.status === 429;
    return {
      ok: false,
      retry,
      why: `HTTP ${res.status}${serverMessage(body) ? `: ${serverMessage(body)}` : ""}`,
      answer,
      waitMs: retry ? parseRetryAfter(res.headers.get("retry-after")) : undefined,
    };
  } catch (err) {
    // fetch rejects on network errors (reset, refused, DNS), on our timeout and on abort.
    const why = o.signal?.aborted
      ? "aborted"
      : ctrl.signal.aborted
        ? `no answer within ${o.timeoutMs} ms`
        : describe(err);
    return { ok: false, retry: !o.signal?.aborted, why, network: !o.signal?.aborted && !ctrl.signal.aborted };
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener("abort", onAbort);
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    const c = cause instanceof Error ? `: ${(cause as { code?: string }).code ?? cause.message}` : "";
    return `network error (${err.message}${c})`;
  }
  return `network error (${String(err)})`;
}

function serverMessage(body: unknown): string | undefined {
  const e = (body as { error?: { message?: unknown } } | undefined)?.error;
  return typeof e?.message === "string" ? e.message : undefined;
}

function serverCode(body: unknown): string | undefined {
  const e = (body as { error?: { code?: unknown } } | undefined)?.error;
  return typeof e?.code === "string" ? e.code : undefined;
}

/**
 * Sends until a 2xx (returned), a final 4xx (throws VigilError `rejected`) or giving up (throws
 * `gave_up`: attempts spent, or `signal` aborted).
 */
export async function send(o: SendOptions): Promise<Answer> {
  for (let n = 1; ; n++) {
    const out = await attempt(o);
    if (out.ok || out.answer) o.onAnswer?.();
    else if (out.network) o.onNetworkError?.();
    if (out.ok) return out.answer;
    if (!out.retry) {
      if (out.answer) {
        throw new VigilError("rejected", `${o.what} refused: ${out.why}`, {
          status: out.answer.status,
          serverCode: serverCode(out.answer.body),
          ids: o.ids,
        });
      }
      throw new VigilError("gave_up", `${o.what}: gave up (${out.why})`, { ids: o.ids });
    }
    if (n >= o.retry.maxAttempts) {
      throw new VigilError("gave_up", `${o.what}: gave up after ${n} attempts (last: ${out.why})`, {
        status: out.answer?.status,
        ids: o.ids,
      });
    }
    const jitter = backoffDelay(n, o.retry.baseMs, o.retry.maxMs, o.random);
    const wait = out.waitMs === undefined ? jitter : Math.max(out.waitMs, jitter);
    o.onRetry?.(n, wait, out.why);
    await sleep(wait, o.signal);
    if (o.signal?.aborted)
      throw new VigilError("gave_up", `${o.what}: gave up (aborted; last: ${out.why})`, { ids: o.ids });
  }
}

/** Gzips a body with CompressionStream (Node 20+, browsers). */
export async function gzip(s: string): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([s]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
