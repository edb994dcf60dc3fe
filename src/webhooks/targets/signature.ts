import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

// X-Vigil-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed by the secret>.
// `verifyWebhookSignature` is what a receiver runs (docs/webhooks.md shows it in use).

/** The header that carries the signature (lower case, as Node and fetch spell headers). */
export const SIGNATURE_HEADER = "x-vigil-signature";
const DEFAULT_TOLERANCE_SECONDS = 300;

/** `whsec_` + 32 random bytes, base64url. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

export function computeSignature(secret: string, timestamp: number, rawBody: string | Buffer): string {
  return createHmac("sha256", secret).update(`${timestamp}.`).update(rawBody).digest("hex");
}

/**
 * The header value for a body sent at `timestampSeconds`; with `previousSecret` (a rotation's
 * overlap, decisions.md) a second v1 after the new one: `t=...,v1=<new>,v1=<old>`.
 */
export function signatureHeader(
  secret: string,
  rawBody: string | Buffer,
  timestampSeconds: number,
  previousSecret?: string | null,
): string {
  const sigs = [secret, ...(previousSecret ? [previousSecret] : [])];
  return `t=${timestampSeconds},${sigs.map((s) => `v1=${computeSignature(s, timestampSeconds, rawBody)}`).join(",")}`;
}

export type VerifyResult =
  { ok: true; timestamp: number } | { ok: false; reason: "malformed" | "too_old" | "mismatch" };

/**
 * Verifies an X-Vigil-Signature header against the raw body as received (before any JSON parse)
 * and the webhook's secret. Rejects a `t` more than `toleranceSeconds` away from `nowSeconds`
 * (replays). Accepts any of several `v1=` values (several are sent during a secret rotation).
 */
export function verifyWebhookSignature(
  rawBody: string | Buffer,
  header: string | null | undefined,
  secret: string,
  opts: { toleranceSeconds?: number; nowSeconds?: number } = {},
): VerifyResult {
  if (!header) return { ok: false, reason: "malformed" };
  let t: number | undefined;
  const sigs: string[] = [];
  for (const part of header.split(",")) {
    const [k, v] = part.trim().split("=", 2);
    if (k === "t" && /^\d+$/.test(v ?? "")) t = Number(v);
    else if (k === "v1" && /^[0-9a-f]{64}$/.test(v ?? "")) sigs.push(v);
  }
  if (t === undefined || sigs.length === 0) return { ok: false, reason: "malformed" };
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return { ok: false, reason: "too_old" };
  const expected = Buffer.from(computeSignature(secret, t, rawBody), "hex");
  for (const s of sigs) if (timingSafeEqual(expected, Buffer.from(s, "hex"))) return { ok: true, timestamp: t };
  return { ok: false, reason: "mismatch" };
}
