import type { Deps } from "../../platform/deps.js";
import { startPeriodic, type Periodic } from "../../shared/periodic.js";
import { buildPending, type BuildOptions } from "./build.js";

// Background block building: every ANALYTICS_BLOCK_INTERVAL_MS, each project's ended hours that
// lack an up-to-date block get one (newest first, a bounded time per project and pass; what is
// left is continued on the next pass). Several nodes may run it: a block is built under a
// transaction-level advisory lock, so two nodes never build the same one at once.

const PASS_BUDGET_MS = 5_000;

export function startBlockWorker(deps: Pick<Deps, "db" | "log" | "clock" | "config" | "background">): Periodic {
  const { db, log, clock, config } = deps;
  const opts: BuildOptions = { sealMs: config.analytics.blockSealMs, rebuildMs: 60_000 };
  return startPeriodic(deps.background, "analytics block pass", config.analytics.blockIntervalMs, async (stopped) => {
    const projects = await db.query<{ id: string }>("SELECT id FROM projects ORDER BY id");
    for (const { id } of projects.rows) {
      if (stopped()) return;
      const r = await buildPending(db, id, clock, opts, PASS_BUDGET_MS, log);
      if (r.built) log.debug({ projectId: id, built: r.built, done: r.done }, "analytics blocks built");
    }
  });
}
