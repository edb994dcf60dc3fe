import { createHmac, timingSafeEqual } from "node:crypto";
import { assertNever } from "../shared/never.js";

// Status page subscribers (decisions.md "Status communication"; docs/pages.md "Subscribers"): the
// notices a confirmed subscriber is mailed, as an exhaustive table, and the tokens of its links.

/** How long a confirmation link works. */
export const CONFIRM_TTL_MS = 48 * 3_600_000;
/** Attempts of one mail before it is given up (the SMTP server refused it or was unreachable each time). */
export const MAX_MAIL_ATTEMPTS = 5;
/** Delay before the next attempt of a mail that failed: 30 s, 1 min, 2 min, ... */
export const retryDelayMs = (attempts: number): number => 30_000 * 2 ** Math.max(0, attempts - 1);

/** Every notice a page's subscribers are mailed, by the event type of its cause. */
const NOTICE_TYPES = [
  "incident.started",
  "incident.updated",
  "incident.recovered",
  "maintenance.started",
  "maintenance.completed",
] as const;
export type NoticeType = (typeof NOTICE_TYPES)[number];

export const isNoticeType = (t: string): t is NoticeType => (NOTICE_TYPES as readonly string[]).includes(t);

/** The mail's headline verb and its colour, per notice type. */
export function noticeLook(type: NoticeType): { headline: string; color: string } {
  switch (type) {
    case "incident.started":
      return { headline: "New incident", color: "#dc2626" };
    case "incident.updated":
      return { headline: "Incident update", color: "#d97706" };
    case "incident.recovered":
      return { headline: "Resolved", color: "#16a34a" };
    case "maintenance.started":
      return { headline: "Maintenance started", color: "#2563eb" };
    case "maintenance.completed":
      return { headline: "Maintenance completed", color: "#16a34a" };
    default:
      return assertNever(type);
  }
}

/**
 * A subscriber's unsubscribe token: its id and an HMAC of it under the server's session secret.
 * Nothing is stored (the link in every mail is computed again); a removed subscriber's token finds
 * no row. Confirmation tokens, which are single-use, are random and only their SHA-256 is stored.
 */
export function unsubscribeToken(secret: string, subscriberId: string): string {
  return `${subscriberId}.${mac(secret, subscriberId)}`;
}

/** The subscriber id an unsubscribe token stands for, or undefined when it is not one of ours. */
export function readUnsubscribeToken(secret: string, token: string): string | undefined {
  const m = /^(psub_[0-9A-Za-z]{20})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return undefined;
  const want = Buffer.from(mac(secret, m[1]));
  const got = Buffer.from(m[2]);
  return want.length === got.length && timingSafeEqual(want, got) ? m[1] : undefined;
}

const mac = (secret: string, id: string) =>
  createHmac("sha256", secret).update(`vigil:page-unsubscribe:${id}`).digest("base64url");

/** Confirmation tokens: `psc_` and 32 random characters. */
export const CONFIRM_TOKEN_RE = /^psc_[0-9A-Za-z]{32}$/;
