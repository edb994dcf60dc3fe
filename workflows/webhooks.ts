import {
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from "@temporalio/workflow";
import { VigilDeliveryStatus } from "../src/temporal/search-attributes.js";
import type { DeliveryWorkflowInput, WebhookActivities } from "../src/webhooks/temporal.js";
import { retryNowSignal } from "./signals.js";
import { deliveryLoopV1 } from "./webhooks-v1.js";

// One workflow per webhook delivery (id `webhook-<delivery id>`, task queue `<base>.webhooks`):
//   attempt (an activity: claims the delivery, sends once) → record it and decide with the shared
//   nextAttempt() (a local activity) → sleep the decided delay, cut short by `retryNow` (a manual
//   retry) → attempt again, until the delivery succeeds or is abandoned.
// - The send is bounded by WEBHOOK_TIMEOUT_MS; Temporal retries only infrastructure failures (a
//   worker crash, the database), without limit: nothing gives up on its own. A receiver's failure is
//   an outcome, not an activity failure.
// - A disabled webhook: a scheduled attempt finds it and the run ends "paused"; enabling the
//   webhook re-dispatches the delivery at its planned time. Requested attempts (a run's first, a
//   manual retry) are sent regardless, as the embedded scheduler sends tests and manual retries.
// - Since `delivery-v3`, a delivery's first attempt is made outside any workflow (by the embedded
//   scheduler's claim, src/webhooks/temporal.ts): a run is started only for a delivery whose first
//   attempt failed, with `firstDelayMs` (the decided wait), and begins by sleeping it (a timer operators
//   find in the run's history, cut short by `retryNow`); its first attempt is then a scheduled one.
// Versioning: runs started before the `delivery-v2` patch keep the v1 loop (webhooks-v1.ts); the
// `delivery-v3` branch is taken only by runs started with `firstDelayMs`, which older code never set.

export async function webhookDeliveryWorkflow(input: DeliveryWorkflowInput): Promise<string> {
  if (!patched("delivery-v2")) return deliveryLoopV1(input);
  const { attemptWebhookDelivery } = proxyActivities<WebhookActivities>({
    startToCloseTimeout: input.timeoutMs + 15_000,
    retry: { initialInterval: "1 second", backoffCoefficient: 2, maximumInterval: "1 minute" },
  });
  const { recordWebhookAttempt } = proxyLocalActivities<WebhookActivities>({
    startToCloseTimeout: "10 seconds",
    retry: { initialInterval: "500 milliseconds", backoffCoefficient: 2, maximumInterval: "30 seconds" },
  });
  let retryNow = false;
  setHandler(retryNowSignal, () => {
    retryNow = true;
  });
  const show = (status: string) => {
    if (input.attributes) upsertSearchAttributes([{ key: VigilDeliveryStatus, value: status }]);
  };
  // The first attempt of a run and one asked for by `retryNow` were requested (a new delivery, a
  // test, a manual retry, a re-dispatch): sent even to a disabled webhook, as in embedded mode. One
  // woken by the timer is the schedule's: a disabled webhook pauses it.
  let scheduled = false;
  let expected = input.attemptsSoFar; // the first attempt only: see DeliveryWorkflowInput
  if (input.firstDelayMs !== undefined && patched("delivery-v3")) {
    await condition(() => retryNow, Math.max(1, input.firstDelayMs));
    scheduled = !retryNow;
  }
  for (;;) {
    retryNow = false;
    const a = await attemptWebhookDelivery(input.deliveryId, scheduled, expected);
    expected = undefined;
    if (a.kind === "done") {
      show(a.status);
      return a.status;
    }
    if (a.kind !== "sent") {
      show(a.kind);
      return a.kind;
    }
    const d = await recordWebhookAttempt(input.deliveryId, a);
    show(d.status);
    if (d.status !== "retrying") return d.status;
    await condition(() => retryNow, Math.max(1, d.delayMs ?? 0));
    scheduled = !retryNow;
  }
}
