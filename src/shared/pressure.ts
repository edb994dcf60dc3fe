import { performance } from "node:perf_hooks";

/**
 * Ingestion has priority over outbound work on the same node: the ingest path marks when events
 * queue up behind a busy writer (ingestion is saturated), and background senders (webhook
 * deliveries) shrink their concurrency while that is recent. Light ingestion marks nothing. Deliveries
 * are durable rows, so yielding only delays them; they catch up as soon as ingestion pauses.
 */
export class IngestPressure {
  private lastAt = -Infinity;

  constructor(private readonly windowMs = 250) {}

  mark(): void {
    this.lastAt = performance.now();
  }

  busy(): boolean {
    return performance.now() - this.lastAt < this.windowMs;
  }
}
