import type { Deps } from "../shared/deps.js";
import { checkDeadlines } from "./detect.js";

// Temporal activities of the uptime feature (registered in src/temporal/activities.ts).

export interface DeadlineCheck {
  /** false: the monitor was deleted, the workflow ends. */
  exists: boolean;
  /** The deadline to sleep until (epoch ms), or null when none applies (wait for a signal). */
  nextCheckAt: number | null;
  /** This check took the monitor down (opened its incident). */
  opened: boolean;
}

export function createUptimeActivities(deps: Deps) {
  return {
    /** Re-reads the monitor, decides with evaluateDeadline(), applies "down" by compare-and-set. */
    async checkMonitorDeadline(monitorId: string): Promise<DeadlineCheck> {
      const exists = await deps.db.query("SELECT 1 FROM monitors WHERE id = $1", [monitorId]);
      if (!exists.rowCount) return { exists: false, nextCheckAt: null, opened: false };
      const r = await checkDeadlines(deps, [monitorId], deps.clock());
      return { exists: true, nextCheckAt: r.next.get(monitorId) ?? null, opened: r.opened.includes(monitorId) };
    },
  };
}

export type UptimeActivities = ReturnType<typeof createUptimeActivities>;
