import type { HandlerContext } from "@connectrpc/connect";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import type { UptimeDeps } from "./deps.js";
import { bind, type Feature, type ServiceBinding } from "../shared/feature.js";
import { conflict, notFound } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import { unlessProjectGone } from "../shared/gone.js";
import { DAY_MS } from "../shared/time.js";
import { validate } from "../shared/validate.js";
import { createUptimeActivities, type UptimeActivities } from "./activities.js";
import { HeartbeatWriter } from "./heartbeats.js";
import type { IncidentListener } from "./incidents.js";
import { UptimeMetrics } from "./metrics.js";
import { listMonitorsPage, monitorListSchema } from "./monitor-list.js";
import { createMonitor, deleteMonitor, pauseMonitor, resumeMonitor, updateMonitor } from "./monitors.js";
import * as s from "./requests.js";
import { heartbeatFigures, history, timeFigures, uptime24h } from "./stats.js";
import {
  bucketMessage,
  incidentMessage,
  incidentUpdateMessage,
  monitorMessage,
  statsMessage,
  toHeartbeat,
} from "./messages.js";
import * as store from "./store.js";
import type { MonitorRow } from "./store.js";
import { EmbeddedScheduler } from "./scheduler.js";
import { TemporalDeadlineRunner } from "./temporal-runner.js";
import type { DeadlineChange, DeadlineRunner } from "./wake.js";

// The uptime feature: its service, the heartbeat writer, and the deadline runner — Temporal when
// TEMPORAL_ADDRESS is set, else the embedded scheduler. Background work (timers, worker, pruning of
// raw heartbeats past their retention) runs where ROLE is `all` or `worker`.

export interface UptimeFeature extends Feature {
  runner: DeadlineRunner;
  writer: HeartbeatWriter;
  /** The listeners of incident transitions this feature was wired with (the same list). */
  incidentListeners: IncidentListener[];
  /** The activities the Temporal worker serves on the deadlines and uptime queues (server/features.ts). */
  activities: UptimeActivities;
}

/** `incidentListeners`: run inside the transaction that opens or resolves an incident (server/features.ts). */
export function createUptimeFeature(
  base: Omit<UptimeDeps, "incidentListeners" | "metrics">,
  incidentListeners: IncidentListener[],
): UptimeFeature {
  const deps: UptimeDeps = { ...base, incidentListeners, metrics: new UptimeMetrics(base.telemetry.registry) };
  const runner: DeadlineRunner = deps.temporal
    ? new TemporalDeadlineRunner(deps, deps.temporal)
    : new EmbeddedScheduler(deps);
  const writer = new HeartbeatWriter(deps, (changes) => runner.changed(changes));
  const rawRetentionMs = deps.config.uptime.rawRetentionDays * DAY_MS;

  return {
    name: "uptime",
    runner,
    writer,
    incidentListeners,
    activities: createUptimeActivities(deps),
    services: [uptimeService(deps, { writer, changed: (c) => runner.changed(c), rawRetentionMs })],
    async start() {
      await runner.start();
    },
    async stop() {
      await writer.drain();
      await runner.stop();
    },
  };
}

// UptimeService handlers: authorize (project data: API key or member session), validate, call the
// domain code, map rows to messages.

interface UptimeContext {
  writer: HeartbeatWriter;
  changed: (changes: DeadlineChange[]) => void;
  rawRetentionMs: number;
}

function uptimeService(deps: UptimeDeps, u: UptimeContext): ServiceBinding {
  const { db, auth, clock } = deps;
  const scope = (ctx: HandlerContext, projectId: string) => auth.project(ctx, projectId, "data");
  /**
   * Monitor and incident changes count as management writes; heartbeats have their own limit, which
   * the gate takes for an API key before the body is read (server/ingest-routes.ts).
   */
  const limited = async (ctx: HandlerContext, projectId: string, limit: "writes" | "heartbeats") => {
    const s = await scope(ctx, projectId);
    if (limit === "writes" || s.principal.kind === "session") await deps.limits.take(limit, s.projectId);
    return s;
  };
  const monitor = async (projectId: string, id: string): Promise<MonitorRow> => {
    const m = await store.monitorById(db, projectId, id);
    if (!m) throw notFound("monitor");
    return m;
  };

  // Temporal mode: the least interval + grace (TEMPORAL_MIN_DEADLINE_MS); the embedded runner has none.
  const minDeadlineMs = deps.config.temporal?.minDeadlineMs ?? 0;

  return bind(
    UptimeService,
    {
      async createMonitor(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.createSchema, s.monitorFields(req));
        s.assertDeadlineFloor(input, minDeadlineMs);
        const row = await unlessProjectGone(
          () => createMonitor(deps, projectId, input),
          () => scope(ctx, req.projectId),
        );
        return { data: monitorMessage(row, clock()) };
      },
      async listMonitors(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const page = await listMonitorsPage(db, projectId, { limit: req.limit, cursor: req.cursor });
        const now = clock();
        return {
          data: page.rows.map((m) => monitorMessage(m, now)),
          pagination: { nextCursor: page.nextCursor, hasMore: page.hasMore },
        };
      },
      async getMonitorsOverview(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const monitors = await store.monitorsOfProject(db, projectId);
        const now = clock();
        const up = await uptime24h(db, monitors, now);
        return {
          data: monitors.map((m) => ({
            id: m.id,
            name: m.name,
            slug: m.slug,
            type: m.type,
            status: m.status,
            lastHeartbeatAt: m.last_heartbeat_at?.toISOString(),
            uptimePercentage24h: up.get(m.id) ?? undefined,
          })),
        };
      },
      async getMonitor(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        return { data: monitorMessage(await monitor(projectId, req.monitorId), clock()) };
      },
      async getMonitorStatus(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        return { data: { status: (await monitor(projectId, req.monitorId)).status } };
      },
      async updateMonitor(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.updateSchema, s.monitorFields(req));
        s.assertDeadlineFloor(input, minDeadlineMs);
        return { data: monitorMessage(await updateMonitor(deps, projectId, req.monitorId, input, u.changed), clock()) };
      },
      async deleteMonitor(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        await deleteMonitor(deps, projectId, req.monitorId, u.changed);
        return {};
      },
      async pauseMonitor(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        return { data: monitorMessage(await pauseMonitor(deps, projectId, req.monitorId, u.changed), clock()) };
      },
      async resumeMonitor(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        return { data: monitorMessage(await resumeMonitor(deps, projectId, req.monitorId, u.changed), clock()) };
      },
      async sendHeartbeat(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "heartbeats");
        const input = validate(
          s.heartbeatSchema,
          s.present({
            id: req.id,
            monitorSlug: req.monitorSlug,
            status: req.status,
            latencyMs: req.latencyMs,
            metadata: req.metadata,
            expectedIntervalMs: s.num(req.expectedIntervalMs),
            gracePeriodMs: s.num(req.gracePeriodMs),
          }),
        );
        s.assertDeadlineFloor(input, minDeadlineMs);
        const at = clock();
        // The project deleted meanwhile: answered as a request after the delete (401/404), not 500.
        const { id: clientId, monitorSlug: slug, ...fields } = input;
        const a = await unlessProjectGone(
          () => u.writer.submit({ projectId, at, ...fields, slug, clientId }),
          () => scope(ctx, req.projectId),
        );
        return { data: { accepted: true, monitor: monitorMessage(a.monitor, at), statusChanged: a.statusChanged } };
      },
      async listHeartbeats(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.heartbeatListSchema, s.present({ from: req.from, to: req.to, limit: req.limit }));
        const m = await monitor(projectId, req.monitorId);
        return { data: (await store.listHeartbeats(db, m.id, q)).map(toHeartbeat) };
      },
      async listIncidents(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.incidentListSchema, s.present({ limit: req.limit }));
        const m = await monitor(projectId, req.monitorId);
        return { data: (await store.listIncidents(db, m.id, q.limit)).map(incidentMessage) };
      },
      async updateIncident(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.incidentPatchSchema, s.present({ title: req.title, description: req.description }));
        const row = await store.patchIncident(db, projectId, req.incidentId, input, clock());
        if (!row) throw notFound("incident");
        return { data: incidentMessage(row) };
      },
      // Incident updates (decisions.md: Status pages, "member or above"): the access of the other
      // incident routes (an API key of the project or any member's session); posting counts as a
      // management write, like PATCH incident.
      async createIncidentUpdate(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.incidentUpdateSchema, s.present({ message: req.message }));
        const row = await store.addIncidentUpdate(db, {
          id: newId("iup"),
          projectId,
          incidentId: req.incidentId,
          message: input.message,
          now: clock(),
        });
        if (row === "missing") throw notFound("incident");
        if (row === "full")
          throw conflict(`this incident has reached its limit of ${store.MAX_INCIDENT_UPDATES} updates`, [
            { field: "message", message: `at most ${store.MAX_INCIDENT_UPDATES} updates per incident` },
          ]);
        return { data: incidentUpdateMessage(row) };
      },
      async listIncidentUpdates(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const rows = await store.listIncidentUpdates(db, projectId, req.incidentId);
        if (!rows) throw notFound("incident");
        return { data: rows.map(incidentUpdateMessage) };
      },
      async getMonitorStats(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.statsSchema, s.present({ period: req.period, from: req.from, to: req.to }));
        const now = clock();
        const { from, to } = s.statsWindow(q, now);
        const m = await monitor(projectId, req.monitorId);
        const [t, h] = await Promise.all([
          timeFigures(db, m, from, to, now),
          heartbeatFigures(db, m.id, from, to, now, u.rawRetentionMs),
        ]);
        return { data: statsMessage(t, h, m, from, to) };
      },
      async getMonitorHistory(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.historySchema, s.present({ window: req.window }));
        const m = await monitor(projectId, req.monitorId);
        return { data: { window: q.window, buckets: (await history(db, m, q.window, clock())).map(bucketMessage) } };
      },
    },
    {
      rules: {
        createMonitor: s.createSchema,
        listMonitors: monitorListSchema,
        updateMonitor: s.updateSchema,
        sendHeartbeat: s.heartbeatSchema,
        listHeartbeats: s.heartbeatListSchema,
        listIncidents: s.incidentListSchema,
        updateIncident: s.incidentPatchSchema,
        createIncidentUpdate: s.incidentUpdateSchema,
        getMonitorStats: s.statsSchema,
        getMonitorHistory: s.historySchema,
      },
    },
  );
}
