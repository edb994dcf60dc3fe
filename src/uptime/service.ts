import type { HandlerContext } from "@connectrpc/connect";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import type { UptimeDeps } from "./deps.js";
import { notFound } from "../shared/errors.js";
import { unlessProjectGone } from "../shared/gone.js";
import { validate } from "../shared/validate.js";
import type { HeartbeatWriter } from "./heartbeats.js";
import { listMonitorsPage } from "./monitor-list.js";
import { createMonitor, deleteMonitor, pauseMonitor, resumeMonitor, updateMonitor } from "./monitors.js";
import * as s from "./schemas.js";
import { heartbeatFigures, history, timeFigures, uptime24h } from "./stats.js";
import { bucketMessage, incidentMessage, monitorMessage, num, statsMessage } from "./messages.js";
import { monitorById, toHeartbeat, type HeartbeatRow, type IncidentRow, type MonitorRow } from "./store.js";
import type { DeadlineChange } from "./wake.js";

// UptimeService handlers: authorize (project data: API key or member session), validate, call the
// domain code, map rows to messages.

export interface UptimeContext {
  writer: HeartbeatWriter;
  changed: (changes: DeadlineChange[]) => void;
  rawRetentionMs: number;
}

// Proto `optional` fields and unset messages arrive as undefined; zod sees exactly what was sent.
const present = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

export function uptimeService(deps: UptimeDeps, u: UptimeContext) {
  const { db, auth, clock } = deps;
  const scope = (ctx: HandlerContext, projectId: string) => auth.project(ctx, projectId, "data");
  /** Monitor and incident changes count as management writes; heartbeats have their own limit. */
  const limited = async (ctx: HandlerContext, projectId: string, limit: "writes" | "heartbeats") => {
    const s = await scope(ctx, projectId);
    await deps.limits.take(limit, s.projectId);
    return s;
  };
  const monitor = async (projectId: string, id: string): Promise<MonitorRow> => {
    const m = await monitorById(db, projectId, id);
    if (!m) throw notFound("monitor");
    return m;
  };

  // Temporal mode: the least interval + grace (TEMPORAL_MIN_DEADLINE_MS); the embedded runner has none.
  const minDeadlineMs = deps.config.temporal?.minDeadlineMs ?? 0;

  return {
    desc: UptimeService,
    impl: {
      async createMonitor(req: any, ctx: HandlerContext) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.createSchema, present({ name: req.name, slug: req.slug, type: req.type, expectedIntervalMs: num(req.expectedIntervalMs), gracePeriodMs: num(req.gracePeriodMs), metadata: req.metadata, tags: req.tags }));
        s.assertDeadlineFloor(input, minDeadlineMs);
        const row = await unlessProjectGone(() => createMonitor(deps, projectId, input), () => scope(ctx, req.projectId));
        return { data: monitorMessage(row, clock()) };
      },
      async listMonitors(req: any, ctx: HandlerContext) {
        const { projectId } = await scope(ctx, req.projectId);
        const page = await listMonitorsPage(db, projectId, { limit: req.limit, cursor: req.cursor });
        const now = clock();
        return { data: page.rows.map((m) => monitorMessage(m, now)), pagination: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
      },
      async getMonitorsOverview(req: any, ctx: HandlerContext) {
        const { projectId } = await scope(ctx, req.projectId);
        const r = await db.query<MonitorRow>("SELECT * FROM monitors WHERE project_id = $1 ORDER BY created_at, id", [projectId]);
        const now = clock();
        const up = await uptime24h(db, r.rows, now);
        return {
          data: r.rows.map((m) => ({ id: m.id, name: m.name, slug: m.slug, type: m.type, status: m.status, lastHeartbeatAt: m.last_heartbeat_at?.toISOString(), uptimePercentage24h: up.get(m.id) ?? 100 })),
        };
      },
      async getMonitor(req: any, ctx: HandlerContext) {
        const { projectId } = await scope(ctx, req.projectId);
        return { data: monitorMessage(await monitor(projectId, req.monitorId), clock()) };
      },
      async getMonitorStatus(req: any, ctx: HandlerContext) {
        const { projectId } = await scope(ctx, req.projectId);
        return { data: { status: (await monitor(projectId, req.monitorId)).status } };
      },
      async updateMonitor(req: any, ctx: HandlerContext) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.updateSchema, present({ name: req.name, slug: req.slug, type: req.type, expectedIntervalMs: num(req.expectedIntervalMs), gracePeriodMs: num(req.gracePeriodMs), metadata: req.metadata, tags: req.tags }));
        s.assertDeadlineFloor(input, minDeadlineMs);
        return { data: monitorMessage(await updateMonitor(deps, projectId, req.monitorId, input, u.changed), clock()) };
      },
      async deleteMonitor(req: any, ctx: HandlerContext) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        await deleteMonitor(deps, projectId, req.monitorId, u.changed);
        return {};
      },
      async pauseMonitor(req: any, ctx: HandlerContext) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        return { data: monitorMessage(await pauseMonitor(deps, projectId, req.monitorId, u.changed), clock()) };
      },
      async resumeMonitor(req: any, ctx: HandlerContext) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        return { data: monitorMessage(await resumeMonitor(deps, projectId, req.monitorId, u.changed), clock()) };
      },
      async sendHeartbeat(req: any, ctx: HandlerContext) {
        const { projectId } = await limited(ctx, req.projectId, "heartbeats");
        const input = validate(s.heartbeatSchema, present({ slug: req.monitorSlug, status: req.status, latencyMs: req.latencyMs, metadata: req.metadata, expectedIntervalMs: num(req.expectedIntervalMs), gracePeriodMs: num(req.gracePeriodMs) }));
        s.assertDeadlineFloor(input, minDeadlineMs);
        const at = clock();
        // The project deleted meanwhile: answered as a request after the delete (401/404), not 500.
        const a = await unlessProjectGone(() => u.writer.submit({ projectId, at, ...input, slug: input.slug }), () => scope(ctx, req.projectId));
        return { data: { accepted: true, monitor: monitorMessage(a.monitor, at), statusChanged: a.statusChanged } };
      },
      async listHeartbeats(req: any, ctx: HandlerContext) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.heartbeatListSchema, present({ from: req.from, to: req.to, limit: req.limit }));
        const m = await monitor(projectId, req.monitorId);
        const r = await db.query<HeartbeatRow>(
          `SELECT id, at, status, latency_ms, metadata FROM heartbeats WHERE monitor_id = $1 AND ($2::timestamptz IS NULL OR at >= $2) AND ($3::timestamptz IS NULL OR at <= $3)
            ORDER BY at DESC, id DESC LIMIT $4`,
          [m.id, q.from ?? null, q.to ?? null, q.limit],
        );
        return { data: r.rows.map(toHeartbeat) };
      },
      async listIncidents(req: any, ctx: HandlerContext) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.incidentListSchema, present({ limit: req.limit }));
        const m = await monitor(projectId, req.monitorId);
        const r = await db.query<IncidentRow>("SELECT * FROM incidents WHERE monitor_id = $1 ORDER BY started_at DESC, id DESC LIMIT $2", [m.id, q.limit]);
        return { data: r.rows.map(incidentMessage) };
      },
      async updateIncident(req: any, ctx: HandlerContext) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.incidentPatchSchema, present({ title: req.title, description: req.description }));
        const r = await db.query<IncidentRow>(
          `UPDATE incidents SET title = CASE WHEN $3::boolean THEN NULLIF($4, '') ELSE title END,
                  description = CASE WHEN $5::boolean THEN NULLIF($6, '') ELSE description END, updated_at = $7
            WHERE id = $1 AND project_id = $2 RETURNING *`,
          [req.incidentId, projectId, input.title !== undefined, input.title ?? null, input.description !== undefined, input.description ?? null, clock()],
        );
        if (!r.rows[0]) throw notFound("incident");
        return { data: incidentMessage(r.rows[0]) };
      },
      async getMonitorStats(req: any, ctx: HandlerContext) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.statsSchema, present({ period: req.period, from: req.from, to: req.to }));
        const now = clock();
        const { from, to } = s.statsWindow(q, now);
        const m = await monitor(projectId, req.monitorId);
        const [t, h] = await Promise.all([timeFigures(db, m, from, to, now), heartbeatFigures(db, m.id, from, to, now, u.rawRetentionMs)]);
        return { data: statsMessage(t, h, m, from, to) };
      },
      async getMonitorHistory(req: any, ctx: HandlerContext) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.historySchema, present({ window: req.window }));
        const m = await monitor(projectId, req.monitorId);
        return { data: { window: q.window, buckets: (await history(db, m, q.window, clock())).map(bucketMessage) } };
      },
    },
  };
}
