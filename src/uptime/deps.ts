import type { Deps } from "../platform/deps.js";
import type { IncidentListener } from "./incidents.js";
import type { UptimeMetrics } from "./metrics.js";
import type { RunDurationSink } from "./runs.js";

/**
 * What the uptime feature's components are built from: the part of the process's Deps they use,
 * the listeners of incident transitions wired in server/features.ts (webhooks subscribe), and the
 * feature's own metrics.
 */
export type UptimeDeps = Pick<
  Deps,
  "db" | "log" | "clock" | "config" | "auth" | "limits" | "telemetry" | "temporal" | "background" | "notifications"
> & {
  /** Run in order inside the transaction that opens or resolves an incident (incidents.ts). */
  incidentListeners: readonly IncidentListener[];
  metrics: UptimeMetrics;
  /** Where each ended run's duration is recorded (the metrics feature's write path, server/features.ts); absent: nowhere. */
  runDurations?: RunDurationSink;
};
