import { HealthService } from "../../gen/vigil/v1/health_pb.js";
import type { Deps } from "../shared/deps.js";
import type { Feature } from "../shared/feature.js";
import { ApiError } from "../shared/errors.js";
import type { WorkerState } from "../temporal/worker.js";

/**
 * GET /health: 200 once the database answers; no credentials. `temporalWorker` reports this node's
 * Temporal workers; while they cannot run the status is "degraded" (still 200: the API serves).
 */
export function createHealthFeature(deps: Deps, temporalWorker: () => WorkerState): Feature {
  return {
    name: "health",
    services: [
      {
        desc: HealthService,
        impl: {
          async check() {
            try {
              await deps.db.query("SELECT 1");
            } catch {
              throw new ApiError(503, "unavailable", "database unavailable");
            }
            const worker = temporalWorker();
            return { status: worker === "unavailable" || worker === "connecting" ? "degraded" : "ok", temporalWorker: worker };
          },
        },
      },
    ],
  };
}
