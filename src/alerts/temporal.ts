import type { UptimeActivities } from "../uptime/activities.js";
import type { Sampler } from "./batch.js";
import { runDue, type AlertDeps } from "./evaluator.js";
import { dueAlerts } from "./store.js";

// Temporal mode (TEMPORAL_ADDRESS): alert evaluations ride on uptime's deadline scan
// (workflows/deadlines.ts), ONE workflow for the deployment, not a workflow or a timer per rule.
// Its local activity scanDeadlines() is wrapped here: after uptime's scan it runs the alerts due now
// (oldest due first, a batch at a time, config.alerts.evaluationConcurrency at once, their samples
// gathered per query by the batcher (batch.ts), each claimed in PostgreSQL as in the embedded runner:
// evaluator.ts) and answers the earlier of the next monitor deadline and the next alert due time. While
// any alert exists the scan also comes back at least every POLL_MS, so that an alert created or
// changed on any node is seen without a signal: Temporal's load is then at most one scan per POLL_MS
// (and never more than one per TEMPORAL_SCAN_GAP_MS), whatever the number of rules and their cadence.

/** Alerts evaluated per scan (a full batch: the scan runs again at once). */
const BATCH = 100;
/** While alerts exist, the scan comes back at least this often. */
const POLL_MS = 1000;

/** uptime's activities with the deadline scan also running the due alert evaluations. */
export function withAlertScan(deps: AlertDeps, uptime: UptimeActivities, sample: Sampler): UptimeActivities {
  return {
    ...uptime,
    async scanDeadlines() {
      const r = await uptime.scanDeadlines();
      const now = deps.clock().getTime();
      const due = await dueAlerts(deps.db, new Date(now), BATCH);
      let next = 0;
      const worker = async () => {
        while (next < due.length) {
          const a = due[next++];
          // One alert's failure (its project deleted meanwhile, an outage) must not hold up the scan:
          // it stays due and is retried by the next scan.
          await runDue(deps, a.project_id, a.id, now, sample).catch((err: unknown) =>
            deps.log.warn({ err, alertId: a.id }, "alert evaluation failed; retried by the next scan"),
          );
        }
      };
      await Promise.all(Array.from({ length: deps.config.alerts.evaluationConcurrency }, worker));
      if (due.length === BATCH) return { ...r, more: true, sleepMs: 0 };
      const soonest = await dueAlerts(deps.db, new Date(8.64e15), 1);
      if (!soonest.length) return r;
      const alertIn = Math.min(POLL_MS, Math.max(0, soonest[0].next_at.getTime() - deps.clock().getTime()));
      return { ...r, sleepMs: r.sleepMs === null ? alertIn : Math.min(r.sleepMs, alertIn) };
    },
  };
}
