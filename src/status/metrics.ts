import { Counter, type Registry } from "prom-client";

// The status pages' Prometheus metrics (METRICS_PORT; docs/operations.md), on the process's registry.

export class StatusMetrics {
  /** Snapshot computations (each reads the database once): at most one per page and refresh interval. */
  readonly builds: Counter<"outcome">;

  constructor(registry: Registry) {
    this.builds = new Counter({
      name: "vigil_status_page_builds_total",
      help: "Status page snapshots computed (one database read each), by outcome: page, not_found (unknown or unpublished slug), failed",
      labelNames: ["outcome"] as const,
      registers: [registry],
    });
  }
}
