import { createHash } from "node:crypto";
import type { CommandParser } from "redis";
import type { Logger } from "pino";
import type { Config } from "../config/index.js";
import type { Clock } from "./clock.js";
import { rateLimited } from "./errors.js";
import type { Telemetry } from "./telemetry.js";

// Request limits over fixed windows aligned to the epoch (60 s for the per-minute limits, so
// aligned to the minute). One limiter per process (deps.limits). In-process by default; with
// REDIS_URL the counters live in Redis (one atomic Lua INCRBY+PEXPIRE per hit), shared by every
// node. A Redis outage fails open (logged): losing the limiter must not stop ingestion.
// docs/operations.md lists every limit, its key and its setting.

export const WINDOW_MS = 60_000;

/**
 * Every limit, keyed as noted:
 * - events, batches: single events and event batches (per project);
 * - metrics, metricBatches: single metric records and metric batches (per project);
 * - heartbeats: heartbeats (per project); identify: identify calls (per project);
 * - webhookSends: webhook test and delivery retry, each sends a request (per project);
 * - writes: management writes (per project; project creation per account);
 * - signups: sign-up attempts (per client address);
 * - statusReads: reads of the public status pages, any of their routes (per client address);
 * - subscribeAddress, subscribeEmail: status page subscription requests (per client address, per
 *   minute; per target email, hashed, per hour);
 * - loginAccount, loginAddress: login attempts that did not succeed (per email, per client address).
 */
export type LimitName =
  | "events"
  | "batches"
  | "metrics"
  | "metricBatches"
  | "heartbeats"
  | "identify"
  | "webhookSends"
  | "writes"
  | "signups"
  | "statusReads"
  | "subscribeAddress"
  | "subscribeEmail"
  | "loginAccount"
  | "loginAddress";

interface LimitRule {
  max: number;
  windowMs: number;
}

export type LimitRules = Record<LimitName, LimitRule>;

export interface Verdict {
  allowed: boolean;
  /** Seconds until the window ends (at least 1) when refused. */
  retryAfterSeconds: number;
  count: number;
}

/** The decision, from the count after this hit. Pure. */
export function verdict(count: number, max: number, nowMs: number, windowMs = WINDOW_MS): Verdict {
  const windowEnd = (Math.floor(nowMs / windowMs) + 1) * windowMs;
  return { allowed: count <= max, retryAfterSeconds: Math.max(1, Math.ceil((windowEnd - nowMs) / 1000)), count };
}

/**
 * Where counts live: adds `cost` to the key's count in the window holding `nowMs`; undefined when
 * unavailable. In process the count is known at once (no promise: every ingestion request takes a limit).
 */
export interface CounterStore {
  add(
    name: LimitName,
    key: string,
    cost: number,
    windowMs: number,
    nowMs: number,
  ): number | undefined | Promise<number | undefined>;
  close(): Promise<void>;
}

export class MemoryCounterStore implements CounterStore {
  private readonly counts = new Map<string, { window: number; windowMs: number; count: number }>();

  add(name: LimitName, key: string, cost: number, windowMs: number, nowMs: number): number {
    const window = Math.floor(nowMs / windowMs);
    const k = `${name}:${key}`;
    let c = this.counts.get(k);
    if (!c || c.window !== window) {
      if (this.counts.size > 50_000)
        for (const [x, v] of this.counts) if (v.window !== Math.floor(nowMs / v.windowMs)) this.counts.delete(x);
      c = { window, windowMs, count: 0 };
      this.counts.set(k, c);
    }
    c.count += cost;
    return c.count;
  }

  async close(): Promise<void> {}
}

/** A command waits at most this long (queued while reconnecting, or for its reply), then fails open. */
export const REDIS_COMMAND_TIMEOUT_MS = 500;

/** Reconnect delays: 50 ms more per attempt, at most 2 s, forever (a node outlives a Redis restart). */
const redisReconnectDelay = (retries: number) => Math.min((retries + 1) * 50, 2000);

/** The client, its library loaded on first use: a process without REDIS_URL never loads it. */
async function redisClient(url: string) {
  const { createClient, defineScript } = await import("redis");
  /** One hit: INCRBY, and PEXPIRE when the key was just created; atomic (EVALSHA, EVAL on NOSCRIPT). */
  const hit = defineScript({
    NUMBER_OF_KEYS: 1,
    SCRIPT: `
local c = redis.call('INCRBY', KEYS[1], ARGV[1])
if c == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return c`,
    parseCommand(parser: CommandParser, key: string, cost: number, ttlMs: number) {
      parser.pushKey(key);
      parser.push(String(cost), String(ttlMs));
    },
    transformReply: (reply: unknown) => Number(reply),
  });
  return createClient({
    url,
    // RESP2 is spoken by every Redis-compatible server (RESP3 needs Redis 6+); the replies used here are the same.
    RESP: 2,
    scripts: { hit },
    commandOptions: { timeout: REDIS_COMMAND_TIMEOUT_MS },
    socket: { connectTimeout: 5000, reconnectStrategy: redisReconnectDelay },
  });
}

export class RedisCounterStore implements CounterStore {
  private readonly redis: Promise<Awaited<ReturnType<typeof redisClient>>>;
  private readonly connecting: Promise<unknown>;
  private lastWarn = 0;

  constructor(
    url: string,
    private readonly log: Logger,
  ) {
    this.redis = redisClient(url).then((r) => r.on("error", (err) => this.warn(err)));
    // Connects in the background and keeps retrying; hits made meanwhile wait in the offline queue
    // (up to the command timeout), so a node starts while Redis is down and counts once it is up.
    this.connecting = this.redis.then((r) => r.connect()).catch((err) => this.warn(err));
  }

  async add(name: LimitName, key: string, cost: number, windowMs: number, nowMs: number): Promise<number | undefined> {
    const k = `vigil:rl:${name}:${key}:${Math.floor(nowMs / windowMs)}`;
    try {
      return await (await this.redis).hit(k, cost, windowMs * 2);
    } catch (err) {
      this.warn(err);
      return undefined;
    }
  }

  private warn(err: unknown): void {
    const t = Date.now();
    if (t - this.lastWarn < 10_000) return;
    this.lastWarn = t;
    this.log.warn({ err }, "rate limiter: Redis unavailable, allowing requests");
  }

  async close(): Promise<void> {
    // close() lets replies in flight arrive; while disconnected there are none to wait for.
    const redis = await this.redis;
    if (redis.isReady) await redis.close().catch(() => redis.destroy());
    else if (redis.isOpen) redis.destroy();
    await this.connecting;
  }
}

export class RateLimiter {
  constructor(
    private readonly store: CounterStore,
    readonly rules: LimitRules,
    private readonly clock: Clock,
    private readonly telemetry?: Telemetry,
  ) {}

  /** Counts `cost` against the limit for `key`; the verdict says whether this hit is within it. */
  async hit(name: LimitName, key: string, cost = 1, now: Date = this.clock()): Promise<Verdict> {
    const { windowMs } = this.rules[name];
    return this.judge(name, await this.store.add(name, key, cost, windowMs, now.getTime()), now.getTime());
  }

  private judge(name: LimitName, count: number | undefined, nowMs: number): Verdict {
    if (count === undefined) return { allowed: true, retryAfterSeconds: 1, count: 0 };
    const { max, windowMs } = this.rules[name];
    const v = verdict(count, max, nowMs, windowMs);
    if (!v.allowed) this.telemetry?.rateLimited.inc({ limit: name });
    return v;
  }

  /**
   * hit(), throwing the 429 (with Retry-After) when over the limit. Answered at once (no promise)
   * when the count is in process; await it either way (a refusal may then be thrown at once).
   */
  take(name: LimitName, key: string, cost = 1): Promise<void> | undefined {
    const nowMs = this.clock().getTime();
    const count = this.store.add(name, key, cost, this.rules[name].windowMs, nowMs);
    if (count instanceof Promise) return count.then((c) => this.enforce(name, c, nowMs));
    this.enforce(name, count, nowMs);
    return undefined;
  }

  private enforce(name: LimitName, count: number | undefined, nowMs: number): void {
    const v = this.judge(name, count, nowMs);
    if (!v.allowed) throw rateLimited(v.retryAfterSeconds);
  }

  /** Gives back what a hit at `at` counted (same window), e.g. a login attempt that succeeded. */
  async refund(name: LimitName, key: string, at: Date, cost = 1): Promise<void> {
    await this.store.add(name, key, -cost, this.rules[name].windowMs, at.getTime());
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

/** A key that does not keep the raw value (an email) in memory or in Redis. */
export const hashedKey = (value: string) => createHash("sha256").update(value).digest("base64url").slice(0, 32);

function limitRules(config: Config): LimitRules {
  const perMinute = (max: number) => ({ max, windowMs: WINDOW_MS });
  const r = config.rateLimits;
  const loginWindowMs = config.login.windowSeconds * 1000;
  return {
    events: perMinute(r.eventsPerMinute),
    batches: perMinute(r.batchesPerMinute),
    metrics: perMinute(r.metricsPerMinute),
    metricBatches: perMinute(r.metricBatchesPerMinute),
    heartbeats: perMinute(r.heartbeatsPerMinute),
    identify: perMinute(r.identifyPerMinute),
    webhookSends: perMinute(r.webhookSendsPerMinute),
    writes: perMinute(r.writesPerMinute),
    signups: perMinute(r.signupsPerMinute),
    statusReads: perMinute(r.statusReadsPerMinute),
    subscribeAddress: perMinute(r.subscribesPerMinute),
    subscribeEmail: { max: r.subscribesPerEmailPerHour, windowMs: 3_600_000 },
    loginAccount: { max: config.login.maxFailuresPerAccount, windowMs: loginWindowMs },
    loginAddress: { max: config.login.maxFailuresPerAddress, windowMs: loginWindowMs },
  };
}

/** The process's limiter: Redis-backed when REDIS_URL is set, else in-process. */
export function createRateLimiter(config: Config, log: Logger, clock: Clock, telemetry?: Telemetry): RateLimiter {
  const store = config.redisUrl ? new RedisCounterStore(config.redisUrl, log) : new MemoryCounterStore();
  return new RateLimiter(store, limitRules(config), clock, telemetry);
}
