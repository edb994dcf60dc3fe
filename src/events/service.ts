import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";
import { z } from "zod";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { clientInfoKey } from "../shared/context.js";
import type { Deps } from "../platform/deps.js";
import { ApiError, badRequest, notFound, tooLarge } from "../shared/errors.js";
import { bind, jsonBody, jsonListItems, type Feature } from "../shared/feature.js";
import { unlessProjectGone } from "../shared/gone.js";
import { Pipeline, type Ingestor, type NewEvent, type PipelineParts } from "./pipeline.js";
import { IngestMetrics } from "./metrics.js";
import { Projector } from "./projector.js";
import { withCancellable } from "../storage/db.js";
import { HOUR_MS, timestampSchema } from "../shared/time.js";
import { alsoRefused, validate } from "../shared/validate.js";
import { CURSOR_REFUSED } from "../shared/cursor.js";
import { mergeContext, serverContext } from "./context.js";
import { encodeCursor, eventCursor } from "./cursor.js";
import { GroupCommitIngestor } from "./ingest.js";
import { CLAIM_WINDOW_MS, claimKeyKind, purgeClaims } from "./claims.js";
import { startPeriodic, type Periodic } from "../shared/periodic.js";
import { getEvent, listEvents } from "./store.js";
import { toEventMessage } from "./record.js";
import { uuidv7Time } from "./uuidv7.js";
import {
  checkEvent,
  eventBatchRules,
  eventRules,
  MAX_BATCH_EVENTS,
  REPARSE_GROWTH,
  type EventRefusal,
} from "./validate.js";

const listSchema = alsoRefused(
  z
    .object({
      limit: z.number().int().min(1, "must be between 1 and 100").max(100, "must be between 1 and 100").default(50),
      cursor: alsoRefused(z.string(), CURSOR_REFUSED).optional(),
      type: z.string().min(1).max(200).optional(),
      userId: z.string().min(1).max(256).optional(),
      source: z.string().min(1).max(256).optional(),
      search: z.string().max(200).optional(),
      startDate: timestampSchema.optional(),
      endDate: timestampSchema.optional(),
    })
    .refine((v) => !v.startDate || !v.endDate || v.startDate <= v.endDate, {
      message: "startDate must not be after endDate",
      path: ["startDate"],
    }),
  "startDate after endDate",
);

function refusal(e: EventRefusal): ApiError {
  return new ApiError(400, e.code, e.message, [{ field: e.field, message: e.message }]);
}

export interface EventsFeature extends Feature {
  /** Stores accepted events (group commit) through the pipeline; other features record events with it. */
  ingestor: Ingestor;
  /** The participants run inside the ingest transaction (the lists wired in server/features.ts). */
  pipeline: Pipeline;
  /** Applies the projections' deltas after acceptance; readers of derived records settle() first. */
  derived: Projector;
  /**
   * Deletes the client ids (claims.ts) older than the window as of `now` (default: the clock);
   * run hourly on worker nodes. Returns how many were deleted.
   */
  purgeIngestIds(now?: Date): Promise<number>;
}

/** `parts`: the ingest pipeline's participants, in order; their contract is in pipeline.ts. */
export function createEventsFeature(
  deps: Pick<Deps, "config" | "db" | "log" | "clock" | "auth" | "telemetry" | "pressure" | "background">,
  parts: PipelineParts,
): EventsFeature {
  const { db, clock, auth } = deps;
  const pipeline = new Pipeline(parts);
  const derived = new Projector({
    db,
    log: deps.log,
    telemetry: deps.telemetry,
    tasks: deps.background,
    projections: parts.projections,
    delayMs: deps.config.ingest.derivedDelayMs,
    pollMs: 1000,
  });
  const metrics = new IngestMetrics(deps.telemetry.registry);
  const ingestor = new GroupCommitIngestor(deps, pipeline, derived, metrics);

  const purgeIngestIds = (now = clock(), stopped?: () => boolean) =>
    purgeClaims(db, new Date(now.getTime() - CLAIM_WINDOW_MS), { stopped });
  let purge: Periodic | undefined;

  const contextOf = (ctx: HandlerContext, now: Date) =>
    serverContext(ctx.requestHeader, ctx.values.get(clientInfoKey), now);

  return {
    name: "events",
    ingestor,
    pipeline,
    derived,
    purgeIngestIds: (now) => purgeIngestIds(now),
    services: [
      bind(
        EventService,
        {
          async ingestEvent(req, ctx) {
            // Its rate limit was taken by the gate, before the body was read (server/ingest-routes.ts).
            const scope = await auth.ingestKey(ctx);
            const now = clock();
            // Over REST the body as parsed (restJsonBody: the validator below is the batch items' own,
            // and the body's size bounds the event's); over gRPC and Connect the message's fields.
            const body = jsonBody(ctx);
            const raw = body
              ? body.json
              : {
                  type: req.type,
                  userId: req.userId,
                  groupId: req.groupId,
                  source: req.source,
                  data: req.data,
                  context: req.context,
                  tags: req.tags,
                  timestamp: req.timestamp,
                  id: req.id,
                };
            const sizeBound = body ? body.bodyBytes * REPARSE_GROWTH : undefined;
            const check = checkEvent(raw, now, claimKeyKind(scope.principal), sizeBound);
            if (!check.ok) throw refusal(check.error);
            check.event.context = mergeContext(check.event.context, contextOf(ctx, now));
            // A project deleted meanwhile (a new source's insert fails its key): answered as after the delete.
            const [stored] = await unlessProjectGone(
              () => ingestor.accept(scope.projectId, [check.event]),
              () => auth.ingestKey(ctx),
            );
            return { data: toEventMessage(stored) };
          },

          async ingestEventBatch(req, ctx) {
            const scope = await auth.ingestKey(ctx);
            // Over REST the items arrive as the parsed JSON itself; over gRPC as Value messages.
            const list = jsonListItems(ctx, req.events);
            const items = list.items;
            // No item of a parsed body can serialize to more than REPARSE_GROWTH times the body.
            const sizeBound = list.json ? list.bodyBytes * REPARSE_GROWTH : undefined;
            if (items.length > MAX_BATCH_EVENTS)
              throw tooLarge(`a batch holds at most ${MAX_BATCH_EVENTS} events; this one has ${items.length}`);
            if (items.length === 0)
              throw badRequest("events is required: an array of 1 to 1000 events", [
                { field: "events", message: "is required" },
              ]);
            // Its rate limit ("batches") was taken by the gate, before the body was read.
            const now = clock();
            const server = contextOf(ctx, now);
            const keyKind = claimKeyKind(scope.principal);
            const valid: NewEvent[] = [];
            const errors: { index: number; code: string; message: string }[] = [];
            for (let i = 0; i < items.length; i++) {
              let raw: JsonValue;
              if (list.json) raw = list.items[i];
              else {
                try {
                  raw = toJson(ValueSchema, list.items[i]);
                } catch {
                  errors.push({ index: i, code: "validation_failed", message: "event is not valid JSON" });
                  continue;
                }
              }
              const check = checkEvent(raw, now, keyKind, sizeBound);
              if (!check.ok) {
                errors.push({
                  index: i,
                  code: check.error.code,
                  message: `${check.error.field}: ${check.error.message}`,
                });
                continue;
              }
              check.event.context = mergeContext(check.event.context, server);
              valid.push(check.event);
            }
            const stored = await unlessProjectGone(
              () => ingestor.accept(scope.projectId, valid),
              () => auth.ingestKey(ctx),
            );
            return {
              data: {
                events: stored.map((e) => ({ id: e.id, type: e.type })),
                received: items.length,
                accepted: stored.length,
                rejected: errors.length,
                errors,
              },
            };
          },

          async listEvents(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const input = validate(listSchema, {
              limit: req.limit,
              cursor: req.cursor,
              type: req.type,
              userId: req.userId,
              source: req.source,
              search: req.search === "" ? undefined : req.search,
              startDate: req.startDate,
              endDate: req.endDate,
            });
            let after: { ts: Date; id: string } | undefined;
            if (input.cursor !== undefined && input.cursor !== "") {
              after = eventCursor.read(input.cursor);
            }
            // The userId path reads event_user_hours, a derived record: apply what is pending first.
            if (input.userId !== undefined) await derived.settle(scope.projectId);
            // On its own connection bound to the request: a client that goes away cancels the read.
            const page = await withCancellable(db, ctx.signal, (c) =>
              listEvents(c, {
                projectId: scope.projectId,
                limit: input.limit,
                after,
                type: input.type,
                userId: input.userId,
                sourceKey: input.source,
                search: input.search,
                start: input.startDate,
                end: input.endDate,
              }),
            );
            const last = page.rows[page.rows.length - 1];
            return {
              data: page.rows.map(toEventMessage),
              pagination: {
                nextCursor: page.hasMore && last ? encodeCursor(last.id) : undefined,
                hasMore: page.hasMore,
              },
            };
          },

          async getEvent(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const ms = uuidv7Time(req.eventId);
            if (ms === undefined) throw notFound("event");
            const row = await getEvent(db, scope.projectId, req.eventId.toLowerCase(), new Date(ms));
            if (!row) throw notFound("event");
            return { data: toEventMessage(row) };
          },
        },
        {
          restJsonList: { ingestEventBatch: "events" },
          restJsonBody: ["ingestEvent"],
          rules: { listEvents: listSchema, ingestEvent: eventRules, ingestEventBatch: eventBatchRules },
        },
      ),
    ],
    // Every node that ingests projects its own commits; every node also picks up leftovers.
    startEveryRole() {
      derived.start();
    },
    // Client ids older than the window (7 days) are forgotten: the same id may then be stored again.
    async start() {
      purge = startPeriodic(deps.background, "purging ingest ids", HOUR_MS, async (stopped) => {
        await purgeIngestIds(clock(), stopped);
      });
    },
    async stop() {
      await purge?.stop();
      await ingestor.stop();
      // After the last flush: its deltas are applied now, or by the next start.
      await derived.stop();
    },
  };
}
