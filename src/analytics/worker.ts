import type { Deps } from "../platform/deps.js";
import { startPeriodic, type Periodic } from "../shared/periodic.js";
import { assignSlots, backfillSlots } from "./assign.js";

// Background slot assignment: every ANALYTICS_SLOT_INTERVAL_MS, projects that received events
// since the last pass get their most used data keys ranked, free slots assigned and backfilled.

export function startSlotWorker(deps: Pick<Deps, "db" | "log" | "clock" | "config" | "background">): Periodic {
  const { db, log, clock, config } = deps;
  let since = new Date(0);
  return startPeriodic(deps.background, "analytics slot pass", config.analytics.slotIntervalMs, async (stopped) => {
    const now = clock();
    const r = await db.query<{ project_id: string }>(
      "SELECT DISTINCT project_id FROM analytics_rollups WHERE grain = 2 AND bucket >= date_trunc('day', $1::timestamptz, 'UTC')",
      [since],
    );
    since = new Date(now.getTime() - config.analytics.slotIntervalMs);
    for (const { project_id } of r.rows) {
      if (stopped()) return;
      await assignSlots(db, project_id, now, { sample: config.analytics.slotSample, minShare: 0.01 });
      await backfillSlots(db, project_id, now, log);
    }
  });
}
