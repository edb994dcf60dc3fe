import { Counter, type Registry } from "prom-client";
import type { BatchCounts } from "./batch.js";

// The alerts feature's Prometheus metrics (GET /metrics; docs/operations.md), on the process's registry.

export class AlertMetrics implements BatchCounts {
  readonly samples: Counter<"plan">;

  constructor(registry: Registry) {
    this.samples = new Counter({
      name: "vigil_alert_samples_total",
      help: "Live evaluations' samples, by plan: batched (one statement for a query's due times) or single",
      labelNames: ["plan"] as const,
      registers: [registry],
    });
  }

  batched(n: number): void {
    this.samples.inc({ plan: "batched" }, n);
  }

  single(n: number): void {
    this.samples.inc({ plan: "single" }, n);
  }
}
