import { z } from "zod";
import { cursorFormat, cursorRule } from "../shared/cursor.js";
import { emailSchema, httpUrlSchema } from "../shared/text.js";
import { alsoRefused } from "../shared/validate.js";

// Input rules of the subscriber routes (docs/pages.md "Subscribers"): the public subscribe body,
// the owners' webhook subscriber (url) and list (limit, cursor).

/** POST /v1/status/{slug}/subscribe: `{email}` and nothing else. */
export const subscribeSchema = z.strictObject({ email: emailSchema }, "must be an object {email}");

/** CreatePageSubscriber's rules (bound to the RPC: the OpenAPI document states them). */
export const createSchema = alsoRefused(
  z.object({ url: httpUrlSchema }),
  "a url whose host does not resolve, or resolves to a private address (unless WEBHOOK_ALLOW_PRIVATE)",
  "a url the page already has as a subscriber (409)",
);

/** ListPageSubscribers' rules (bound to the RPC: the OpenAPI document states them). */
export const listSchema = z.object({
  limit: z.number().int().min(1).max(1000).default(100),
  cursor: cursorRule.optional(),
});

/** The list's position: the last subscriber's creation time and id. */
export const subscriberCursor = cursorFormat<{ createdAt: Date; id: string }>("sub1", {
  parts: 2,
  write: (p) => [p.createdAt.toISOString(), p.id],
  read: ([ts, id]) => {
    const createdAt = new Date(ts);
    if (Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== ts) return undefined;
    return /^psub_[0-9A-Za-z]{20}$/.test(id) ? { createdAt, id } : undefined;
  },
});
