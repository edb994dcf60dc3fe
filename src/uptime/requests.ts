import { z } from "zod";
import type { CreateMonitorRequest, UpdateMonitorRequest } from "../../gen/vigil/v1/uptime_pb.js";
import { badRequest } from "../shared/errors.js";
import { CLIENT_ID_MESSAGE, clientUuid } from "../shared/ids.js";
import { jsonObjectSchema } from "../shared/json.js";
import { textSchema } from "../shared/text.js";
import { alsoRefused } from "../shared/validate.js";
import { SLUG_RE } from "./model.js";
import { DAY_MS, HOUR_MS, timestampSchema } from "../shared/time.js";

// Input rules of the uptime routes (docs/uptime.md lists them).

const TYPES = ["heartbeat", "http", "worker", "bot", "cron", "custom"] as const;
const MIN_INTERVAL_MS = 100;
const MAX_MS = 365 * DAY_MS;
const MAX_JSON_BYTES = 16 * 1024;

// Text: the shared storable-text rule and lengths (src/shared/text.ts), refused as a 400.
const name = textSchema({ min: 1, max: 200 });
const slug = z
  .string()
  .trim()
  .toLowerCase()
  .regex(SLUG_RE, "lowercase letters, digits, '.', '_' or '-' (1-100, starting and ending with a letter or digit)")
  // As sent: trimmed and lowercased before SLUG_RE, so surrounding spaces and uppercase pass.
  .meta({ pattern: "^\\s*[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?\\s*$" });
const interval = z
  .number()
  .int("must be a whole number of milliseconds")
  .min(MIN_INTERVAL_MS, `at least ${MIN_INTERVAL_MS}`)
  .max(MAX_MS, `at most ${MAX_MS}`);
const grace = z
  .number()
  .int("must be a whole number of milliseconds")
  .min(0, "must not be negative")
  .max(MAX_MS, `at most ${MAX_MS}`);
// Free-form JSON (metadata, tags): the shared check; keys such as __proto__ stay data.
const object = jsonObjectSchema(MAX_JSON_BYTES);

export const createSchema = z.object({
  name,
  slug: slug.optional(),
  type: z.enum(TYPES).default("heartbeat"),
  expectedIntervalMs: interval.default(60_000),
  gracePeriodMs: grace.default(30_000),
  metadata: object.default({}),
  tags: object.default({}),
});

export const updateSchema = z.object({
  name: name.optional(),
  slug: slug.optional(),
  type: z.enum(TYPES).optional(),
  expectedIntervalMs: interval.optional(),
  gracePeriodMs: grace.optional(),
  metadata: object.optional(),
  tags: object.optional(),
});

/** A heartbeat's client id (decisions.md "Idempotent ingestion"): a UUID, stored lowercase. */
const clientId = z
  .string()
  .transform((v, ctx) => {
    const id = clientUuid(v);
    if (id === undefined) {
      ctx.addIssue({ code: "custom", message: CLIENT_ID_MESSAGE });
      return z.NEVER;
    }
    return id;
  })
  .meta({ format: "uuid" });

export const heartbeatSchema = z.object({
  id: clientId.optional(),
  /** The path's slug (the route's `monitorSlug`). */
  monitorSlug: slug,
  status: z.enum(["up", "down"]).default("up"),
  latencyMs: z.number().min(0, "must not be negative").max(MAX_MS).optional(),
  metadata: object.default({}),
  expectedIntervalMs: interval.optional(),
  gracePeriodMs: grace.optional(),
});

export const incidentPatchSchema = alsoRefused(
  z
    .object({
      title: textSchema({ max: 200 }).optional(),
      description: textSchema({ max: 10_000 }).optional(),
    })
    .refine((v) => v.title !== undefined || v.description !== undefined, {
      message: "give title or description (an empty string clears it)",
      path: ["title"],
    }),
  "neither title nor description",
);

/** An incident update (decisions.md: Status pages): public text, shown as given (trimmed) on status pages. */
export const incidentUpdateSchema = z.object({ message: textSchema({ min: 1, max: 2000 }) });

const limitSchema = (def: number, max: number) =>
  z.number().int("must be a whole number").min(1, "at least 1").max(max, `at most ${max}`).default(def);

export const heartbeatListSchema = z.object({
  from: timestampSchema.optional(),
  to: timestampSchema.optional(),
  limit: limitSchema(100, 1000),
});
export const incidentListSchema = z.object({ limit: limitSchema(100, 1000) });

const WINDOWS = {
  "24h": { ms: DAY_MS, bucket: "hour" },
  "7d": { ms: 7 * DAY_MS, bucket: "day" },
  "30d": { ms: 30 * DAY_MS, bucket: "day" },
  "90d": { ms: 90 * DAY_MS, bucket: "day" },
} as const;
export type WindowName = keyof typeof WINDOWS;
export const historySchema = z.object({
  window: z.enum(Object.keys(WINDOWS) as [WindowName, ...WindowName[]]).default("90d"),
});

const MAX_PERIOD_MS = 366 * DAY_MS;
export const statsSchema = alsoRefused(
  z.object({
    period: z
      .string()
      .regex(/^[1-9]\d{0,4}[dh]$/, "a number followed by d or h, such as 7d or 24h")
      .transform((p) => Number(p.slice(0, -1)) * (p.endsWith("d") ? DAY_MS : HOUR_MS))
      .refine((ms) => ms <= MAX_PERIOD_MS, "at most 366 days")
      .optional(),
    from: timestampSchema.optional(),
    to: timestampSchema.optional(),
  }),
  "period over 366 days",
  "period together with from or to",
  "from not before to, or a window over 366 days",
);

/** The stats window: `period` back from now, or from/to (to defaults to now), else the last 24 hours. */
export function statsWindow(input: z.infer<typeof statsSchema>, now: Date): { from: Date; to: Date } {
  if (input.period !== undefined && (input.from || input.to))
    throw badRequest("give either period or from/to, not both", [{ field: "period", message: "not with from/to" }]);
  if (input.period !== undefined) return { from: new Date(now.getTime() - input.period), to: now };
  const to = input.to ?? now;
  const from = input.from ?? new Date(to.getTime() - DAY_MS);
  if (from.getTime() >= to.getTime())
    throw badRequest("from must be before to", [{ field: "from", message: "must be before to" }]);
  if (to.getTime() - from.getTime() > MAX_PERIOD_MS)
    throw badRequest("the window is at most 366 days", [{ field: "from", message: "window too long" }]);
  return { from, to };
}

/**
 * Temporal mode: a workflow wakes once per deadline period, so the period has a floor
 * (TEMPORAL_MIN_DEADLINE_MS, docs/temporal.md). Checked on the values a request gives (an interval
 * alone counts with no grace; a grace alone is not checked).
 */
export function assertDeadlineFloor(
  input: { expectedIntervalMs?: number; gracePeriodMs?: number },
  minMs: number,
): void {
  if (minMs <= 0 || input.expectedIntervalMs === undefined) return;
  if (input.expectedIntervalMs + (input.gracePeriodMs ?? 0) >= minMs) return;
  throw badRequest(`expectedIntervalMs + gracePeriodMs must be at least ${minMs} ms on this server (Temporal mode)`, [
    { field: "expectedIntervalMs", message: `with gracePeriodMs, at least ${minMs}` },
  ]);
}

/** A request's int64 field as a number for validation (exact below 2^53; larger ones fail the range checks). */
export const num = (v: bigint | undefined): number | undefined => (v === undefined ? undefined : Number(v));

// Proto `optional` fields and unset messages arrive as undefined; zod sees exactly what was sent.
export const present = <T extends object>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/** The monitor fields of a create or update request, for createSchema / updateSchema. */
export function monitorFields(req: CreateMonitorRequest | UpdateMonitorRequest) {
  return present({
    name: req.name,
    slug: req.slug,
    type: req.type,
    expectedIntervalMs: num(req.expectedIntervalMs),
    gracePeriodMs: num(req.gracePeriodMs),
    metadata: req.metadata,
    tags: req.tags,
  });
}
