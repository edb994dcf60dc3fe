import { Redis } from "ioredis";
import type { Logger } from "pino";

// Per-project request limits over fixed 60-second windows (aligned to the minute). In-process by
// default; with REDIS_URL the counters live in Redis (one atomic Lua INCRBY+PEXPIRE), shared by
// every node. A Redis outage fails open (logged): losing the limiter must not stop ingestion.

export const WINDOW_MS = 60_000;

export type LimitName = "events" | "batches";

export interface Verdict {
  allowed: boolean;
  /** Seconds until the window ends (at least 1) when refused. */
  retryAfterSeconds: number;
  count: number;
}

export interface RateLimiter {
  hit(limit: LimitName, projectId: string, max: number, now: Date, cost?: number): Promise<Verdict>;
  close(): Promise<void>;
}

/** The decision, from the count after this hit. Pure. */
export function verdict(count: number, max: number, nowMs: number): Verdict {
  const windowEnd = (Math.floor(nowMs / WINDOW_MS) + 1) * WINDOW_MS;
  return { allowed: count <= max, retryAfterSeconds: Math.max(1, Math.ceil((windowEnd - nowMs) / 1000)), count };
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly counts = new Map<string, { window: number; count: number }>();

  async hit(limit: LimitName, projectId: string, max: number, now: Date, cost = 1): Promise<Verdict> {
    const window = Math.floor(now.getTime() / WINDOW_MS);
    const key = `${limit}:${projectId}`;
    let c = this.counts.get(key);
    if (!c || c.window !== window) {
      if (this.counts.size > 50_000) for (const [k, v] of this.counts) if (v.window !== window) this.counts.delete(k);
      c = { window, count: 0 };
      this.counts.set(key, c);
    }
    c.count += cost;
    return verdict(c.count, max, now.getTime());
  }

  async close(): Promise<void> {}
}

const SCRIPT = `
local c = redis.call('INCRBY', KEYS[1], ARGV[1])
if c == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return c`;

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private lastWarn = 0;

  constructor(url: string, private readonly log: Logger) {
    this.redis = new Redis(url, { commandTimeout: 500, maxRetriesPerRequest: 1, lazyConnect: false });
    this.redis.on("error", (err) => this.warn(err));
  }

  async hit(limit: LimitName, projectId: string, max: number, now: Date, cost = 1): Promise<Verdict> {
    const window = Math.floor(now.getTime() / WINDOW_MS);
    const key = `vigil:rl:${limit}:${projectId}:${window}`;
    try {
      const count = Number(await this.redis.eval(SCRIPT, 1, key, String(cost), String(WINDOW_MS * 2)));
      return verdict(count, max, now.getTime());
    } catch (err) {
      this.warn(err);
      return { allowed: true, retryAfterSeconds: 1, count: 0 };
    }
  }

  private warn(err: unknown): void {
    const t = Date.now();
    if (t - this.lastWarn < 10_000) return;
    this.lastWarn = t;
    this.log.warn({ err }, "rate limiter: Redis unavailable, allowing requests");
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

export function createRateLimiter(redisUrl: string | undefined, log: Logger): RateLimiter {
  return redisUrl ? new RedisRateLimiter(redisUrl, log) : new MemoryRateLimiter();
}
