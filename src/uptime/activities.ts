import type { Deps } from "../shared/deps.js";
import { checkDeadlines } from "./detect.js";
import type { MonitorStatus } from "./model.js";

// Temporal activities of the uptime feature (registered on the uptime worker, src/temporal/worker.ts).

export interface MonitorCheck {
  /** The monitor's status after the check; "deleted" when it no longer exists. */
  status: MonitorStatus | "deleted";
  slug: string | null;
  /** The watch ends: the monitor was deleted or is paused (a resume wakes a new run). */
  stop: boolean;
  /** Sleep this long (ms, measured on Vigil's clock) before the next check; null: no deadline applies. */
  sleepMs: number | null;
}

/** v1's answer (workflows/uptime-v1.ts): an absolute time. */
export interface DeadlineCheckV1 {
  exists: boolean;
  nextCheckAt: number | null;
  opened: boolean;
}

export function createUptimeActivities(deps: Deps) {
  const check = async (monitorId: string) => {
    const now = deps.clock();
    const r = await checkDeadlines(deps, [monitorId], now);
    return { now, next: r.next.get(monitorId) ?? null, opened: r.opened.includes(monitorId), row: r.found.get(monitorId) };
  };
  return {
    /** v2 (local activity): re-reads the monitor, decides with evaluateDeadline(), applies "down" by CAS. */
    async checkMonitor(monitorId: string): Promise<MonitorCheck> {
      const { now, next, row } = await check(monitorId);
      if (!row) return { status: "deleted", slug: null, stop: true, sleepMs: null };
      return { status: row.status, slug: row.slug, stop: row.status === "paused", sleepMs: next === null ? null : Math.max(0, next - now.getTime()) };
    },
    /** v1 (activity). */
    async checkMonitorDeadline(monitorId: string): Promise<DeadlineCheckV1> {
      const r = await check(monitorId);
      if (!r.row) return { exists: false, nextCheckAt: null, opened: false };
      return { exists: true, nextCheckAt: r.next, opened: r.opened };
    },
  };
}

export type UptimeActivities = ReturnType<typeof createUptimeActivities>;
