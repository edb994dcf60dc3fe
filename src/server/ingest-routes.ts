import type { DescMethod } from "@bufbuild/protobuf";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { MetricsService } from "../../gen/vigil/v1/metrics_pb.js";
import { PingService } from "../../gen/vigil/v1/ping_pb.js";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import type { LimitName } from "../shared/ratelimit.js";

// The ingestion RPCs, named once: what browsers and SDKs may do there that other routes refuse
// (decisions.md "Idempotent ingestion and browser SDKs"; docs/clients.md).

/**
 * The browser ingestion RPCs: the only ones a publishable key may call (the gate), with CORS and
 * sendBeacon's text/plain body and `?key=` over REST (src/transcoding/rest.ts, cors.ts).
 */
export const BROWSER_INGEST: ReadonlySet<DescMethod> = new Set([
  EventService.method.ingestEvent,
  EventService.method.ingestEventBatch,
]);

/**
 * The ping URLs (`/ping/:pingKey/:monitorSlug`, curl from a crontab): the key travels in the path
 * (the message over gRPC and Connect), never in a header. Over REST the gate resolves the path's key
 * (a ping key only) and takes the heartbeat limit before the body is read, and applies no cookie
 * rule (no cookie makes them act): a `POST` may be empty and of any media type (a non-empty body
 * must still be JSON). Over RPC the handler resolves the message's key (`auth.pingKey`). Their
 * paths are logged with the key redacted (src/shared/redact.ts).
 */
export const PING_URLS: ReadonlySet<DescMethod> = new Set([
  PingService.method.ping,
  PingService.method.pingSignal,
  PingService.method.pingExit,
]);

/** The run signals of a cron monitor (`.../heartbeats/:monitorSlug/start|fail|exit/:code`): heartbeats too. */
const RUN_SIGNALS = [UptimeService.method.startRun, UptimeService.method.failRun, UptimeService.method.exitRun];

/** The REST routes that accept `Content-Encoding: gzip` bodies (bounded once decompressed). */
export const COMPRESSED_INGEST: ReadonlySet<DescMethod> = new Set([
  ...BROWSER_INGEST,
  MetricsService.method.recordMetric,
  MetricsService.method.recordMetricBatch,
  UptimeService.method.sendHeartbeat,
  ...RUN_SIGNALS,
  ...PING_URLS,
]);

/**
 * The rate limit of each ingestion RPC. For an API key (its project known from the headers) the gate
 * takes it BEFORE the body is read, so a caller over its limit costs no body read, inflation or
 * parse; a member session (metrics, heartbeats) is counted by the handler once its project is known.
 */
export const INGEST_LIMITS: ReadonlyMap<DescMethod, LimitName> = new Map<DescMethod, LimitName>([
  [EventService.method.ingestEvent, "events"],
  [EventService.method.ingestEventBatch, "batches"],
  [MetricsService.method.recordMetric, "metrics"],
  [MetricsService.method.recordMetricBatch, "metricBatches"],
  [UptimeService.method.sendHeartbeat, "heartbeats"],
  ...RUN_SIGNALS.map((m) => [m, "heartbeats"] as const),
  ...[...PING_URLS].map((m) => [m, "heartbeats"] as const),
]);
