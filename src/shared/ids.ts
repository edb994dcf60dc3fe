import { randomBytes } from "node:crypto";

// Opaque ids: a short type prefix and 20 random base62-ish characters (url-safe).
const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

export function randomToken(length: number): string {
  const bytes = randomBytes(length * 2);
  let out = "";
  for (let i = 0; out.length < length && i < bytes.length; i++) {
    const b = bytes[i];
    if (b < 248) out += ALPHABET[b % 62];
  }
  while (out.length < length) out += ALPHABET[randomBytes(1)[0] % 62];
  return out;
}

export function newId(prefix: string): string {
  return `${prefix}_${randomToken(20)}`;
}
