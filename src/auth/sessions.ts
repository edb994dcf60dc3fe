import { randomBytes } from "node:crypto";
import { sha256Hex as sha256 } from "../shared/ids.js";
import { parse as parseCookie, serialize as serializeCookie } from "cookie";
import signature from "cookie-signature";
import type { Db } from "../storage/db.js";
import { DAY_MS } from "../shared/time.js";

// Server-side sessions: the cookie carries a random token signed with SESSION_SECRET; the
// database keeps only its SHA-256, so logout (revoked_at) ends it on the server.

const SESSION_COOKIE = "vigil_session";
const SESSION_DAYS = 30;

export interface SessionCookieOptions {
  secret: string;
  secure: boolean;
}

export async function createSession(db: Db, accountId: string, now: Date, opts: SessionCookieOptions): Promise<string> {
  const token = randomBytes(32).toString("base64url");
  const expires = new Date(now.getTime() + SESSION_DAYS * DAY_MS);
  await db.query("INSERT INTO sessions (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4)", [
    sha256(token),
    accountId,
    now,
    expires,
  ]);
  return serializeCookie(SESSION_COOKIE, signature.sign(token, opts.secret), {
    httpOnly: true,
    sameSite: "lax",
    secure: opts.secure,
    path: "/",
    expires,
  });
}

export function clearedCookie(secure: boolean): string {
  return serializeCookie(SESSION_COOKIE, "", {
    httpOnly: true,
    sameSite: "lax",
    secure,
    path: "/",
    expires: new Date(0),
  });
}

/** The verified token in the request's cookie, or undefined (absent, or signature wrong). */
export function tokenFromCookieHeader(header: string | null, secret: string): string | undefined | false {
  if (!header) return undefined;
  const raw = parseCookie(header)[SESSION_COOKIE];
  if (raw === undefined) return undefined;
  const token = signature.unsign(raw, secret);
  return token === false ? false : token;
}

export async function accountForToken(db: Db, token: string, now: Date): Promise<string | undefined> {
  const r = await db.query<{ account_id: string }>(
    "SELECT account_id FROM sessions WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2",
    [sha256(token), now],
  );
  return r.rows[0]?.account_id;
}

export async function revokeToken(db: Db, token: string, now: Date): Promise<void> {
  await db.query("UPDATE sessions SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL", [
    sha256(token),
    now,
  ]);
}
