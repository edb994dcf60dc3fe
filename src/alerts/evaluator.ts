import type { Deps } from "../platform/deps.js";
import type { WindowQueries } from "../analytics/service.js";
import { tx } from "../storage/db.js";
import { openIncidents, resolveIncidents, type IncidentDeps } from "../uptime/incidents.js";
import type { DeadlineScanHooks } from "../uptime/wake.js";
import {
  evaluate,
  evaluationAtOrAfter,
  inMaintenance,
  monitorStatusOf,
  withMonitor,
  type DecisionRule,
  type EvaluationState,
} from "./model.js";
import { sampleAt } from "./samples.js";
import type { Sampler } from "./batch.js";
import { storedQuery } from "./requests.js";
import { alertById, lockAlert, recordEvaluation, saveState, setMonitorStatus, type AlertRow } from "./store.js";

// Live evaluation: the due evaluations of one alert, oldest first, each applied in ONE transaction
// that locks the alert's monitor and the alert, claims the evaluation (the alert's next_at must still
// be this time; the (alert, at) row is inserted there), stores the state it leads to and opens or
// resolves the incident through uptime's incident code (incidents.ts: incident.started /
// incident.recovered to every webhook target, exactly once per transition). Any number of nodes may
// run this for the same alert: one of them applies each time, the others find it done.

export type AlertDeps = Pick<
  Deps,
  "db" | "log" | "clock" | "config" | "auth" | "limits" | "background" | "notifications" | "temporal" | "telemetry"
> & {
  windows: WindowQueries;
  incidents: IncidentDeps;
  /** Temporal mode: uptime's deadline scan, which runs the evaluations (temporal.ts). */
  deadlineScan?: DeadlineScanHooks;
};

/** Late evaluations caught up after downtime, at most (older due times are skipped). */
const MAX_CATCH_UP = 1000;

function ruleOf(r: AlertRow): DecisionRule {
  return { condition: r.condition, forMs: r.for_ms, resolve: r.resolve, noData: r.no_data, minSamples: r.min_samples };
}

/**
 * Runs the alert's evaluations due at or before `now`, oldest first. Answers the next due time, or
 * null when the alert is gone.
 */
export async function runDue(
  deps: AlertDeps,
  projectId: string,
  id: string,
  now: number,
  sample: Sampler = (p, q, at, w) => sampleAt({ db: deps.db, windows: deps.windows }, p, q, at, w),
): Promise<number | null> {
  let row = await alertById(deps.db, projectId, id);
  while (row) {
    let at = row.next_at.getTime();
    if (at > now) return at;
    // After a long downtime: the last MAX_CATCH_UP due times only.
    const oldest = now - (MAX_CATCH_UP - 1) * row.every_ms;
    if (at < oldest) at = evaluationAtOrAfter(row.every_ms, row.evaluation_offset_ms, oldest);
    // Through the batcher (batch.ts) in the runners: shared with the other evaluations due together.
    const taken = await sample(projectId, storedQuery(row.query), at, row.window_ms);
    const sampled = row;
    const next = await tx(deps.db, async (c) => {
      const locked = await lockAlert(c, projectId, id);
      if (!locked) return null;
      const { alert, monitor } = locked;
      // Another node applied it, or the rule changed meanwhile: read again.
      if (
        alert.next_at.getTime() !== sampled.next_at.getTime() ||
        alert.updated_at.getTime() !== sampled.updated_at.getTime()
      )
        return alert;
      const nowDate = deps.clock();
      const nextAt = new Date(at + alert.every_ms);
      const resumedAt = monitor.resumed_at?.getTime() ?? null;
      const state: EvaluationState = withMonitor(alert.state, { status: monitor.status, resumedAt }, at);
      // Paused (or a due time from before the resume): no evaluation.
      if (monitor.status === "paused" || (resumedAt !== null && at <= resumedAt)) {
        await saveState(c, id, state, nextAt, nowDate);
        return { ...alert, next_at: nextAt, updated_at: nowDate, state };
      }
      const out = inMaintenance(evaluate(ruleOf(alert), state, taken, at), {
        inMaintenance: monitor.in_maintenance,
        maintenanceEndedAt: monitor.maintenance_ended_at?.getTime() ?? null,
      });
      if (out.evaluation && !(await recordEvaluation(c, id, projectId, out.evaluation))) {
        await saveState(c, id, state, nextAt, nowDate);
        return { ...alert, next_at: nextAt, updated_at: nowDate, state };
      }
      const status = monitorStatusOf(out.next);
      const m = await setMonitorStatus(
        c,
        monitor,
        status === "paused" ? monitor.status : status,
        new Date(at),
        nowDate,
      );
      if (out.resolveIncident)
        await resolveIncidents(
          deps.incidents,
          c,
          [{ monitor: m, endedAt: new Date(out.resolveIncident.endedAt) }],
          nowDate,
          {
            notify: true,
          },
        );
      // None in a maintenance window: deferred to its end (inMaintenance() in model.ts).
      if (out.openIncident)
        await openIncidents(
          deps.incidents,
          c,
          [{ monitor: m, startedAt: new Date(out.openIncident.startedAt) }],
          nowDate,
        );
      await saveState(c, id, out.next, nextAt, nowDate);
      // Due time → applied (vigil_scheduler_lag_seconds{kind="alert_evaluation"}).
      deps.telemetry.schedulerLag.observe({ kind: "alert_evaluation" }, Math.max(0, nowDate.getTime() - at) / 1000);
      return { ...alert, next_at: nextAt, updated_at: nowDate, state: out.next };
    });
    row = next ?? undefined;
  }
  return null;
}
