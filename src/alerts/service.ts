import type { HandlerContext } from "@connectrpc/connect";
import { AlertService } from "../../gen/vigil/v1/alerts_pb.js";
import { bind, type Feature } from "../shared/feature.js";
import { badRequest, conflict, forbidden, notFound } from "../shared/errors.js";
import { unlessProjectGone } from "../shared/gone.js";
import { newId } from "../shared/ids.js";
import { isUniqueViolation } from "../shared/pg-errors.js";
import { holdProjectCap } from "../shared/project-cap.js";
import { validate } from "../shared/validate.js";
import { tx } from "../storage/db.js";
import { lockMonitorCreation, monitorCapReached, monitorCounts } from "../uptime/cap.js";
import { insertMonitor } from "../uptime/monitors.js";
import type { AlertDeps } from "./evaluator.js";
import { alertMessage, evaluationMessage, previewMessage } from "./messages.js";
import {
  evaluationAtOrAfter,
  evaluationTimes,
  INITIAL_STATE,
  MAX_PREVIEW_EVALUATIONS,
  offsetFor,
  preview,
} from "./model.js";
import type { Sample } from "./model.js";
import * as rq from "./requests.js";
import { previewSamples, sampleAt } from "./samples.js";
import { announceDue, AlertScheduler } from "./scheduler.js";
import { withAlertScan } from "./temporal.js";
import { SampleBatcher } from "./batch.js";
import { AlertMetrics } from "./metrics.js";
import type { UptimeActivities } from "../uptime/activities.js";
import * as store from "./store.js";

// Alerts (decisions.md: Alerts; docs/alerts.md): handlers authorize (as monitors: an API key or a
// member's session reads; an API key or an owner's or admin's session writes), validate
// (requests.ts), call the store and answer the record (messages.ts). Live evaluation is the
// scheduler's (worker role), through evaluator.ts.

/** Preview samples read at once where each evaluation is sampled on its own (samples.ts previewSamples). */
const PREVIEW_CONCURRENCY = 4;

export interface AlertsFeature extends Feature {
  /** Temporal mode: uptime's deadline-scan activities, the scan also running due alerts (temporal.ts). */
  deadlineActivities(uptime: UptimeActivities): UptimeActivities;
}

export function createAlertsFeature(deps: AlertDeps): AlertsFeature {
  const { db, auth, clock, limits } = deps;
  // Embedded runner only; with TEMPORAL_ADDRESS the deadline scan runs the evaluations (temporal.ts).
  // Live evaluations' samples, gathered per query (batch.ts); counted in vigil_alert_samples_total.
  const batcher = new SampleBatcher({ db, windows: deps.windows }, new AlertMetrics(deps.telemetry.registry));
  const scheduler = deps.temporal ? undefined : new AlertScheduler(deps, batcher.sample);
  // A due time set or moved: the embedded scheduler's heap, or in Temporal mode a wake of the deadline
  // scan, which could be sleeping its idle time (no alert existed at its last pass).
  const due = (projectId: string, id: string, at: number | null) => {
    scheduler?.changed(projectId, id, at);
    if (at !== null) deps.deadlineScan?.dueTimeSet();
  };
  // A lost wake (Temporal away at that moment): the reconciler finds the overdue evaluation.
  deps.deadlineScan?.watchDue(async (before) => (await store.dueAlerts(db, before, 1)).length > 0);
  const read = (ctx: HandlerContext, projectId: string) => auth.project(ctx, projectId, "data");
  const write = async (ctx: HandlerContext, projectId: string) => {
    const s = await auth.project(ctx, projectId, "data");
    if (s.principal.kind === "session" && s.role === "member")
      throw forbidden("this action needs the admin role in the project");
    await limits.take("writes", s.projectId);
    return s;
  };
  const alertOr404 = async (projectId: string, id: string) => {
    const a = await store.alertById(db, projectId, id);
    if (!a) throw notFound("alert");
    return a;
  };
  const slugTaken = (slug: string | undefined) =>
    conflict(`a monitor with slug '${slug}' already exists in this project`, [
      { field: "slug", message: "already used" },
    ]);

  return {
    name: "alerts",
    services: [
      bind(
        AlertService,
        {
          async createAlert(req, ctx) {
            const { projectId } = await write(ctx, req.projectId);
            const input = validate(rq.createSchema, rq.plainRule(req));
            const now = clock();
            const id = newId("alr");
            const offsetMs = offsetFor(id, input.everyMs);
            const nextAt = new Date(evaluationAtOrAfter(input.everyMs, offsetMs, now.getTime()));
            await unlessProjectGone(
              () =>
                tx(db, async (c) => {
                  await holdProjectCap(c, projectId, {
                    what: "alerts",
                    max: deps.config.alerts.maxPerProject,
                    countSql: store.COUNT_SQL,
                    field: "name",
                  });
                  await lockMonitorCreation(c, [projectId]);
                  const maxMonitors = deps.config.uptime.maxMonitorsPerProject;
                  if (((await monitorCounts(c, [projectId])).get(projectId) ?? 0) >= maxMonitors)
                    throw monitorCapReached(maxMonitors);
                  const monitor = await insertMonitor(
                    c,
                    projectId,
                    {
                      name: input.name,
                      slug: input.slug,
                      type: "custom",
                      expectedIntervalMs: input.everyMs,
                      gracePeriodMs: 0,
                      failureTolerance: 0,
                      metadata: {},
                      tags: {},
                    },
                    now,
                  );
                  await store.insertAlert(c, {
                    ...input,
                    id,
                    projectId,
                    monitorId: monitor.id,
                    offsetMs,
                    state: INITIAL_STATE,
                    nextAt,
                    now,
                  });
                  await announceDue(c, projectId, id, nextAt);
                }),
              () => read(ctx, req.projectId),
            );
            due(projectId, id, nextAt.getTime());
            return { data: alertMessage(await alertOr404(projectId, id), clock()) };
          },
          async listAlerts(req, ctx) {
            const { projectId } = await read(ctx, req.projectId);
            const q = validate(rq.listSchema, { limit: req.limit, cursor: req.cursor || undefined });
            const after = q.cursor === undefined ? undefined : rq.alertCursor.read(q.cursor);
            const rows = await store.listAlerts(db, projectId, q.limit + 1, after);
            const hasMore = rows.length > q.limit;
            const page = rows.slice(0, q.limit);
            const last = page.at(-1);
            const now = clock();
            return {
              data: page.map((r) => alertMessage(r, now)),
              pagination: {
                nextCursor: hasMore && last ? rq.alertCursor.encode({ at: last.cursor_at, id: last.id }) : undefined,
                hasMore,
              },
            };
          },
          async getAlert(req, ctx) {
            const { projectId } = await read(ctx, req.projectId);
            return { data: alertMessage(await alertOr404(projectId, req.alertId), clock()) };
          },
          async updateAlert(req, ctx) {
            const { projectId } = await write(ctx, req.projectId);
            const input = validate(rq.updateSchema, rq.plainRule(req));
            const now = clock();
            let nextAt: Date | undefined;
            try {
              await tx(db, async (c) => {
                const locked = await store.lockAlert(c, projectId, req.alertId);
                if (!locked) throw notFound("alert");
                const { alert } = locked;
                if (input.name !== undefined || input.slug !== undefined)
                  await c.query(
                    "UPDATE monitors SET name = COALESCE($2, name), slug = COALESCE($3, slug), updated_at = $4 WHERE id = $1",
                    [alert.monitor_id, input.name ?? null, input.slug ?? null, now],
                  );
                const everyMs = input.everyMs ?? alert.every_ms;
                const offsetMs = everyMs === alert.every_ms ? alert.evaluation_offset_ms : offsetFor(alert.id, everyMs);
                nextAt =
                  everyMs === alert.every_ms
                    ? alert.next_at
                    : new Date(evaluationAtOrAfter(everyMs, offsetMs, now.getTime()));
                await store.updateRule(
                  c,
                  alert.id,
                  {
                    query: input.query ?? alert.query,
                    condition: input.condition ?? alert.condition,
                    windowMs: input.windowMs ?? alert.window_ms,
                    everyMs,
                    forMs: input.forMs ?? alert.for_ms,
                    resolve: input.resolve === undefined ? alert.resolve : input.resolve,
                    noData: input.noData ?? alert.no_data,
                    minSamples: input.minSamples ?? alert.min_samples,
                  },
                  offsetMs,
                  alert.state,
                  nextAt,
                  now,
                );
                await announceDue(c, projectId, alert.id, nextAt);
              });
            } catch (err) {
              if (isUniqueViolation(err)) throw slugTaken(input.slug);
              throw err;
            }
            if (nextAt) due(projectId, req.alertId, nextAt.getTime());
            return { data: alertMessage(await alertOr404(projectId, req.alertId), clock()) };
          },
          async deleteAlert(req, ctx) {
            const { projectId } = await write(ctx, req.projectId);
            const gone = await tx(db, (c) => store.deleteAlert(c, projectId, req.alertId));
            if (!gone) throw notFound("alert");
            due(projectId, req.alertId, null);
            return {};
          },
          async listAlertEvaluations(req, ctx) {
            const { projectId } = await read(ctx, req.projectId);
            const q = validate(rq.evaluationListSchema, { limit: req.limit, cursor: req.cursor || undefined });
            const before = q.cursor === undefined ? undefined : rq.evaluationCursor.read(q.cursor).at;
            const a = await alertOr404(projectId, req.alertId);
            const rows = await store.listEvaluations(db, a.id, q.limit + 1, before);
            const hasMore = rows.length > q.limit;
            const page = rows.slice(0, q.limit);
            const last = page.at(-1);
            return {
              data: page.map((e) => evaluationMessage({ at: e.at.getTime(), value: e.value, state: e.state })),
              pagination: {
                nextCursor: hasMore && last ? rq.evaluationCursor.encode({ at: last.at.toISOString() }) : undefined,
                hasMore,
              },
            };
          },
          async previewAlert(req, ctx) {
            const { projectId } = await read(ctx, req.projectId);
            const input = validate(rq.previewSchema, rq.plainRule(req));
            const times = evaluationTimes(
              input.everyMs,
              input.evaluationOffsetMs ?? 0,
              input.time.start.getTime(),
              input.time.end.getTime(),
            );
            if ("tooMany" in times)
              throw badRequest(
                `the window holds ${times.tooMany} evaluations at this cadence; at most ${MAX_PREVIEW_EVALUATIONS}`,
                [{ field: "time", message: `at most ${MAX_PREVIEW_EVALUATIONS} evaluations` }],
              );
            const src = { db, windows: deps.windows };
            const samples = new Map<number, Sample>();
            // A few statements for the whole preview where an exact plan exists, else one sample per evaluation.
            const batch = await previewSamples(src, projectId, input.query, times.times, input.windowMs);
            if (batch) times.times.forEach((at, k) => samples.set(at, batch[k]));
            let next = batch ? times.times.length : 0;
            const worker = async () => {
              while (next < times.times.length) {
                const at = times.times[next++];
                samples.set(at, await sampleAt(src, projectId, input.query, at, input.windowMs));
              }
            };
            await Promise.all(Array.from({ length: PREVIEW_CONCURRENCY }, worker));
            const p = preview(input, (at) => samples.get(at)!, times.times);
            return { data: previewMessage(p) };
          },
        },
        {
          rules: {
            createAlert: rq.createSchema,
            listAlerts: rq.listSchema,
            updateAlert: rq.updateSchema,
            listAlertEvaluations: rq.evaluationListSchema,
            previewAlert: rq.previewSchema,
          },
        },
      ),
    ],
    deadlineActivities: (uptime) => withAlertScan(deps, uptime, batcher.sample),
    async start() {
      await scheduler?.start();
    },
    async stop() {
      await scheduler?.stop();
    },
  };
}
