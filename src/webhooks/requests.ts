import { z } from "zod";
import { cursorFormat, cursorRule } from "../shared/cursor.js";
import { badRequest } from "../shared/errors.js";
import { alsoRefused } from "../shared/validate.js";
import { textSchema } from "../shared/text.js";
import { parseTimestamp } from "../shared/time.js";
import { BlockedAddressError, pinTarget, systemResolver, UnresolvedHostError, urlHost } from "./address.js";
import type { DeliveryRow } from "./store.js";
import { targetOf, WEBHOOK_TYPES, type WebhookType } from "./targets/index.js";

// Input schemas, the target check, and the deliveries list's cursor (rows → API records: messages.ts).

const MAX_EVENT_TYPES = 20;

const eventType = textSchema({ min: 1, max: 200 });
const eventsSchema = z
  .array(eventType)
  .min(1, "watch at least one event type")
  .max(MAX_EVENT_TYPES, `at most ${MAX_EVENT_TYPES} event types`)
  .transform((a) => [...new Set(a)]);
const url = z
  .string()
  .trim()
  .max(2048)
  .refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== "";
    } catch {
      return false;
    }
  }, "must be an http: or https: URL")
  .meta({ format: "uri", pattern: "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]" });
/** What the target check (checkTarget, below) refuses beyond the URL's form. */
const TARGET_REFUSED = [
  "a url whose host does not resolve, or resolves to a private address (unless WEBHOOK_ALLOW_PRIVATE)",
  "a url its type's target does not take (docs/webhooks.md)",
];
const name = textSchema({ min: 1, max: 200 });

export const createSchema = alsoRefused(
  z.object({
    name: name.optional(),
    type: z.enum(WEBHOOK_TYPES).default("http"),
    url,
    events: eventsSchema,
    enabled: z.boolean().default(true),
  }),
  ...TARGET_REFUSED,
);

export const updateSchema = alsoRefused(
  z.object({
    name: name.optional(),
    url: url.optional(),
    events: eventsSchema.optional(),
    enabled: z.boolean().optional(),
    rotateSecret: z.boolean().optional(),
  }),
  ...TARGET_REFUSED,
);

export const listSchema = z.object({
  limit: z.number().int().min(1).max(100).default(50),
  status: z.enum(["pending", "retrying", "succeeded", "abandoned"]).optional(),
  cursor: cursorRule.optional(),
});

/**
 * Every webhook type's target must resolve only to public addresses (unless WEBHOOK_ALLOW_PRIVATE):
 * for discord "the host is not checked" means any public host, not any address. The message never
 * says what the name resolved to. The sender checks again before every connection. Then the rules
 * of the type's own target (targets/).
 */
export async function checkTarget(type: WebhookType, target: string, allowPrivate: boolean): Promise<void> {
  const url = new URL(target);
  if (!allowPrivate) {
    try {
      await pinTarget(urlHost(url), { allowPrivate, resolve: systemResolver });
    } catch (err) {
      const message =
        err instanceof BlockedAddressError || err instanceof UnresolvedHostError
          ? err.message
          : "host could not be resolved";
      throw badRequest(`invalid request: url: ${message}`, [{ field: "url", message }]);
    }
  }
  targetOf(type).checkUrl(url);
}

/** The deliveries' cursor (the shared format, src/shared/cursor.ts; tag whd1): the last delivery's (created_at, id). */
export const deliveryCursor = cursorFormat<{ createdAt: Date; id: string }, DeliveryRow>("whd1", {
  parts: 2,
  write: (r) => [r.created_at.toISOString(), r.id],
  read: ([ts, id]) => {
    const createdAt = parseTimestamp(ts);
    return createdAt && /^whd_[0-9A-Za-z]{1,64}$/.test(id) ? { createdAt, id } : undefined;
  },
});
export const encodeCursor = (r: DeliveryRow): string => deliveryCursor.encode(r);
export const decodeCursor = (c: string): { createdAt: Date; id: string } => deliveryCursor.read(c);
