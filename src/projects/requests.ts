import { z } from "zod";
import { badRequest } from "../shared/errors.js";
import { emailSchema, textSchema } from "../shared/text.js";
import { alsoRefused } from "../shared/validate.js";

// Request parsing and validation for projects, members and API keys.

const PLATFORMS = ["node", "browser", "react", "next", "other"] as const;
const ENVIRONMENTS = ["production", "development", "preview"] as const;
const name = textSchema({ min: 1, max: 200 });

export const createSchema = z.object({ name, platform: z.enum(PLATFORMS) });
/** A PATCH's `retentionDays` as JSON: an integer of at least 1, or null; its upper bound is configured. */
const retentionDays = alsoRefused(
  z.number().int().min(1).nullable(),
  "retentionDays above the server's RETENTION_MAX_DAYS (3650 by default)",
);
export const updateSchema = z.object({ name: name.optional(), retentionDays: retentionDays.optional() });
export const keySchema = z.object({
  name,
  environment: z.enum(ENVIRONMENTS),
  kind: z.enum(["secret", "publishable", "ping"]).default("secret"),
});
/** At most this many allowed origins per project. */
const MAX_ALLOWED_ORIGINS = 50;
/** `scheme://host[:port]`, optionally one trailing `/`: no path, query, fragment or user info. */
const ORIGIN = /^https?:\/\/[^/?#@\\\s]+\/?$/i;

/**
 * A PATCH's `allowedOrigins` (the ListValue's items as JSON values): each a string origin, http or
 * https, normalised as browsers send it in `Origin` (`new URL(x).origin`: lower-cased scheme and
 * host, punycode, default port dropped); duplicates kept once. Anything else is a 400 naming
 * `allowedOrigins[i]`.
 */
export function parseAllowedOrigins(items: unknown[]): string[] {
  if (items.length > MAX_ALLOWED_ORIGINS) {
    const message = `at most ${MAX_ALLOWED_ORIGINS} origins`;
    throw badRequest(`invalid request: allowedOrigins: ${message}`, [{ field: "allowedOrigins", message }]);
  }
  const out = new Set<string>();
  items.forEach((item, i) => {
    const field = `allowedOrigins[${i}]`;
    const refuse = (message: string) => badRequest(`invalid request: ${field}: ${message}`, [{ field, message }]);
    if (typeof item !== "string") throw refuse("must be a string origin such as https://example.com");
    if (item.length > 300 || !ORIGIN.test(item))
      throw refuse("must be an origin scheme://host[:port] (http or https; no path, query or fragment)");
    let origin: string;
    try {
      origin = new URL(item).origin;
    } catch {
      throw refuse("is not a valid origin");
    }
    if (origin === "null") throw refuse("is not a valid origin");
    out.add(origin);
  });
  return [...out];
}

/**
 * A PATCH's `retentionDays` (the Value as JSON): an integer from 1 to `maxDays`, or null (the operator's
 * default again). Anything else (a string, 0, -1, 1.5, 1e308, a list or object) is a 400 naming it.
 */
export function parseRetentionDays(value: unknown, maxDays: number): number | null {
  const r = retentionDays.safeParse(value);
  if (!r.success || (r.data !== null && r.data > maxDays)) {
    const message = `must be an integer from 1 to ${maxDays} (days), or null for the default`;
    throw badRequest(`invalid request: retentionDays: ${message}`, [{ field: "retentionDays", message }]);
  }
  return r.data;
}

export const addMemberSchema = z.object({
  email: emailSchema,
  role: z.enum(["admin", "member"]),
});
export const roleSchema = z.object({ role: z.enum(["admin", "member"]) });
