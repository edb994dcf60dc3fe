import type { UptimeDeps } from "./deps.js";
import type { Feature } from "../shared/feature.js";
import { createUptimeActivities, type UptimeActivities } from "./activities.js";
import { HeartbeatWriter } from "./heartbeats.js";
import type { IncidentListener } from "./incidents.js";
import { EmbeddedScheduler } from "./scheduler.js";
import { uptimeService } from "./service.js";
import { TemporalDeadlineRunner } from "./temporal-runner.js";
import type { DeadlineRunner } from "./wake.js";
import { DAY_MS, HOUR_MS } from "../shared/time.js";

// The uptime feature: its service, the heartbeat writer, and the deadline runner — Temporal when
// TEMPORAL_ADDRESS is set, else the embedded scheduler. Background work (timers, worker, pruning of
// raw heartbeats past their retention) runs where ROLE is `all` or `worker`.

export interface UptimeFeature extends Feature {
  runner: DeadlineRunner;
  writer: HeartbeatWriter;
  /** The listeners of incident transitions this feature was wired with (the same list). */
  incidentListeners: IncidentListener[];
  /** The activities the Temporal worker serves on the deadlines and uptime queues (server/features.ts). */
  activities: UptimeActivities;
}

/** `incidentListeners`: run inside the transaction that opens or resolves an incident (server/features.ts). */
export function createUptimeFeature(base: Omit<UptimeDeps, "incidentListeners">, incidentListeners: IncidentListener[]): UptimeFeature {
  const deps: UptimeDeps = { ...base, incidentListeners };
  const runner: DeadlineRunner = deps.temporal ? new TemporalDeadlineRunner(deps, deps.temporal) : new EmbeddedScheduler(deps);
  const writer = new HeartbeatWriter(deps, (changes) => runner.changed(changes));
  const rawRetentionMs = deps.config.uptime.rawRetentionDays * DAY_MS;
  let prune: NodeJS.Timeout | undefined;

  const pruneOnce = async () => {
    const before = new Date(deps.clock().getTime() - rawRetentionMs - HOUR_MS);
    // In slices, so that a large backlog never holds a long transaction.
    for (;;) {
      const r = await deps.db.query("DELETE FROM heartbeats WHERE ctid = ANY(ARRAY(SELECT ctid FROM heartbeats WHERE at < $1 LIMIT 5000))", [before]);
      if ((r.rowCount ?? 0) < 5000) break;
    }
  };

  return {
    name: "uptime",
    runner,
    writer,
    incidentListeners,
    activities: createUptimeActivities(deps),
    services: [uptimeService(deps, { writer, changed: (c) => runner.changed(c), rawRetentionMs })],
    async start() {
      await runner.start();
      prune = setInterval(() => void pruneOnce().catch((err) => deps.log.warn({ err }, "pruning raw heartbeats failed")), HOUR_MS);
      prune.unref();
    },
    async stop() {
      clearInterval(prune);
      await writer.drain();
      await runner.stop();
    },
  };
}
