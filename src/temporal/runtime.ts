import type { LogLevel } from "@temporalio/worker";
import type { Logger } from "pino";
import { freePort } from "../shared/net.js";

// The Temporal SDK's process-wide Runtime, installed once before the first worker connects:
// - no shutdown signals of its own: the service's graceful shutdown (server/app.ts) stops the
//   workers in its own order, after the heartbeat writer and the wake outbox have drained;
// - SDK metrics (workflow/activity task latencies, slots, poll failures, sticky cache) exported on a
//   loopback port that GET /metrics appends to Vigil's own (sdkMetrics()).
// - SDK logs through pino: the TypeScript side at warn and above, Core's at error.

let metricsUrl: string | undefined;
let installed: Promise<void> | undefined;

export function installTemporalRuntime(log: Logger): Promise<void> {
  installed ??= (async () => {
    const { DefaultLogger, Runtime } = await import("@temporalio/worker");
    const port = await freePort();
    const forward = (level: LogLevel, message: string, meta?: Record<string, unknown>) => {
      const l = level === "ERROR" ? "error" : level === "WARN" ? "warn" : level === "INFO" ? "info" : "debug";
      log[l]({ temporal: meta }, `temporal sdk: ${message}`);
    };
    Runtime.install({
      shutdownSignals: [],
      logger: new DefaultLogger("WARN", (entry) => forward(entry.level, entry.message, entry.meta)),
      // Core's own logs (its connection retries repeat hundreds of times during an outage) are
      // forwarded to pino at ERROR only; the workers' state on /health tells unavailability.
      telemetryOptions: {
        logging: { filter: { core: "ERROR", other: "WARN" }, forward: {} },
        metrics: {
          prometheus: { bindAddress: `127.0.0.1:${port}`, countersTotalSuffix: true, useSecondsForDurations: true },
        },
      },
    });
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
  })();
  return installed;
}

/** The SDK's metrics in Prometheus text ("" when no worker ran in this process). */
export async function sdkMetrics(): Promise<string> {
  if (!metricsUrl) return "";
  try {
    const r = await fetch(metricsUrl, { signal: AbortSignal.timeout(2_000) });
    return r.ok ? await r.text() : "";
  } catch {
    return "";
  }
}
