import { LRUCache } from "lru-cache";

// A log line that one client can make the service repeat at will (a page refused on every retry
// of every visitor) is written at most once per key and interval: the first occurrence at once,
// the next one after the interval with the number skipped in between. Keys are bounded (the most
// recent `maxKeys`), so random keys cannot grow memory. Time is the process's monotonic clock.

export interface LogThrottleOptions {
  intervalMs: number;
  maxKeys: number;
  now?: () => number;
}

/** Returns `(key) => number | undefined`: the count of occurrences skipped since the last line when a line is due, else undefined. */
export function createLogThrottle(opts: LogThrottleOptions): (key: string) => number | undefined {
  const now = opts.now ?? (() => performance.now());
  const seen = new LRUCache<string, { at: number; skipped: number }>({ max: opts.maxKeys });
  return (key) => {
    const t = now();
    const s = seen.get(key);
    if (s && t - s.at < opts.intervalMs) {
      s.skipped++;
      return undefined;
    }
    seen.set(key, { at: t, skipped: 0 });
    return s?.skipped ?? 0;
  };
}
