import type { Deps } from "../shared/deps.js";
import { assignSlots, backfillSlots } from "./assign.js";

// Background slot assignment: every ANALYTICS_SLOT_INTERVAL_MS, projects that received events
// since the last pass get their most used data keys ranked, free slots assigned and backfilled.

export function startSlotWorker(deps: Deps): { stop(): Promise<void> } {
  const { db, log, clock, config } = deps;
  let stopped = false;
  let running: Promise<void> | undefined;
  let since = new Date(0);

  async function pass(): Promise<void> {
    const now = clock();
    const r = await db.query<{ project_id: string }>("SELECT DISTINCT project_id FROM analytics_rollups WHERE grain = 2 AND bucket >= date_trunc('day', $1::timestamptz, 'UTC')", [since]);
    since = new Date(now.getTime() - config.analytics.slotIntervalMs);
    for (const { project_id } of r.rows) {
      if (stopped) return;
      await assignSlots(db, project_id, now, { sample: config.analytics.slotSample, minShare: 0.01 });
      await backfillSlots(db, project_id, now, log);
    }
  }

  const timer = setInterval(() => {
    if (running || stopped) return;
    running = pass()
      .catch((err) => log.error({ err }, "analytics slot pass failed"))
      .finally(() => (running = undefined));
  }, config.analytics.slotIntervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
