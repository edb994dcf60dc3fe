import { Counter, type Registry } from "prom-client";

// The uptime feature's Prometheus metrics (GET /metrics; docs/operations.md), on the process's registry.

export class UptimeMetrics {
  readonly incidents: Counter<"transition">;

  constructor(registry: Registry) {
    this.incidents = new Counter({
      name: "vigil_incident_transitions_total",
      help: "Incidents opened and resolved",
      labelNames: ["transition"] as const,
      registers: [registry],
    });
  }
}
