import type { Deps } from "../../platform/deps.js";
import type { ColumnBlocks } from "../column-blocks.js";
import { blockQueries } from "./engine.js";
import { BlockStore } from "./store.js";
import { startBlockWorker } from "./worker.js";

/**
 * The column blocks of the process (column-blocks.ts's contract), handed to the analytics feature in
 * server/features.ts; null when ANALYTICS_FAST_PATHS is off or the block cache is 0 MB.
 */
export function createColumnBlocks(
  deps: Pick<Deps, "db" | "log" | "clock" | "config" | "background">,
): ColumnBlocks | null {
  const { analytics } = deps.config;
  if (!analytics.fastPaths || analytics.blockCacheMb <= 0) return null;
  const store = new BlockStore(analytics.blockCacheMb * 1024 * 1024);
  return {
    queries: (db, slots, record) => blockQueries({ db, store, slots, record }),
    startBuilder: () => (analytics.blockIntervalMs > 0 ? startBlockWorker(deps) : undefined),
  };
}
