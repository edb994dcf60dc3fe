import type { HandlerContext } from "@connectrpc/connect";
import {
  UptimeService,
  type ExitRunRequest,
  type FailRunRequest,
  type SendHeartbeatRequest,
  type StartRunRequest,
} from "../../gen/vigil/v1/uptime_pb.js";
import type { UptimeDeps } from "./deps.js";
import { bind, type Feature, type ServiceBinding } from "../shared/feature.js";
import { badRequest, notFound } from "../shared/errors.js";
import { unlessProjectGone } from "../shared/gone.js";
import { DAY_MS } from "../shared/time.js";
import { validate } from "../shared/validate.js";
import { createUptimeActivities, type UptimeActivities } from "./activities.js";
import { HeartbeatWriter, recordRunSignal, type RunSignal } from "./heartbeats.js";
import { pingService, type RecordSignal } from "./ping.js";
import { listRunsPage, runMessage } from "./runs.js";
import { nextRuns } from "./schedule.js";
import type { IncidentDeps, IncidentListener } from "./incidents.js";
import { createManualIncident, postIncidentUpdate } from "./manual.js";
import {
  createMaintenance,
  deleteMaintenance,
  listMaintenances,
  maintenanceById,
  maintenanceMonitorIds,
  updateMaintenance,
  type MaintenanceHooks,
} from "./maintenance.js";
import type { MaintenanceRow } from "./maintenance-model.js";
import { MaintenanceTimer } from "./maintenance-timer.js";
import { UptimeMetrics } from "./metrics.js";
import { listMonitorsPage, monitorListSchema } from "./monitor-list.js";
import { createMonitor, deleteMonitor, pauseMonitor, resumeMonitor, updateMonitor } from "./monitors.js";
import * as s from "./requests.js";
import { heartbeatFigures, history, timeFigures, uptime24h } from "./stats.js";
import {
  bucketMessage,
  incidentMessage,
  incidentUpdateMessage,
  maintenanceMessage,
  monitorMessage,
  statsMessage,
  toHeartbeat,
} from "./messages.js";
import * as store from "./store.js";
import type { MonitorRow } from "./store.js";
import { EmbeddedScheduler } from "./scheduler.js";
import { TemporalDeadlineRunner } from "./temporal-runner.js";
import type { DeadlineChange, DeadlineRunner, DeadlineScanHooks } from "./wake.js";

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
  /** What opening and resolving incidents takes (incidents.ts): alerts' monitors change through it too. */
  incidents: IncidentDeps;
  /** Temporal mode: the deadline scan, which other features' due times ride on (alert evaluations). */
  deadlineScan?: DeadlineScanHooks;
}

/** `incidentListeners`: run inside the transaction that opens or resolves an incident (server/features.ts). */
export function createUptimeFeature(
  base: Omit<UptimeDeps, "incidentListeners" | "metrics">,
  incidentListeners: IncidentListener[],
): UptimeFeature {
  const deps: UptimeDeps = { ...base, incidentListeners, metrics: new UptimeMetrics(base.telemetry.registry) };
  const temporalRunner = deps.temporal ? new TemporalDeadlineRunner(deps, deps.temporal) : undefined;
  const runner: DeadlineRunner = temporalRunner ?? new EmbeddedScheduler(deps);
  const writer = new HeartbeatWriter(
    deps,
    (changes) => runner.changed(changes),
    (durations) =>
      void deps.runDurations
        ?.record(durations)
        .catch((err) => deps.log.warn({ err }, "recording run durations failed")),
  );
  const rawRetentionMs = deps.config.uptime.rawRetentionDays * DAY_MS;
  const record = signalsOf(deps, writer);
  // Maintenance windows' due times: the embedded runner's timer, or in Temporal mode the deadline
  // scan (activities.ts), which a new or earlier due time wakes.
  const changed = (changes: DeadlineChange[]) => runner.changed(changes);
  const maintenance = temporalRunner ? undefined : new MaintenanceTimer(deps, changed);
  const windowHooks: MaintenanceHooks = maintenance?.hooks ?? {
    changed,
    due: (_id, at) => {
      if (at !== null) temporalRunner?.dueTimeSet();
    },
  };

  return {
    name: "uptime",
    runner,
    writer,
    incidentListeners,
    // The scan's own transitions need no wake: it reads the next due time itself.
    activities: createUptimeActivities(deps, { changed, due: () => undefined }),
    incidents: deps,
    deadlineScan: temporalRunner,
    services: [
      uptimeService(deps, {
        writer,
        changed: (c) => runner.changed(c),
        rawRetentionMs,
        record,
        maintenance: windowHooks,
      }),
      pingService(deps, record),
    ],
    async start() {
      await runner.start();
      await maintenance?.start();
    },
    async stop() {
      await writer.drain();
      await maintenance?.stop();
      await runner.stop();
      // After the writer and the runner, which hand durations over: before the events feature's
      // ingestor (stopped after this feature) and the pool end, so none handed over is lost.
      await deps.runDurations?.drain();
    },
  };
}

// UptimeService handlers: authorize (project data: API key or member session), validate, call the
// domain code, map rows to messages.

interface UptimeContext {
  writer: HeartbeatWriter;
  changed: (changes: DeadlineChange[]) => void;
  rawRetentionMs: number;
  record: RecordSignal;
  /** The maintenance timer's hooks (its due times; the monitors' deadlines to the runner). */
  maintenance: MaintenanceHooks;
}

/**
 * A heartbeat's or run signal's work once the caller is authorized (SendHeartbeat, StartRun, FailRun,
 * ExitRun, and ping.ts's ping URLs): recordRunSignal (heartbeats.ts) validates and writes it.
 */
function signalsOf(deps: UptimeDeps, writer: HeartbeatWriter): RecordSignal {
  // Temporal mode: the least interval + grace (TEMPORAL_MIN_DEADLINE_MS); the embedded runner has none.
  const minDeadlineMs = deps.config.temporal?.minDeadlineMs ?? 0;
  return async (projectId, slug, signal, body, recheck) => {
    const at = deps.clock();
    // The project deleted meanwhile: answered as a request after the delete (401/404), not 500.
    const a = await unlessProjectGone(
      () => recordRunSignal(writer, { at, minDeadlineMs }, projectId, slug, signal, body),
      recheck,
    );
    return { data: { accepted: true, monitor: monitorMessage(a.monitor, at), statusChanged: a.statusChanged } };
  };
}

function uptimeService(deps: UptimeDeps, u: UptimeContext): ServiceBinding {
  const { db, auth, clock } = deps;
  const scope = (ctx: HandlerContext, projectId: string) => auth.project(ctx, projectId, "data");
  const heartbeatScope = (ctx: HandlerContext, projectId: string) => auth.project(ctx, projectId, "heartbeat");
  /**
   * Monitor and incident changes count as management writes; heartbeats have their own limit, which
   * the gate takes for an API key before the body is read (server/ingest-routes.ts).
   */
  const limited = async (ctx: HandlerContext, projectId: string, limit: "writes" | "heartbeats") => {
    // Heartbeats (and, later, run signals) are access `heartbeat`: ping keys too (src/auth).
    const s = await (limit === "heartbeats" ? heartbeatScope(ctx, projectId) : scope(ctx, projectId));
    if (limit === "writes" || s.principal.kind === "session") await deps.limits.take(limit, s.projectId);
    return s;
  };
  /** Incidents as records: their monitors and updates read at once. */
  const incidentMessages = async (rows: store.IncidentRow[]) => {
    const details = await store.incidentDetails(db, rows);
    return rows.map((r) => incidentMessage(r, details.get(r.id) ?? { monitorIds: [], updates: [] }));
  };
  const monitor = async (projectId: string, id: string): Promise<MonitorRow> => {
    const m = await store.monitorById(db, projectId, id);
    if (!m) throw notFound("monitor");
    return m;
  };

  // Temporal mode: the least interval + grace (TEMPORAL_MIN_DEADLINE_MS); the embedded runner has none.
  const minDeadlineMs = deps.config.temporal?.minDeadlineMs ?? 0;

  /** Maintenance windows as records: their monitor ids read at once. */
  const maintenanceMessages = async (rows: MaintenanceRow[]) => {
    const ids = await maintenanceMonitorIds(
      db,
      rows.map((r) => r.id),
    );
    return rows.map((r) => maintenanceMessage(r, ids.get(r.id) ?? []));
  };
  const windowFields = (req: {
    title?: string;
    description?: string;
    monitorIds: string[];
    startsAt?: string;
    endsAt?: string;
    schedule?: { cron: string; timezone?: string; durationMs: bigint };
  }) =>
    s.present({
      title: req.title,
      description: req.description,
      monitorIds: req.monitorIds.length ? req.monitorIds : undefined,
      startsAt: req.startsAt,
      endsAt: req.endsAt,
      schedule: req.schedule
        ? s.present({
            cron: req.schedule.cron,
            timezone: req.schedule.timezone,
            durationMs: Number(req.schedule.durationMs),
          })
        : undefined,
    });

  /** A heartbeat or run signal: authorized (access `heartbeat`: ping keys too), then recorded. */
  const signal = async (
    ctx: HandlerContext,
    req: SendHeartbeatRequest | StartRunRequest | FailRunRequest | ExitRunRequest,
    kind: RunSignal,
  ) => {
    const { projectId } = await limited(ctx, req.projectId, "heartbeats");
    return u.record(projectId, req.monitorSlug, kind, s.signalBody(req), () => heartbeatScope(ctx, req.projectId));
  };

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
        return signal(ctx, req, "heartbeat");
      },
      async startRun(req, ctx) {
        return signal(ctx, req, "start");
      },
      async failRun(req, ctx) {
        return signal(ctx, req, "fail");
      },
      async exitRun(req, ctx) {
        return signal(ctx, req, { exit: req.code });
      },
      async getMonitorSchedule(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.scheduleQuerySchema, s.present({ count: req.count }));
        const m = await monitor(projectId, req.monitorId);
        const schedule = store.scheduleOf(m);
        // An interval monitor has no schedule resource: 404, as an unknown one (docs/uptime.md).
        if (!schedule) throw notFound("schedule (this monitor has expectedIntervalMs, not a schedule)");
        return {
          data: {
            cron: schedule.cron,
            timezone: schedule.timezone,
            next: nextRuns(schedule, clock().getTime(), q.count).map((t) => new Date(t).toISOString()),
          },
        };
      },
      async listRuns(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(
          s.runListSchema,
          s.present({ limit: req.limit, cursor: req.cursor === "" ? undefined : req.cursor }),
        );
        const m = await monitor(projectId, req.monitorId);
        const page = await listRunsPage(db, m.id, q);
        return {
          data: page.rows.map(runMessage),
          pagination: { nextCursor: page.nextCursor, hasMore: page.hasMore },
        };
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
        return { data: await incidentMessages(await store.listIncidents(db, m.id, q.limit)) };
      },
      async listProjectIncidents(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const q = validate(s.incidentListSchema, s.present({ limit: req.limit }));
        return { data: await incidentMessages(await store.listProjectIncidents(db, projectId, q.limit)) };
      },
      async getIncident(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const row = await store.incidentById(db, projectId, req.incidentId);
        if (!row) throw notFound("incident");
        return { data: (await incidentMessages([row]))[0] };
      },
      // A manual incident (decisions.md "Status communication"): a management write, like PATCH incident.
      async createIncident(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(
          s.createIncidentSchema,
          s.present({
            title: req.title,
            description: req.description,
            impact: req.impact,
            monitorIds: req.monitorIds,
            status: req.status,
            message: req.message,
          }),
        );
        const row = await unlessProjectGone(
          () => createManualIncident(deps, projectId, input, clock()),
          () => scope(ctx, req.projectId),
        );
        return { data: (await incidentMessages([row]))[0] };
      },
      async updateIncident(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.incidentPatchSchema, s.present({ title: req.title, description: req.description }));
        const existing = await store.incidentById(db, projectId, req.incidentId);
        if (!existing) throw notFound("incident");
        // A manual incident's title is what pages and notifications call it: it can change, not go.
        if (existing.kind === "manual" && input.title === "")
          throw badRequest("a manual incident keeps a title", [{ field: "title", message: "must not be empty" }]);
        const row = await store.patchIncident(db, projectId, req.incidentId, input, clock());
        if (!row) throw notFound("incident");
        return { data: (await incidentMessages([row]))[0] };
      },
      // Incident updates (decisions.md: Status pages, "member or above"): the access of the other
      // incident routes (an API key of the project or any member's session); posting counts as a
      // management write, like PATCH incident. A manual incident's update may carry its status.
      async createIncidentUpdate(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.incidentUpdateSchema, s.present({ message: req.message, status: req.status }));
        const row = await postIncidentUpdate(deps, projectId, req.incidentId, input, clock());
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
      async createMaintenance(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const fields = windowFields(req);
        const input = validate(s.createMaintenanceSchema, { monitorIds: [], ...fields });
        const row = await unlessProjectGone(
          () => createMaintenance(deps, u.maintenance, projectId, input),
          () => scope(ctx, req.projectId),
        );
        return { data: (await maintenanceMessages([row]))[0] };
      },
      async listMaintenances(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        return { data: await maintenanceMessages(await listMaintenances(db, projectId)) };
      },
      async getMaintenance(req, ctx) {
        const { projectId } = await scope(ctx, req.projectId);
        const row = await maintenanceById(db, projectId, req.maintenanceId);
        if (!row) throw notFound("maintenance window");
        return { data: (await maintenanceMessages([row]))[0] };
      },
      async updateMaintenance(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        const input = validate(s.updateMaintenanceSchema, windowFields(req));
        const row = await updateMaintenance(deps, u.maintenance, projectId, req.maintenanceId, input);
        return { data: (await maintenanceMessages([row]))[0] };
      },
      async deleteMaintenance(req, ctx) {
        const { projectId } = await limited(ctx, req.projectId, "writes");
        await deleteMaintenance(deps, u.maintenance, projectId, req.maintenanceId);
        return {};
      },
    },
    {
      rules: {
        createMaintenance: s.createMaintenanceSchema,
        updateMaintenance: s.updateMaintenanceSchema,
        createMonitor: s.createSchema,
        listMonitors: monitorListSchema,
        updateMonitor: s.updateSchema,
        sendHeartbeat: s.heartbeatSchema,
        startRun: s.runSignalSchema,
        failRun: s.runSignalSchema,
        exitRun: s.exitRunSchema,
        getMonitorSchedule: s.scheduleQuerySchema,
        listRuns: s.runListSchema,
        listHeartbeats: s.heartbeatListSchema,
        listIncidents: s.incidentListSchema,
        listProjectIncidents: s.incidentListSchema,
        createIncident: s.createIncidentSchema,
        updateIncident: s.incidentPatchSchema,
        createIncidentUpdate: s.incidentUpdateSchema,
        getMonitorStats: s.statsSchema,
        getMonitorHistory: s.historySchema,
      },
    },
  );
}
