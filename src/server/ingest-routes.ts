import type { DescMethod } from "@bufbuild/protobuf";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { MetricsService } from "../../gen/vigil/v1/metrics_pb.js";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";

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

/** The REST routes that accept `Content-Encoding: gzip` bodies (bounded once decompressed). */
export const COMPRESSED_INGEST: ReadonlySet<DescMethod> = new Set([
  ...BROWSER_INGEST,
  MetricsService.method.recordMetric,
  MetricsService.method.recordMetricBatch,
  UptimeService.method.sendHeartbeat,
]);
