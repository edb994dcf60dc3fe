import { HealthService } from "../../gen/vigil/v1/health_pb.js";
import type { Deps } from "../shared/deps.js";
import type { Feature } from "../shared/feature.js";
import { ApiError } from "../shared/errors.js";

/** GET /health: 200 once the database answers; no credentials. */
export function createHealthFeature(deps: Deps): Feature {
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
            return { status: "ok" };
          },
        },
      },
    ],
  };
}
