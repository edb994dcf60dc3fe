import type { VigilError } from "./errors.js";
import type { StorageLike } from "./storage.js";
import type { FetchLike, RetryOptions } from "./transport.js";

// The SDK's option and result types (sdk/README.md documents each).

export type JsonValue = string | number | boolean | null | JsonValue[] | { [k: string]: JsonValue };
export type JsonObject = { [k: string]: JsonValue };
export type Loose = Record<string, unknown>;

export interface VigilOptions {
  /** `vk_...` (server side: everything) or `vk_pub_...` (a web page: events only). */
  apiKey: string;
  /** The service's address. Default: `process.env.API_URL` on Node; required in a browser. */
  apiUrl?: string;
  /** Items per batch request. Default 100; at most 1000 (events) and 500 (metric points). */
  flushAt?: number;
  /** JSON bytes per batch request. Default 256 KiB. */
  flushBytes?: number;
  /** A queued item waits at most this long before its batch is sent. Default 1000 ms. */
  flushIntervalMs?: number;
  /** Items queued per stream (events; metric points). When full the OLDEST is dropped and `stats.dropped` counts it. Default 10 000. */
  maxQueueSize?: number;
  retry?: RetryOptions;
  /** Per attempt, in ms; a server that does not answer in time is retried. Default 15 000. */
  requestTimeoutMs?: number;
  /** How long `shutdown()` and Node's exit flush wait before giving up on what is left. Default 10 000 ms. */
  shutdownTimeoutMs?: number;
  /** Browser: keep the queue in localStorage across loads (default true). Node: memory only. */
  persist?: boolean;
  /** Browser: send the queue with navigator.sendBeacon when the page is hidden (default true; publishable keys only). */
  beacon?: boolean;
  /**
   * Gzip request bodies over 16 KiB (CompressionStream). Default: true in a browser (bandwidth),
   * false on Node (CPU; servers usually sit on fast links).
   */
  gzip?: boolean;
  /** Injectable fetch (default: the global one). */
  fetch?: FetchLike;
  /** Called for refused items, give-ups, drops and storage failures. Default: console.warn. */
  onError?: (err: VigilError) => void;
  /** Storage for the persisted queue and the anonymous id (default: localStorage in a browser). */
  storage?: StorageLike;
}

export interface TrackOptions {
  userId?: string;
  groupId?: string;
  /** When it happened (default: the time of the call, kept across retries). */
  timestamp?: Date | string;
  context?: Loose;
  tags?: Loose;
  /** A source key (resolved to the project's source). */
  source?: string;
}

export interface MetricOptions {
  unit?: string;
  tags?: Record<string, string | number | boolean>;
  timestamp?: Date | string;
}

export interface HeartbeatOptions {
  latencyMs?: number;
  /** `up` (default) or `down`. */
  status?: "up" | "down";
  metadata?: Loose;
  expectedIntervalMs?: number;
  gracePeriodMs?: number;
  /** A cron schedule instead of `expectedIntervalMs` (five fields; `timezone` an IANA name, default UTC). */
  schedule?: { cron: string; timezone?: string };
  /** Pairs this success with the `start` of the same run. */
  runId?: string;
  /** The run's output (the server keeps its last 10,000 bytes). */
  output?: string;
}

export interface JobOptions {
  /** Sent with each of the run's signals. */
  metadata?: Loose;
}

export interface HeartbeatResult {
  accepted: boolean;
  monitor: { id: string; name: string; type: string; status: string; lastHeartbeatAt: string | null } & Loose;
  statusChanged: boolean;
}

export interface VigilStats {
  /** Items waiting or in flight (events and metric points). */
  queued: number;
  /** Items the server acknowledged (events, metric points, heartbeats). */
  sent: number;
  /** Items dropped because the queue was full (oldest first), or tracked after shutdown. */
  dropped: number;
  /** Items the server refused (4xx, or per-item errors), or given up on. */
  rejected: number;
  /** Retried requests. */
  retries: number;
}
