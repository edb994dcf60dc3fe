import { condition, defineSignal, proxyActivities, setHandler } from "@temporalio/workflow";
import { nextAttempt } from "../src/webhooks/retry.js";
import type { DeliveryWorkflowInput, WebhookActivities } from "../src/webhooks/temporal.js";

// One workflow per webhook delivery (id `webhook-<delivery id>`): attempt, decide with the shared
// pure function, sleep durably until the next attempt (cut short by the `retryNow` signal of a
// manual retry), until the delivery succeeds or is abandoned.

export const retryNowSignal = defineSignal("retryNow");

export async function webhookDeliveryWorkflow(input: DeliveryWorkflowInput): Promise<string> {
  const acts = proxyActivities<WebhookActivities>({
    // The send is bounded by WEBHOOK_TIMEOUT_MS; Temporal retries only infrastructure failures.
    startToCloseTimeout: input.timeoutMs + 30_000,
    retry: { initialInterval: "1 second", backoffCoefficient: 2, maximumInterval: "1 minute", maximumAttempts: 20 },
  });
  let retryNow = false;
  setHandler(retryNowSignal, () => {
    retryNow = true;
  });
  for (;;) {
    retryNow = false;
    const r = await acts.sendWebhookAttempt(input.deliveryId);
    if (r.gone) return "gone";
    // Math.random and Date.now are deterministic (replay-safe) inside a workflow.
    const next = nextAttempt(r.outcome, r.attempts, r.limit, { baseMs: input.baseMs }, Math.random());
    const plannedAt = next.status === "retrying" ? new Date(Date.now() + next.delayMs).toISOString() : null;
    await acts.recordWebhookDecision(input.deliveryId, next.status, plannedAt);
    if (next.status !== "retrying") return next.status;
    await condition(() => retryNow, next.delayMs);
  }
}
