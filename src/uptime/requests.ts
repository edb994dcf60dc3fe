import { z } from "zod";
import { cursorRule } from "../shared/cursor.js";
import type { PingExitRequest, PingRequest, PingSignalRequest } from "../../gen/vigil/v1/ping_pb.js";
import type {
  CreateMonitorRequest,
  ExitRunRequest,
  FailRunRequest,
  SendHeartbeatRequest,
  StartRunRequest,
  UpdateMonitorRequest,
} from "../../gen/vigil/v1/uptime_pb.js";
import { badRequest } from "../shared/errors.js";
import { CLIENT_ID_MESSAGE, clientUuid, UUID } from "../shared/ids.js";
import { jsonObjectSchema } from "../shared/json.js";
import { textSchema } from "../shared/text.js";
import { alsoRefused } from "../shared/validate.js";
import { INCIDENT_IMPACTS, INCIDENT_STAGES, SLUG_RE } from "./model.js";
import { parseSchedule, type Schedule } from "./schedule.js";
import { DAY_MS, HOUR_MS, timestampSchema } from "../shared/time.js";

// Input rules of the uptime routes (docs/uptime.md lists them).

const TYPES = ["heartbeat", "http", "worker", "bot", "cron", "custom"] as const;
const MIN_INTERVAL_MS = 100;
const MAX_MS = 365 * DAY_MS;
const MAX_JSON_BYTES = 16 * 1024;
const MIN_RUNTIME_MS = 1000;
const MAX_TOLERANCE = 1000;

const limitSchema = (def: number, max: number) =>
  z.number().int("must be a whole number").min(1, "at least 1").max(max, `at most ${max}`).default(def);

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

/**
 * A cron schedule (decisions.md "Cron jobs and ping keys"): five fields in an IANA zone (default
 * UTC), checked by schedule.ts; a refusal names `schedule.cron` or `schedule.timezone`.
 */
const scheduleSchema = z
  .object({
    cron: z.string().meta({ description: "five fields: minute hour day-of-month month day-of-week" }),
    timezone: z.string().default("UTC"),
  })
  .transform((v, ctx): Schedule => {
    const r = parseSchedule(v);
    if (r.ok) return r.schedule;
    ctx.addIssue({ code: "custom", path: [r.refusal.field], message: r.refusal.message });
    return z.NEVER;
  });
/** maxRuntimeMs: 1 s .. 365 days; 0 on PATCH clears it. */
const maxRuntime = z
  .number()
  .int("must be a whole number of milliseconds")
  .min(MIN_RUNTIME_MS, `at least ${MIN_RUNTIME_MS}`)
  .max(MAX_MS, `at most ${MAX_MS}`);
const tolerance = z
  .number()
  .int("must be a whole number")
  .min(0, "must not be negative")
  .max(MAX_TOLERANCE, `at most ${MAX_TOLERANCE}`);

/** A monitor has a schedule or an interval, not both (decisions.md). */
const oneOf = <T extends { schedule?: unknown; expectedIntervalMs?: unknown }>(v: T) =>
  v.schedule === undefined || v.expectedIntervalMs === undefined;
const oneOfRule = {
  message: "give schedule or expectedIntervalMs, not both (a monitor has one of them)",
  path: ["schedule"],
};

export const createSchema = z
  .object({
    name,
    slug: slug.optional(),
    type: z.enum(TYPES).default("heartbeat"),
    expectedIntervalMs: interval.optional(),
    gracePeriodMs: grace.default(30_000),
    schedule: scheduleSchema.optional(),
    maxRuntimeMs: maxRuntime.optional(),
    failureTolerance: tolerance.default(0),
    metadata: object.default({}),
    tags: object.default({}),
  })
  .refine(oneOf, oneOfRule);

export const updateSchema = z
  .object({
    name: name.optional(),
    slug: slug.optional(),
    type: z.enum(TYPES).optional(),
    expectedIntervalMs: interval.optional(),
    gracePeriodMs: grace.optional(),
    schedule: scheduleSchema.optional(),
    /** 0 clears the limit. */
    maxRuntimeMs: z.union([z.literal(0), maxRuntime]).optional(),
    failureTolerance: tolerance.optional(),
    metadata: object.optional(),
    tags: object.optional(),
  })
  .refine(oneOf, oneOfRule);

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
  .meta({ format: "uuid", pattern: UUID.source }); // clientUuid's check, for the document and the descriptors

const heartbeatFields = {
  id: clientId.optional(),
  /** The path's slug (the route's `monitorSlug`). */
  monitorSlug: slug,
  status: z.enum(["up", "down"]).default("up"),
  latencyMs: z.number().min(0, "must not be negative").max(MAX_MS).optional(),
  metadata: object.default({}),
  expectedIntervalMs: interval.optional(),
  gracePeriodMs: grace.optional(),
  schedule: scheduleSchema.optional(),
  /** Pairs a run's start and end (decisions.md "Cron jobs and ping keys"). */
  runId: textSchema({ min: 1, max: 200 }).optional(),
  /** The run's output: any text; its last 10,000 bytes are kept (runs.ts). */
  output: z.string().optional(),
};

export const heartbeatSchema = z.object(heartbeatFields).refine(oneOf, oneOfRule);

/** A run signal's body (start, fail, exit): a heartbeat's fields without status. */
const { status: _status, ...signalFields } = heartbeatFields;
export const runSignalSchema = z.object(signalFields).refine(oneOf, oneOfRule);

/**
 * A signal body's keys that are no field of it (`status` is the plain heartbeat's only): over REST
 * the transcoder refuses them first; a caller handing raw JSON (a ping URL) gets the same 400.
 */
export function assertSignalFields(body: Record<string, unknown>, withStatus: boolean): void {
  const known = withStatus ? heartbeatFields : signalFields;
  const extra = Object.keys(body).filter((k) => k === "monitorSlug" || !Object.hasOwn(known, k));
  if (extra.length)
    throw badRequest(
      `unknown field '${extra[0]}': the request body has no such field`,
      extra.map((field) => ({ field, message: "unknown field" })),
    );
}

/** `exit/:code`: 0 is a success, any other code a failure. */
export const exitRunSchema = z
  .object({
    code: z.number().int("must be a whole number").min(0, "at least 0").max(255, "at most 255 (a process exit status)"),
    ...signalFields,
  })
  .refine(oneOf, oneOfRule);

/** GET .../schedule: how many next runs (1-100, default 5). */
export const scheduleQuerySchema = z.object({ count: limitSchema(5, 100) });

/** GET .../runs: newest first, keyset pages. */
export const runListSchema = z.object({ limit: limitSchema(50, 1000), cursor: cursorRule.optional() });

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
  "an empty title on a manual incident (it keeps one)",
);

const updateMessage = textSchema({ min: 1, max: 2000 });

/**
 * An incident update (decisions.md: Status pages): public text, shown as given (trimmed) on status
 * pages; on a manual incident it may move its status (model.ts `nextStage`).
 */
export const incidentUpdateSchema = alsoRefused(
  z.object({ message: updateMessage, status: z.enum(INCIDENT_STAGES).optional() }),
  "a status on an incident a monitor opened (only manual incidents take one)",
);

/** The most monitors a manual incident names (decisions.md "Status communication"). */
const MAX_INCIDENT_MONITORS = 100;

/** POST .../incidents: a manual incident (decisions.md "Status communication"). */
export const createIncidentSchema = alsoRefused(
  z.object({
    title: textSchema({ min: 1, max: 200 }),
    description: textSchema({ max: 2000 }).optional(),
    impact: z.enum(INCIDENT_IMPACTS),
    monitorIds: z
      .array(z.string().min(1, "must not be empty").max(200, "at most 200 characters"))
      .min(1, "at least 1 monitor")
      .max(MAX_INCIDENT_MONITORS, `at most ${MAX_INCIDENT_MONITORS} monitors`)
      .refine((ids) => new Set(ids).size === ids.length, "must not repeat a monitor"),
    status: z.enum(INCIDENT_STAGES),
    message: updateMessage,
  }),
  "a monitor id given twice in monitorIds",
);

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
const num = (v: bigint | undefined): number | undefined => (v === undefined ? undefined : Number(v));

// Proto `optional` fields and unset messages arrive as undefined; zod sees exactly what was sent.
export const present = <T extends object>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/**
 * A heartbeat's or run signal's body as plain values (SendHeartbeat, StartRun, FailRun, ExitRun and
 * the ping URL: the same fields; `status` the plain heartbeat's only), for recordRunSignal.
 */
export function signalBody(
  req:
    | SendHeartbeatRequest
    | StartRunRequest
    | FailRunRequest
    | ExitRunRequest
    | PingRequest
    | PingSignalRequest
    | PingExitRequest,
): Record<string, unknown> {
  return present({
    id: req.id,
    status: "status" in req ? req.status : undefined,
    latencyMs: req.latencyMs,
    metadata: req.metadata,
    expectedIntervalMs: num(req.expectedIntervalMs),
    gracePeriodMs: num(req.gracePeriodMs),
    schedule: req.schedule && present({ cron: req.schedule.cron, timezone: req.schedule.timezone }),
    runId: req.runId,
    output: req.output,
  });
}

/** The monitor fields of a create or update request, for createSchema / updateSchema. */
export function monitorFields(req: CreateMonitorRequest | UpdateMonitorRequest) {
  return present({
    name: req.name,
    slug: req.slug,
    type: req.type,
    expectedIntervalMs: num(req.expectedIntervalMs),
    gracePeriodMs: num(req.gracePeriodMs),
    schedule: req.schedule && { cron: req.schedule.cron, timezone: req.schedule.timezone },
    maxRuntimeMs: num(req.maxRuntimeMs),
    failureTolerance: req.failureTolerance,
    metadata: req.metadata,
    tags: req.tags,
  });
}

// Maintenance windows (decisions.md "Status communication"; docs/uptime.md "Maintenance windows").

const MIN_WINDOW_MS = 1000;
const MAX_WINDOW_MS = 7 * DAY_MS;
const windowMonitorIds = z
  .array(z.string().min(1, "must not be empty").max(200, "at most 200 characters"))
  .min(1, "at least 1 monitor")
  .max(MAX_INCIDENT_MONITORS, `at most ${MAX_INCIDENT_MONITORS} monitors`)
  .refine((ids) => new Set(ids).size === ids.length, "must not repeat a monitor");
const windowSchedule = z
  .object({
    cron: z.string().meta({ description: "five fields: minute hour day-of-month month day-of-week" }),
    timezone: z.string().default("UTC"),
    durationMs: z
      .number()
      .int("must be a whole number of milliseconds")
      .min(MIN_WINDOW_MS, `at least ${MIN_WINDOW_MS}`)
      .max(MAX_WINDOW_MS, `at most ${MAX_WINDOW_MS}`),
  })
  .transform((v, ctx): Schedule & { durationMs: number } => {
    const r = parseSchedule(v);
    if (r.ok) return { ...r.schedule, durationMs: v.durationMs };
    ctx.addIssue({ code: "custom", path: [r.refusal.field], message: r.refusal.message });
    return z.NEVER;
  });

const WINDOW_TIMES_RULE = "startsAt and endsAt together, or schedule, not both; endsAt after startsAt, at most 7 days";
const windowTimes = (
  v: { startsAt?: Date; endsAt?: Date; schedule?: unknown },
  ctx: z.RefinementCtx,
  required: boolean,
) => {
  const oneOff = v.startsAt !== undefined || v.endsAt !== undefined;
  if (oneOff && v.schedule !== undefined)
    ctx.addIssue({ code: "custom", path: ["schedule"], message: "give startsAt and endsAt, or schedule, not both" });
  else if (oneOff && (v.startsAt === undefined || v.endsAt === undefined))
    ctx.addIssue({
      code: "custom",
      path: [v.startsAt === undefined ? "startsAt" : "endsAt"],
      message: "startsAt and endsAt go together",
    });
  else if (oneOff && v.endsAt!.getTime() <= v.startsAt!.getTime())
    ctx.addIssue({ code: "custom", path: ["endsAt"], message: "must be after startsAt" });
  else if (oneOff && v.endsAt!.getTime() - v.startsAt!.getTime() > MAX_WINDOW_MS)
    ctx.addIssue({ code: "custom", path: ["endsAt"], message: `at most ${MAX_WINDOW_MS} ms after startsAt` });
  else if (required && !oneOff && v.schedule === undefined)
    ctx.addIssue({ code: "custom", path: ["startsAt"], message: "give startsAt and endsAt, or schedule" });
};

export const createMaintenanceSchema = alsoRefused(
  z
    .object({
      title: textSchema({ min: 1, max: 200 }),
      description: textSchema({ max: 2000 }).default(""),
      monitorIds: windowMonitorIds,
      startsAt: timestampSchema.optional(),
      endsAt: timestampSchema.optional(),
      schedule: windowSchedule.optional(),
    })
    .superRefine((v, ctx) => windowTimes(v, ctx, true)),
  WINDOW_TIMES_RULE,
  "a monitor id given twice in monitorIds",
);

export const updateMaintenanceSchema = alsoRefused(
  z
    .object({
      title: textSchema({ min: 1, max: 200 }).optional(),
      description: textSchema({ max: 2000 }).optional(),
      monitorIds: windowMonitorIds.optional(),
      startsAt: timestampSchema.optional(),
      endsAt: timestampSchema.optional(),
      schedule: windowSchedule.optional(),
    })
    .superRefine((v, ctx) => windowTimes(v, ctx, false)),
  WINDOW_TIMES_RULE,
  "a monitor id given twice in monitorIds",
);

export type MaintenanceInput = z.output<typeof createMaintenanceSchema>;
export type MaintenancePatch = z.output<typeof updateMaintenanceSchema>;
