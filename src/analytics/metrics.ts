import { Counter, type Registry } from "prom-client";

// The analytics feature's Prometheus metrics (GET /metrics; docs/operations.md), on the process's registry.

export class AnalyticsMetrics {
  readonly blockQueries: Counter<"outcome">;

  constructor(registry: Registry) {
    this.blockQueries = new Counter({
      name: "vigil_analytics_block_queries_total",
      help: "Analytics queries that could use column blocks, by whether they did (blocks) or ran plain SQL (declined)",
      labelNames: ["outcome"] as const,
      registers: [registry],
    });
  }
}
