import { createAnalyticsFeature } from "../analytics/service.js";
import { createAuthFeature } from "../auth/service.js";
import { createEventsFeature } from "../events/service.js";
import { createIdentityFeature } from "../identity/service.js";
import { createMetricsFeature } from "../metrics/service.js";
import { createProjectsFeature } from "../projects/service.js";
import type { Deps } from "../platform/deps.js";
import type { Feature } from "../shared/feature.js";
import { createWebhooksFeature } from "../webhooks/service.js";
import { createTemporalFeature } from "../temporal/worker.js";
import { createUptimeFeature } from "../uptime/feature.js";
import { createHealthFeature } from "./health.js";

// Every feature of the service, in start order. A feature adds its line here.
export async function createFeatures(deps: Deps): Promise<Feature[]> {
  const events = createEventsFeature(deps);
  const worker = createTemporalFeature(deps, deps.temporal);
  return [
    createHealthFeature(deps, () => worker.state()),
    createAuthFeature(deps),
    createProjectsFeature(deps),
    events,
    createIdentityFeature(deps),
    createAnalyticsFeature(deps),
    createMetricsFeature(deps, events.ingestor),
    createWebhooksFeature(deps),
    createUptimeFeature(deps),
    // Last: the Temporal worker (only with TEMPORAL_ADDRESS) starts once every feature is ready.
    worker,
  ];
}
