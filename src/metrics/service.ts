import { toJson } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { MetricsService } from "../../gen/vigil/v1/metrics_pb.js";
import type { Deps } from "../platform/deps.js";
import { badRequest, conflict, notFound, tooLarge } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { unlessProjectGone } from "../shared/gone.js";
import type { Ingestor, NewEvent } from "../events/pipeline.js";
import { EVENT_TYPE, INTERVALS, type MetricType } from "./model.js";
import { aggregate, timeseries } from "./query.js";
import * as rq from "./requests.js";
import { findMetric, listMetrics, readPoints, registerTypes } from "./store.js";
import { BATCH_MAX, checkMetric, metricBatchRules, metricRules, type MetricInput } from "./validate.js";

// Metrics routes. Recording validates, settles the name's type in the registry (409 for the
// other type), and hands `$measure`/`$increment`/`$decrement` events to the ingestor; the
// pipeline's committing step `metricsCommitting` (committing.ts, wired in server/features.ts) turns
// them into points and rollups in the same transaction.

function toEvent(m: MetricInput): NewEvent {
  const data: Record<string, unknown> = { name: m.name, value: m.value };
  if (m.unit !== null) data.unit = m.unit;
  const event: NewEvent = {
    type: EVENT_TYPE[m.type],
    timestamp: m.timestamp,
    userId: null,
    groupId: null,
    source: null,
    data,
    context: {},
    tags: m.tags,
  };
  // A point whose id is stored already is not written (nor its point, rollups or total): it counts
  // as accepted, as it did the first time. Its claim is in the `secret` namespace (claims.ts): metric
  // points come from secret keys and sessions only (the gate refuses a publishable key here).
  if (m.id !== null) event.claim = { kind: "metric", keyKind: "secret", id: m.id };
  return event;
}

/** A google.protobuf.Value as plain JSON; one that cannot be JSON (NaN from a gRPC client) is a non-JSON marker. */
function plain(v: Value | undefined): unknown {
  if (v === undefined) return undefined;
  try {
    return toJson(ValueSchema, v);
  } catch {
    return Symbol("not JSON");
  }
}

const typeConflict = (name: string, registered: MetricType, wanted: MetricType) =>
  `metric '${name}' is a ${registered}; it cannot be recorded as a ${wanted} (a name keeps its first type)`;

export function createMetricsFeature(
  deps: Pick<Deps, "db" | "auth" | "clock" | "limits">,
  ingestor: Ingestor,
): Feature {
  const { db, auth, clock, limits } = deps;

  async function metricOr404(projectId: string, name: string) {
    const m = await findMetric(db, projectId, name);
    if (!m) throw rq.missingMetric(name);
    return m;
  }

  return {
    name: "metrics",
    services: [
      bind(
        MetricsService,
        {
          async recordMetric(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            // An API key's limit was taken by the gate, before the body was read (server/ingest-routes.ts).
            if (scope.principal.kind === "session") await limits.take("metrics", scope.projectId);
            const check = checkMetric(
              {
                type: req.type,
                name: req.name,
                value: plain(req.value),
                unit: req.unit,
                timestamp: req.timestamp,
                tags: req.tags,
                id: req.id,
              },
              clock(),
            );
            if (!check.ok)
              throw badRequest(`invalid metric: ${check.error.field}: ${check.error.message}`, [check.error]);
            const m = check.metric;
            // A project deleted meanwhile answers as after the delete (401/404), not 500.
            const types = await unlessProjectGone(
              () => registerTypes(db, scope.projectId, new Map([[m.name, m.metricType]])),
              () => auth.project(ctx, req.projectId, "data"),
            );
            const registered = types.get(m.name)!;
            if (registered !== m.metricType)
              throw conflict(typeConflict(m.name, registered, m.metricType), [
                { field: "type", message: `the metric is a ${registered}` },
              ]);
            await unlessProjectGone(
              () => ingestor.accept(scope.projectId, [toEvent(m)]),
              () => auth.project(ctx, req.projectId, "data"),
            );
            return { data: { accepted: 1n } };
          },

          async recordMetricBatch(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const items: unknown[] = (req.metrics ?? []).map(plain);
            if (items.length === 0)
              throw badRequest("metrics must be a non-empty array", [
                { field: "metrics", message: `1-${BATCH_MAX} metrics are required` },
              ]);
            if (items.length > BATCH_MAX)
              throw tooLarge(`a batch holds at most ${BATCH_MAX} metrics; this one has ${items.length}`);
            if (scope.principal.kind === "session") await limits.take("metricBatches", scope.projectId);
            const now = clock();
            const errors: { index: bigint; code: string; message: string }[] = [];
            const valid: { index: number; metric: MetricInput }[] = [];
            const wanted = new Map<string, MetricType>();
            items.forEach((raw, index) => {
              const c = checkMetric(raw, now);
              if (!c.ok)
                errors.push({
                  index: BigInt(index),
                  code: "validation_failed",
                  message: `${c.error.field}: ${c.error.message}`,
                });
              else {
                valid.push({ index, metric: c.metric });
                if (!wanted.has(c.metric.name)) wanted.set(c.metric.name, c.metric.metricType);
              }
            });
            const accepted: MetricInput[] = [];
            if (valid.length) {
              const types = await unlessProjectGone(
                () => registerTypes(db, scope.projectId, wanted),
                () => auth.project(ctx, req.projectId, "data"),
              );
              for (const { index, metric } of valid) {
                const registered = types.get(metric.name)!;
                if (registered === metric.metricType) accepted.push(metric);
                else
                  errors.push({
                    index: BigInt(index),
                    code: "conflict",
                    message: typeConflict(metric.name, registered, metric.metricType),
                  });
              }
            }
            if (accepted.length)
              await unlessProjectGone(
                () => ingestor.accept(scope.projectId, accepted.map(toEvent)),
                () => auth.project(ctx, req.projectId, "data"),
              );
            errors.sort((a, b) => Number(a.index - b.index));
            return { data: { accepted: BigInt(accepted.length), rejected: BigInt(errors.length), errors } };
          },

          async queryMetric(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const q = rq.parse(rq.querySchema, req);
            const m = await metricOr404(scope.projectId, q.name);
            const sel = rq.selection(m, q, rq.rangeOf(q.time));
            const agg = rq.aggregationFor(m, q.aggregation);
            const r = await aggregate(db, sel, agg);
            return {
              data: {
                name: m.name,
                type: m.type,
                unit: m.unit ?? undefined,
                aggregation: agg,
                value: r.value ?? undefined,
                count: BigInt(r.count),
              },
            };
          },

          async getMetricTimeseries(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const q = rq.parse(rq.timeseriesSchema, req);
            const range = rq.rangeOf(q.time);
            rq.checkBuckets(range, q.interval);
            const m = await metricOr404(scope.projectId, q.name);
            const sel = rq.selection(m, q, range);
            const agg = rq.aggregationFor(m, q.aggregation);
            const buckets = await timeseries(db, sel, agg, INTERVALS[q.interval]);
            return {
              data: {
                name: m.name,
                type: m.type,
                unit: m.unit ?? undefined,
                interval: q.interval,
                aggregation: agg,
                buckets: buckets.map((b) => ({
                  timestamp: b.timestamp,
                  value: b.value ?? undefined,
                  count: BigInt(b.count),
                })),
              },
            };
          },

          async listMetricPoints(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const q = rq.parse(rq.pointsSchema, req);
            const after = q.cursor !== undefined ? rq.decodeCursor(q.cursor) : undefined;
            const m = await metricOr404(scope.projectId, q.name);
            const sel = rq.selection(m, q, rq.rangeOf(q.time));
            const limit = q.limit ?? rq.POINTS_LIMIT_DEFAULT;
            const rows = await readPoints(db, {
              metricId: m.id,
              ops: sel.ops,
              from: sel.from,
              to: sel.to,
              limit,
              after,
            });
            const hasMore = rows.length > limit;
            const page = rows.slice(0, limit);
            const last = page[page.length - 1];
            return {
              data: {
                name: m.name,
                type: m.type,
                unit: m.unit ?? undefined,
                points: page.map(({ timestamp, value, operation, tags }) => ({ timestamp, value, operation, tags })),
              },
              pagination: {
                nextCursor: hasMore && last ? rq.encodeCursor(last.timestamp, last.eventId) : undefined,
                hasMore,
              },
            };
          },

          async getCurrentMetric(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            const q = rq.parse(rq.currentSchema, req);
            const m = await findMetric(db, scope.projectId, q.name);
            if (!m) throw notFound(`metric '${q.name}'`);
            const value = m.type === "counter" ? m.total : m.last_value;
            return {
              data: { name: m.name, type: m.type, value: value ?? undefined, lastTimestamp: m.last_ts?.toISOString() },
            };
          },

          async listMetrics(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            return { data: await listMetrics(db, scope.projectId) };
          },
        },
        {
          rules: {
            recordMetric: metricRules,
            recordMetricBatch: metricBatchRules,
            queryMetric: rq.querySchema,
            getMetricTimeseries: rq.timeseriesSchema,
            listMetricPoints: rq.pointsSchema,
            getCurrentMetric: rq.currentSchema,
          },
        },
      ),
    ],
  };
}

/** A measurement another feature records (uptime: each run's duration), by the routes' own write path. */
export interface Measurement {
  name: string;
  value: number;
  unit: string | null;
  timestamp: Date;
  tags: Record<string, string | number | boolean>;
  /** A UUID: recorded once whoever sends it again (the routes' client id). */
  id: string;
}

/**
 * Records measurements as RecordMetric does: the name's type settled in the registry (a name that
 * is already a counter is skipped: it keeps its first type), then `$measure` events handed to the
 * ingestor, whose committing step writes the points and rollups.
 *
 * A name found registered as a measurement is remembered (per project, in this process): a
 * metric's type never changes and its row goes only with its project, so the next points of that
 * name skip the registry's two statements (each ended run records one, src/uptime/runs.ts). Should
 * the project be deleted meanwhile, the ingest's own registry upsert fails on its foreign key.
 */
export function measurementRecorder(db: Deps["db"], ingestor: Ingestor) {
  const known = new Set<string>();
  return async (projectId: string, points: Measurement[]): Promise<void> => {
    if (!points.length) return;
    const unknown = new Map<string, "measurement">();
    for (const p of points) if (!known.has(`${projectId}\u0000${p.name}`)) unknown.set(p.name, "measurement");
    if (unknown.size) {
      const types = await registerTypes(db, projectId, unknown);
      if (known.size + types.size > MAX_KNOWN_MEASUREMENTS) known.clear();
      for (const [name, type] of types) if (type === "measurement") known.add(`${projectId}\u0000${name}`);
    }
    const ok = points.filter((p) => known.has(`${projectId}\u0000${p.name}`));
    if (!ok.length) return;
    await ingestor.accept(
      projectId,
      ok.map((p) => toEvent({ type: "measurement", metricType: "measurement", op: "measure", ...p })),
    );
  };
}

/** Names the recorder remembers as registered measurements (project and name), at most. */
const MAX_KNOWN_MEASUREMENTS = 100_000;
