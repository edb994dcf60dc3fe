import { condition, proxyActivities, setHandler } from "@temporalio/workflow";
import { nextAttempt } from "../src/webhooks/retry.js";
import type { DeliveryWorkflowInput, WebhookActivitiesV1 } from "../src/webhooks/temporal.js";
import { retryNowSignal } from "./signals.js";

// VERSION 1 of the delivery loop, kept only so that histories started before the `delivery-v2`
// patch replay (test/temporal/histories/v1-*.json). New runs take the v2 loop in webhooks.ts.
//
// One workflow per webhook delivery (id `webhook-<delivery id>`): attempt, decide with the shared
// pure function, sleep durably until the next attempt (cut short by the `retryNow` signal of a
// manual retry), until the delivery succeeds or is abandoned.

export async function deliveryLoopV1(input: DeliveryWorkflowInput): Promise<string> {
  const acts = proxyActivities<WebhookActivitiesV1>({
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
