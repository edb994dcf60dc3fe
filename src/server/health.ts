import { HealthService } from "../../gen/vigil/v1/health_pb.js";
import type { Deps } from "../platform/deps.js";
import { bind, type Feature } from "../shared/feature.js";
import type { BackgroundTaskReport } from "../shared/background.js";
import { ApiError } from "../shared/errors.js";
import { missingMigrations } from "../storage/migrate.js";
import type { TemporalServerState } from "../temporal/probe.js";
import type { WorkerState } from "../temporal/worker.js";

/** What this node can do now: the one source of GET /health and grpc.health.v1 (grpc-health.ts). */
export interface Readiness {
  /** Null when the node serves its API; else why not (database unreachable, schema not migrated). */
  unavailable: string | null;
  /** "ok"; "degraded" while this node's Temporal workers cannot run or the Temporal server does not answer it. */
  status: "ok" | "degraded";
  /** "running" only while the server answers too: the SDK's worker stays RUNNING through an outage. */
  temporalWorker: WorkerState;
  /** The Temporal frontend as this node's probe finds it (src/temporal/probe.ts); "off" without TEMPORAL_ADDRESS. */
  temporalServer: TemporalServerState | "off";
  /** This node's background tasks by name: last run, last error, lag (src/shared/background.ts). */
  background: Record<string, BackgroundTaskReport>;
}

export interface HealthFeature extends Feature {
  readiness(): Promise<Readiness>;
}

/**
 * GET /health: 200 once the database answers and every migration of this build is applied; no
 * credentials. `temporalWorker` reports this node's Temporal workers and `temporalServer` whether the
 * Temporal frontend answers this node's probe; while the workers cannot run or the server does not
 * answer, the status is "degraded" (still 200: the API serves).
 */
export function createHealthFeature(
  deps: Pick<Deps, "db" | "temporal" | "background">,
  temporalWorker: () => WorkerState,
): HealthFeature {
  async function readiness(): Promise<Readiness> {
    const server = deps.temporal ? deps.temporal.server() : "off";
    const loop = temporalWorker();
    // The SDK's workers retry their polls through an outage without failing: running, but idle.
    const worker = loop === "running" && server === "unreachable" ? "unavailable" : loop;
    const status = worker === "unavailable" || worker === "connecting" || server === "unreachable" ? "degraded" : "ok";
    let unavailable: string | null = null;
    try {
      const missing = await missingMigrations(deps.db);
      if (missing.length > 0)
        unavailable = `database schema not migrated (${missing.length} migration(s) missing, e.g. ${missing[0]})`;
    } catch {
      unavailable = "database unavailable";
    }
    return {
      unavailable,
      status,
      temporalWorker: worker,
      temporalServer: server,
      background: deps.background.report(),
    };
  }
  return {
    name: "health",
    readiness,
    services: [
      bind(HealthService, {
        async check() {
          const r = await readiness();
          if (r.unavailable) throw new ApiError(503, "unavailable", r.unavailable);
          const background = Object.fromEntries(
            Object.entries(r.background).map(([name, t]) => [
              name,
              {
                lastRunAt: t.lastRunAt ?? undefined,
                lastError: t.lastError ?? undefined,
                lastErrorAt: t.lastErrorAt ?? undefined,
                lagMs: BigInt(t.lagMs),
                runs: BigInt(t.runs),
                failures: BigInt(t.failures),
              },
            ]),
          );
          return { status: r.status, temporalWorker: r.temporalWorker, temporalServer: r.temporalServer, background };
        },
      }),
    ],
  };
}
