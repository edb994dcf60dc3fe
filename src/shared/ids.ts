import { createHash, randomBytes } from "node:crypto";

// Opaque ids: a short type prefix and 20 random base62 characters (url-safe). Random bytes are
// drawn from the CSPRNG in 4 KiB blocks: one syscall per block instead of one per id.
const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

let pool = Buffer.alloc(0);
let offset = 0;

function nextByte(): number {
  if (offset >= pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  return pool[offset++];
}

export function randomToken(length: number): string {
  let out = "";
  while (out.length < length) {
    const b = nextByte();
    if (b < 248) out += ALPHABET[b % 62]; // 248 = 4 * 62: no modulo bias
  }
  return out;
}

export function newId(prefix: string): string {
  return `${prefix}_${randomToken(20)}`;
}

/** Hex SHA-256 of a secret (API key, session token): what is stored and looked up, never the secret. */
export const sha256Hex = (v: string): string => createHash("sha256").update(v).digest("hex");

export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/; // no flag: JSON Schema patterns have none

/** Why a client id was refused (decisions.md "Idempotent ingestion"): the message of the 400 naming `id`. */
export const CLIENT_ID_MESSAGE = "id must be a UUID (8-4-4-4-12 hexadecimal digits)";

/**
 * A client-generated id making an ingest request idempotent: a UUID of any version in its canonical
 * 8-4-4-4-12 form, any case; answered lowercase (as stored). undefined when `v` is not one.
 */
export function clientUuid(v: unknown): string | undefined {
  return typeof v === "string" && UUID.test(v) ? v.toLowerCase() : undefined;
}
