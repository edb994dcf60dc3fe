import type { HandlerContext } from "@connectrpc/connect";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { AnalyticsService } from "../../gen/vigil/v1/analytics_pb.js";
import type { DerivedRecords } from "../events/pipeline.js";
import type { Deps } from "../platform/deps.js";
import { bind, type Feature } from "../shared/feature.js";
import { withCancellable } from "../storage/db.js";
import { startSlotWorker } from "./worker.js";
import type { Periodic } from "../shared/periodic.js";
import type { ColumnBlocks } from "./column-blocks.js";
import { AnalyticsMetrics } from "./metrics.js";
import { NO_SLOTS } from "./sql.js";
import { keysetScan, queryEvents, type EventPosition } from "./events.js";
import { toEventJson, toEventMessage } from "../events/record.js";
import { CONTENT_TYPES, csvHeader, csvLine, ndjsonLine, parseExport } from "./export-format.js";
import { knownTypes, pickFields, sampledFields } from "./known.js";
import { parseFilters, type Node } from "./filters.js";
import { ProjectLimiter } from "./limit.js";
import {
  aggregate,
  count,
  group,
  measuredTimeseries,
  timeseries,
  unique,
  windowMoments,
  type Aggregation,
  type QueryEnv,
  type WindowMoments,
} from "./queries.js";
import type { Field } from "./fields.js";
import { funnel, retention, type Cohort, type StepTally } from "./journeys.js";
import type { Registry } from "./registry.js";
import {
  analyticsRules,
  parseAggregations,
  parseField,
  parseFunnel,
  parseGroupAggregations,
  parseGroupBy,
  parseInterval,
  parseLimit,
  parseMeasure,
  parseRetention,
} from "./requests.js";
import { parseWindow, type Interval, type Window } from "./time.js";
import { valueToJson } from "../shared/value.js";

// Analytics: the canonical query model over events (handlers: authorize, validate, query, map).
// Every query runs under its project's share of the pool (limit.ts) on one connection bound to the
// request's signal: a client that goes away cancels its statement (storage/db.ts withCancellable).

export interface AnalyticsWiring {
  /** The property registry: its `prepare` is the ingest pipeline's preparing step (server/features.ts). */
  registry: Registry;
  /** The pipeline's projector: rollups are its derived records (rollups.ts). */
  derived: DerivedRecords;
  /** Column blocks (blocks/create.ts), or null when off: whole hours answered in this process. */
  blocks: ColumnBlocks | null;
}

/**
 * The analytics answers other features read for a window, with the code and the rollups and blocks
 * of `count` and `aggregate` (alerts' samples: src/alerts/samples.ts). Not bound to a request.
 */
export interface WindowQueries {
  count(projectId: string, w: Window, filter: Node | null): Promise<number>;
  aggregate(projectId: string, w: Window, filter: Node | null, aggs: Aggregation[]): Promise<(number | null)[]>;
  /** Many windows at once (alert preview): queries.ts windowMoments. */
  moments(
    projectId: string,
    windows: readonly { start: number; end: number }[],
    filter: Node | null,
    field: Field | null,
  ): Promise<{ windows: WindowMoments[]; exactSums: boolean }>;
  /** analytics/funnel's counts per step (journeys.ts funnel). */
  funnel(projectId: string, w: Window, steps: (Node | null)[], windowMs: number): Promise<number[]>;
  /** analytics/retention's cohorts (journeys.ts retention). */
  retention(
    projectId: string,
    w: Window,
    start: Node | null,
    back: Node | null,
    interval: Interval,
    periods: number,
  ): Promise<Cohort[]>;
}

export interface AnalyticsFeature extends Feature {
  windows: WindowQueries;
}

/** Events per export batch (one read, one chunk). */
const EXPORT_BATCH = 1000;

export function createAnalyticsFeature(
  deps: Pick<Deps, "db" | "auth" | "clock" | "config" | "log" | "telemetry" | "background">,
  { registry, derived, blocks }: AnalyticsWiring,
): AnalyticsFeature {
  const { db, auth, clock, config } = deps;
  const fast = config.analytics.fastPaths;
  const bounds = config.analyticsLimits;
  const limiter = new ProjectLimiter(bounds.maxConcurrentPerProject, bounds.queueTimeoutMs);

  const metrics = new AnalyticsMetrics(deps.telemetry.registry);
  const record = (used: boolean) => metrics.blockQueries.inc({ outcome: used ? "blocks" : "declined" });
  const filtersOf = (v: Value | undefined) => parseFilters(valueToJson(v, "filters"), bounds.maxFilterNodes);

  /** Runs fn under the project's share of the pool, on one connection bound to the request's signal. */
  function run<T>(ctx: HandlerContext, projectId: string, fn: (env: QueryEnv) => Promise<T>): Promise<T> {
    return limiter.run(projectId, ctx.signal, async () => {
      // Rollups are derived records: apply what was accepted before this query began.
      await derived.settle(projectId);
      const slots = fast ? await registry.slots(projectId, clock().getTime()) : NO_SLOTS;
      return withCancellable(db, ctx.signal, (c) =>
        fn({ db: c, fast, slots, blocks: blocks?.queries(c, slots, record) }),
      );
    });
  }

  /** As `run`, for a caller with no request: no per-project queue, no cancellation. */
  async function inWindow<T>(projectId: string, fn: (env: QueryEnv) => Promise<T>): Promise<T> {
    await derived.settle(projectId);
    const slots = fast ? await registry.slots(projectId, clock().getTime()) : NO_SLOTS;
    return withCancellable(db, undefined, (c) => fn({ db: c, fast, slots, blocks: blocks?.queries(c, slots, record) }));
  }
  const windows: WindowQueries = {
    count: (projectId, w, filter) => inWindow(projectId, (e) => count(e, projectId, w, filter)),
    aggregate: async (projectId, w, filter, aggs) =>
      (await inWindow(projectId, (e) => aggregate(e, projectId, w, filter, aggs))).map((r) => r.value),
    moments: (projectId, ws, filter, field) =>
      inWindow(projectId, (e) => windowMoments(e, projectId, ws, filter, field)),
    funnel: (projectId, w, steps, windowMs) =>
      inWindow(projectId, async (e) => (await funnel(e, projectId, w, steps, windowMs)).steps.map((s) => s.count)),
    retention: (projectId, w, start, back, interval, periods) =>
      inWindow(projectId, (e) => retention(e, projectId, w, start, back, interval, periods)),
  };

  let worker: Periodic | undefined;
  let blockWorker: Periodic | undefined;
  return {
    name: "analytics",
    windows,
    services: [
      bind(
        AnalyticsService,
        {
          async queryEvents(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const filter = filtersOf(req.filters);
            const w = parseWindow(req.time, false);
            const lim = parseLimit(req.pagination?.limit, 50, 100, "pagination.limit");
            const page = await run(ctx, scope.projectId, (e) =>
              queryEvents(e.db, scope.projectId, w, filter, e.slots, lim, req.pagination?.cursor || null),
            );
            return {
              data: page.rows.map(toEventMessage),
              pagination: { nextCursor: page.nextCursor ?? undefined, hasMore: page.nextCursor !== null },
            };
          },
          async *exportEvents(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const filter = filtersOf(req.filters);
            const w = parseWindow(req.time, false);
            const { format, columns } = parseExport(req.format, req.columns);
            const slots = fast ? await registry.slots(scope.projectId, clock().getTime()) : NO_SLOTS;
            let contentType: string | undefined = CONTENT_TYPES[format];
            let text = format === "csv" ? csvHeader(columns) : "";
            let after: EventPosition | null = null;
            // Keyset batches, oldest first: one batch in memory, each read under the project's share of
            // the pool and cancelled with the request. A chunk per batch; the consumer's pace (REST:
            // the socket's drain, RPC: the stream's) decides when the next batch is read.
            for (;;) {
              const rows = await limiter.run(scope.projectId, ctx.signal, () =>
                withCancellable(db, ctx.signal, (c) =>
                  keysetScan(c, scope.projectId, w, filter, slots, "oldest", after, EXPORT_BATCH),
                ),
              );
              for (const r of rows) {
                const e = toEventJson(r);
                text += format === "csv" ? csvLine(columns, e) : ndjsonLine(e);
              }
              // The first chunk always goes out (it carries the content type, and CSV's header).
              if (text !== "" || contentType !== undefined) {
                yield { contentType, data: Buffer.from(text) };
                contentType = undefined;
                text = "";
              }
              if (rows.length < EXPORT_BATCH) return;
              const last = rows[rows.length - 1];
              after = { us: last.us, id: last.id };
            }
          },
          async count(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const filter = filtersOf(req.filters);
            const w = parseWindow(req.time, true)!;
            return {
              data: { count: BigInt(await run(ctx, scope.projectId, (e) => count(e, scope.projectId, w, filter))) },
            };
          },
          async timeseries(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const filter = filtersOf(req.filters);
            const w = parseWindow(req.time, true)!;
            const interval = parseInterval(req.interval);
            const measure = parseMeasure(req.aggregation);
            if (measure) {
              const measured = await run(ctx, scope.projectId, (e) =>
                measuredTimeseries(e, scope.projectId, w, filter, interval, measure),
              );
              return {
                data: {
                  buckets: measured.map((b) => ({ time: b.time, count: BigInt(b.count), value: b.value ?? undefined })),
                },
              };
            }
            const buckets = await run(ctx, scope.projectId, (e) => timeseries(e, scope.projectId, w, filter, interval));
            return { data: { buckets: buckets.map((b) => ({ time: b.time, count: BigInt(b.count) })) } };
          },
          async aggregate(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const filter = filtersOf(req.filters);
            const w = parseWindow(req.time, true)!;
            const aggs = parseAggregations(req.aggregations);
            const results = await run(ctx, scope.projectId, (e) => aggregate(e, scope.projectId, w, filter, aggs));
            return { data: { results: results.map((r) => ({ name: r.name, value: r.value ?? undefined })) } };
          },
          async unique(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const filter = filtersOf(req.filters);
            const w = parseWindow(req.time, true)!;
            const field = parseField(req.field, "field");
            const lim = parseLimit(req.limit, 100, 1000);
            const values = await run(ctx, scope.projectId, (e) => unique(e, scope.projectId, w, filter, field, lim));
            return {
              data: {
                values: values.map((v) => ({
                  value: fromJson(ValueSchema, v.value as JsonValue),
                  count: BigInt(v.count),
                })),
              },
            };
          },
          async group(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const filter = filtersOf(req.filters);
            const w = parseWindow(req.time, true)!;
            const fields = parseGroupBy(req.groupBy);
            const lim = parseLimit(req.limit, 100, 1000);
            const aggs = parseGroupAggregations(req.aggregations, req.groupBy);
            const groups = await run(ctx, scope.projectId, (e) =>
              group(e, scope.projectId, w, filter, fields, lim, aggs),
            );
            return { data: { groups } };
          },
          async funnel(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const { windowMs, breakdown } = parseFunnel({ ...req, steps: req.steps.length });
            const steps = req.steps.map((st) => filtersOf(st.filters));
            const w = parseWindow(req.time, true)!;
            const report = await run(ctx, scope.projectId, (e) =>
              funnel(e, scope.projectId, w, steps, windowMs, breakdown),
            );
            return {
              data: {
                steps: stepResults(report.steps),
                breakdown: report.breakdown.map((b) => ({
                  value: fromJson(ValueSchema, b.value),
                  steps: stepResults(b.steps),
                })),
              },
            };
          },
          async retention(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const { interval, periods } = parseRetention(req);
            const start = filtersOf(req.start?.filters);
            const back = filtersOf(req.return?.filters);
            const w = parseWindow(req.time, true)!;
            const cohorts = await run(ctx, scope.projectId, (e) =>
              retention(e, scope.projectId, w, start, back, interval, periods),
            );
            return {
              data: {
                cohorts: cohorts.map((c) => ({
                  start: c.start,
                  size: BigInt(c.size),
                  values: c.values.map((v) => fromJson(ValueSchema, v)),
                })),
              },
            };
          },
          async listFields(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const now = clock();
            const known = await run(ctx, scope.projectId, async (e) => ({
              types: await knownTypes(e.db, scope.projectId, now),
              ...(await sampledFields(e.db, scope.projectId)),
            }));
            return {
              data: {
                types: known.types.map((t) => ({ type: t.type, count: BigInt(t.count) })),
                fields: pickFields(known.rows).map((f) => ({ ...f, count: BigInt(f.count) })),
                sampled: known.sampled,
              },
            };
          },
        },
        { streamContentTypes: { exportEvents: ["application/x-ndjson", "text/csv"] }, rules: analyticsRules },
      ),
    ],
    async start() {
      if (config.analytics.slotIntervalMs > 0) worker = startSlotWorker(deps);
      blockWorker = blocks?.startBuilder();
    },
    async stop() {
      await worker?.stop();
      await blockWorker?.stop();
    },
  };
}

/** A funnel's steps as answered: conversion against the first step's count (null when it is 0). */
function stepResults(steps: StepTally[]) {
  const first = steps[0]?.count ?? 0;
  return steps.map((s) => ({
    count: BigInt(s.count),
    conversion: first === 0 ? undefined : s.count / first,
    medianTimeMs: s.medianTimeMs ?? undefined,
  }));
}
