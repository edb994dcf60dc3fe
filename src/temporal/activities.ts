import type { Deps } from "../platform/deps.js";
import { createUptimeActivities } from "../uptime/activities.js";
import { createWebhookActivities } from "../webhooks/temporal.js";

// Every activity the Temporal worker serves. A feature with workflows adds one line here (and its
// workflows to workflows/index.ts).
export function createActivities(deps: Deps) {
  return {
    ...createUptimeActivities(deps),
    ...createWebhookActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
