import { Counter, Gauge, Histogram, type Registry } from "prom-client";

// The events feature's Prometheus metrics (GET /metrics; docs/operations.md), registered on the
// process's registry (deps.telemetry.registry) by the feature that records them.

export class IngestMetrics {
  readonly queueDepth: Gauge;
  readonly commits: Counter<"path">;
  readonly commitSize: Histogram;
  readonly commitDuration: Histogram;
  readonly accepted: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.queueDepth = new Gauge({
      name: "vigil_ingest_queue_depth",
      help: "Events waiting for the next group commit",
      registers,
    });
    this.commits = new Counter({
      name: "vigil_ingest_commits_total",
      help: "Group commits by how they were written: one guarded statement, or a transaction",
      labelNames: ["path"] as const,
      registers,
    });
    this.commitSize = new Histogram({
      name: "vigil_ingest_commit_events",
      help: "Events per group commit",
      buckets: [1, 5, 10, 50, 100, 500, 1000, 2000, 5000],
      registers,
    });
    this.commitDuration = new Histogram({
      name: "vigil_ingest_commit_duration_seconds",
      help: "Time to commit one group",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    });
    this.accepted = new Counter({ name: "vigil_events_accepted_total", help: "Events committed", registers });
  }
}
