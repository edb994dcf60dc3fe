import type { Value } from "@bufbuild/protobuf/wkt";
import { z } from "zod";
import { parseFilters } from "../analytics/filters.js";
import { valueToJson } from "../shared/value.js";
import { cursorFormat, cursorRule } from "../shared/cursor.js";
import { EMAIL, httpUrlSchema, textSchema } from "../shared/text.js";
import { alsoRefused, validate } from "../shared/validate.js";
import { parseTimestamp, timestampSchema } from "../shared/time.js";
import type { DeliveryRow } from "./store.js";
import { targetOf, WEBHOOK_TYPES, type WebhookType } from "./targets/index.js";
import type { AddressField, CheckContext, Destination } from "./targets/target.js";

// Input schemas, the target check, and the deliveries list's cursor (rows → API records: messages.ts).

const MAX_EVENT_TYPES = 20;

const eventType = textSchema({ min: 1, max: 200 });
const eventsSchema = z
  .array(eventType)
  .min(1, "watch at least one event type")
  .max(MAX_EVENT_TYPES, `at most ${MAX_EVENT_TYPES} event types`)
  .transform((a) => [...new Set(a)]);
const url = httpUrlSchema;
/** What the target check (checkTarget, below) refuses beyond the URL's form. */
const TARGET_REFUSED = [
  "a url whose host does not resolve, or resolves to a private address (unless WEBHOOK_ALLOW_PRIVATE)",
  "a url its type's target does not take (docs/webhooks.md)",
];
const name = textSchema({ min: 1, max: 200 });
/** `email`: 1-10 addresses, duplicates (ignoring case) removed. */
const MAX_RECIPIENTS = 10;
const toSchema = z
  .array(
    z
      .string()
      .trim()
      .max(254)
      .pipe(z.email({ pattern: EMAIL, error: "must be an email address" })),
  )
  .min(1, "at least one address")
  .max(MAX_RECIPIENTS, `at most ${MAX_RECIPIENTS} addresses`)
  .transform((a) => a.filter((x, i) => a.findIndex((y) => y.toLowerCase() === x.toLowerCase()) === i));
/** `pagerduty`: the integration key (its exact form is checked by the target). */
const routingKeySchema = z.string().trim().min(1).max(64);

/** maxPerSecond (rate.ts): 1 to 1000 sends per second; a PATCH's 0 removes the limit. */
const MAX_PER_SECOND = 1000;
const maxPerSecond = z.number().int().min(1).max(MAX_PER_SECOND);

const ADDRESS_FIELDS: AddressField[] = ["url", "to", "routingKey"];

/**
 * Each type takes its destination from one field (its target's `address`): that one is required,
 * the others must be absent. `type`: the create's, or the PATCHed webhook's (undefined: not known
 * here; the route checks it).
 */
function addressRule(
  type: WebhookType | undefined,
  v: Partial<Record<AddressField, unknown>>,
  ctx: z.RefinementCtx,
  create: boolean,
) {
  if (!type) return;
  const need = targetOf(type).address;
  for (const f of ADDRESS_FIELDS) {
    if (f === need && create && v[f] === undefined)
      ctx.addIssue({ code: "custom", path: [f], message: `required for ${type} webhooks` });
    else if (f !== need && v[f] !== undefined)
      ctx.addIssue({ code: "custom", path: [f], message: `${type} webhooks take ${need}, not ${f}` });
  }
}

/** `filters` is the analytics filter grammar (parsed by src/analytics/filters.ts, as analytics bodies' are). */
const FILTERS_REFUSED = "filters outside the filter grammar (docs/analytics.md)";

/** The destination rule across fields (addressRule), which JSON Schema cannot state. */
const ADDRESS_REFUSED =
  "a destination field other than the one its type takes (url, to or routingKey), or that one missing";

export const createSchema = alsoRefused(
  z
    .object({
      name: name.optional(),
      type: z.enum(WEBHOOK_TYPES).default("http"),
      url: url.optional(),
      to: toSchema.optional(),
      routingKey: routingKeySchema.optional(),
      events: eventsSchema,
      enabled: z.boolean().default(true),
      maxPerSecond: maxPerSecond.optional(),
    })
    .superRefine((v, ctx) => addressRule(v.type, v, ctx, true)),
  ...TARGET_REFUSED,
  ADDRESS_REFUSED,
  FILTERS_REFUSED,
);

export const updateSchema = alsoRefused(
  z.object({
    name: name.optional(),
    url: url.optional(),
    to: toSchema.optional(),
    routingKey: routingKeySchema.optional(),
    events: eventsSchema.optional(),
    enabled: z.boolean().optional(),
    rotateSecret: z.boolean().optional(),
    maxPerSecond: z.union([z.literal(0), maxPerSecond]).optional(),
  }),
  ...TARGET_REFUSED,
  ADDRESS_REFUSED,
  FILTERS_REFUSED,
);

/** The longest overlap of a rotation: a week (decisions.md). */
const MAX_OVERLAP_SECONDS = 604_800;

/** POST .../rotate-secret: how long the replaced secret keeps signing too (default a day). */
export const rotateSchema = z.object({
  overlapSeconds: z.number().int().min(0).max(MAX_OVERLAP_SECONDS).default(86_400),
});

/** POST .../recover: deliveries created in [since, until); until defaults to now (the route's). */
export const recoverSchema = alsoRefused(
  z.object({ since: timestampSchema, until: timestampSchema.optional() }).superRefine((v, ctx) => {
    if (v.until && v.until <= v.since)
      ctx.addIssue({ code: "custom", path: ["until"], message: "must be after since" });
  }),
  "an until that is not after since",
);

/** A PATCH's destination fields against the webhook's type (400 naming the field). */
export function checkUpdateAddress(type: WebhookType, v: Partial<Record<AddressField, unknown>>): void {
  validate(
    z.any().superRefine((x, ctx) => addressRule(type, x as Partial<Record<AddressField, unknown>>, ctx, false)),
    v,
  );
}

export const listSchema = z.object({
  limit: z.number().int().min(1).max(100).default(50),
  status: z.enum(["pending", "retrying", "succeeded", "abandoned"]).optional(),
  cursor: cursorRule.optional(),
});

/**
 * A destination on create and on a change of it: the type's target checks it (http-based types:
 * the URL's host resolves to public addresses only unless WEBHOOK_ALLOW_PRIVATE, then their own
 * URL rules; email: SMTP_URL is set; pagerduty: the key's form). 400 naming the field.
 */
export async function checkTarget(type: WebhookType, dest: Destination, ctx: CheckContext): Promise<void> {
  await targetOf(type).check(dest, ctx);
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

/**
 * A create's or PATCH's `filters`, checked by the analytics filter parser (one rule: a 400 naming
 * each offending part). Undefined when absent (a PATCH keeps the webhook's), null when null (none).
 * What is stored is the JSON as given, once it parses.
 */
export function filtersInput(v: Value | undefined, maxNodes: number): unknown {
  const json = valueToJson(v, "filters");
  if (json === undefined) return undefined;
  return parseFilters(json, maxNodes) === null ? null : json;
}
