import { Counter, type Registry } from "prom-client";

// The webhooks feature's Prometheus metrics (GET /metrics; docs/operations.md), on the process's registry.

export class WebhookMetrics {
  /** Attempts by outcome (succeeded, failed, abandoned), from either runner. */
  readonly attempts: Counter<"outcome">;

  constructor(registry: Registry) {
    this.attempts = new Counter({
      name: "vigil_webhook_attempts_total",
      help: "Webhook delivery attempts by outcome (succeeded, failed, abandoned)",
      labelNames: ["outcome"] as const,
      registers: [registry],
    });
  }
}
