import { createColumnBlocks } from "../analytics/blocks/create.js";
import { Registry } from "../analytics/registry.js";
import { rollupProjection } from "../analytics/rollups.js";
import { createAlertsFeature } from "../alerts/service.js";
import { createAnalyticsFeature } from "../analytics/service.js";
import { createAuthFeature } from "../auth/service.js";
import { createEventsFeature } from "../events/service.js";
import { userHoursProjection } from "../events/user-hours.js";
import { identityProjection } from "../identity/projection.js";
import { createIdentityFeature } from "../identity/service.js";
import { createJobsFeature } from "../jobs/service.js";
import { createPurgeFeature } from "../lifecycle/purge.js";
import { createRetentionFeature } from "../lifecycle/retention.js";
import { metricsCommitting } from "../metrics/committing.js";
import { createMetricsFeature, measurementRecorder } from "../metrics/service.js";
import { createPagesFeature } from "../pages/service.js";
import { createProjectsFeature } from "../projects/service.js";
import { createStatusFeature } from "../status/service.js";
import { queueSubscriberMails } from "../subscribers/notices.js";
import { createSubscribersFeature } from "../subscribers/service.js";
import type { Deps } from "../platform/deps.js";
import type { Feature } from "../shared/feature.js";
import { createWebhooksFeature } from "../webhooks/service.js";
import { SubscriptionCache } from "../webhooks/subscriptions.js";
import { createTriggers } from "../webhooks/triggers.js";
import { createTemporalFeature } from "../temporal/worker.js";
import { runDurationsTo } from "../uptime/runs.js";
import { createUptimeFeature } from "../uptime/service.js";
import { createHealthFeature } from "./health.js";

// Every feature of the service, and what runs between them. A feature adds its line here.
export async function createFeatures(deps: Deps): Promise<Feature[]> {
  // Participants that features share, built before the features that run or read them.
  const slots = new Registry(deps.db); // analytics: which data keys have a typed slot
  const subscriptions = new SubscriptionCache(); // webhooks: which webhooks watch which event types
  const webhookTriggers = createTriggers(deps, subscriptions);

  // The ingest pipeline (contracts: src/events/pipeline.ts). For every group of accepted events:
  // - `preparing` runs in order inside the ingest transaction BEFORE the insert (may set slots);
  // - `committing` runs in order inside the same transaction AFTER the insert: what must commit
  //   with the events or not at all. A throw fails the group; each caller is then retried alone;
  // - `projections` are NOT run in the transaction: their deltas are stored with the events and
  //   the projector (events.derived) applies them after the commit; readers settle() first.
  // A small group is written by ONE guarded statement instead of a transaction only when every
  // preparing step answers from its cache (`cached`) and every committing step is `idle` for it;
  // a step without them always takes the transaction path.
  const events = createEventsFeature(deps, {
    preparing: [slots.prepare],
    committing: [metricsCommitting, webhookTriggers.events],
    projections: [userHoursProjection, identityProjection, rollupProjection],
  });
  const identity = createIdentityFeature(deps, events.derived);
  const analytics = createAnalyticsFeature(deps, {
    registry: slots,
    derived: events.derived,
    blocks: createColumnBlocks(deps),
  });
  const metrics = createMetricsFeature(deps, events.ingestor);
  const webhooks = createWebhooksFeature(deps, subscriptions);
  // Incident transitions run these inside the transaction that opens or resolves the incident.
  // Each ended run's duration is a metric point (vigil.run.duration_ms), by the metrics routes' write path.
  const measure = measurementRecorder(deps.db, events.ingestor);
  // Status page subscribers' mails are queued by the same transactions (src/subscribers/notices.ts).
  const uptime = createUptimeFeature({ ...deps, runDurations: runDurationsTo(measure) }, [
    webhookTriggers.incidents,
    queueSubscriberMails,
  ]);
  // Alerts (src/alerts/): rules over metrics and events; each owns a monitor, whose incidents are
  // uptime's (the same incident listeners); samples read through analytics' window queries. In
  // Temporal mode the deadline scan also runs the due evaluations (its activities wrapped here).
  const alerts = createAlertsFeature({
    ...deps,
    windows: analytics.windows,
    incidents: uptime.incidents,
    deadlineScan: uptime.deadlineScan,
  });
  // The Temporal worker (only with TEMPORAL_ADDRESS) serves the activities of the features that
  // own workflows (workflows/).
  const worker = createTemporalFeature(deps, deps.temporal, {
    deadlines: alerts.deadlineActivities(uptime.activities),
    uptime: uptime.activities,
    webhooks: webhooks.activities,
  });

  // In start order (stopped in reverse).
  return [
    createHealthFeature(deps, () => worker.state()),
    createAuthFeature(deps),
    createProjectsFeature(deps),
    events,
    identity,
    // Durable jobs (src/jobs/): deleting a person runs here, resumed after a restart.
    createJobsFeature(deps, events.derived),
    // Retention (src/lifecycle/retention.ts): the background pass removing expired data.
    createRetentionFeature(deps, events.derived),
    analytics,
    metrics,
    webhooks,
    uptime,
    alerts,
    createPagesFeature(deps),
    // Deleted projects: removes the rows they still own, in the background (worker role).
    createPurgeFeature(deps),
    // Public status pages (reads pages, monitors and incidents; serves its own HTTP routes too).
    createStatusFeature(deps),
    // Status page subscribers: the public subscribe routes, the owners' list, the mail sender.
    createSubscribersFeature(deps, webhooks.mail),
    // Last: the Temporal worker starts once every feature is ready.
    worker,
  ];
}
