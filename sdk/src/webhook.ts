// verifyWebhook: checks Vigil's `X-Vigil-Signature: t=<unix seconds>,v1=<hex>` header — the hex
// HMAC-SHA256 of `${t}.${rawBody}` keyed by the webhook's secret (whsec_...) — with WebCrypto, so the
// same code runs on Node 20+, in browsers, workers and edge runtimes. crypto.subtle.verify compares
// in constant time. Several v1 values may be sent (during a secret rotation): any match is enough.

/** Why a delivery was refused. */
export type WebhookVerificationReason =
  "missing_header" | "malformed_header" | "timestamp" | "signature" | "invalid_json";

export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

/** The body of an `http` webhook delivery. */
export interface WebhookPayload<D = Record<string, unknown>> {
  /** The delivery id (the same on every retry: use it to drop duplicates). */
  id: string;
  type: string;
  createdAt: string;
  projectId: string;
  data: D;
}

export type HeadersLike =
  Headers | Record<string, string | string[] | undefined> | { get(name: string): string | null | undefined };

export interface VerifyWebhookOptions {
  /** How far `t` may be from now, either way (replays; clock skew). Default 300 s. */
  toleranceSeconds?: number;
  /** Now, in unix seconds (tests). */
  nowSeconds?: number;
}

export const SIGNATURE_HEADER = "x-vigil-signature";

function header(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(n: string): string | null | undefined }).get(name) ?? undefined;
  }
  const rec = headers as Record<string, string | string[] | undefined>;
  for (const k of Object.keys(rec)) {
    if (k.toLowerCase() !== name) continue;
    const v = rec[k];
    return Array.isArray(v) ? v.join(",") : v;
  }
  return undefined;
}

function hexBytes(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(new ArrayBuffer(hex.length / 2));
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/**
 * Verifies a delivery and returns its parsed payload; throws WebhookVerificationError otherwise.
 * `rawBody` must be the bytes as received (before any JSON parse/re-serialization): a string, a
 * Uint8Array or Buffer, or an ArrayBuffer.
 */
export async function verifyWebhook<D = Record<string, unknown>>(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: HeadersLike,
  secret: string,
  opts: VerifyWebhookOptions = {},
): Promise<WebhookPayload<D>> {
  if (typeof secret !== "string" || secret === "") throw new TypeError("verifyWebhook: the webhook secret is required");
  const value = header(headers, SIGNATURE_HEADER);
  if (!value) throw new WebhookVerificationError("missing_header", "no X-Vigil-Signature header");
  let t: string | undefined;
  const sigs: string[] = [];
  for (const part of value.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === "t" && /^\d{1,12}$/.test(v)) t = v;
    else if (k === "v1" && /^[0-9a-fA-F]{64}$/.test(v)) sigs.push(v.toLowerCase());
  }
  if (t === undefined || sigs.length === 0) {
    throw new WebhookVerificationError("malformed_header", "X-Vigil-Signature is not t=<unix seconds>,v1=<64 hex>");
  }
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = opts.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(t)) > tolerance) {
    throw new WebhookVerificationError("timestamp", `signature timestamp is more than ${tolerance} s from now`);
  }
  const enc = new TextEncoder();
  const body =
    typeof rawBody === "string"
      ? enc.encode(rawBody)
      : rawBody instanceof ArrayBuffer
        ? new Uint8Array(rawBody)
        : rawBody;
  const prefix = enc.encode(`${t}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix, 0);
  signed.set(body, prefix.length);
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new TypeError("verifyWebhook: WebCrypto (crypto.subtle) is not available here");
  const key = await subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  let ok = false;
  for (const s of sigs) if (await subtle.verify("HMAC", key, hexBytes(s), signed)) ok = true;
  if (!ok)
    throw new WebhookVerificationError("signature", "signature does not match (wrong secret, or the body was altered)");
  try {
    return JSON.parse(new TextDecoder().decode(body)) as WebhookPayload<D>;
  } catch {
    throw new WebhookVerificationError("invalid_json", "the signed body is not JSON");
  }
}
