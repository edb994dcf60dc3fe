import { JobsService } from "../../gen/vigil/v1/jobs_pb.js";
import type { Deps } from "../platform/deps.js";
import { ApiError } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";

// Durable background jobs a request started (deleting a user's data). BASE STUB (branch h19): the
// jobs helper replaces this with the real runner, store and handler.

export function createJobsFeature(deps: Pick<Deps, "auth">): Feature {
  const { auth } = deps;
  return {
    name: "jobs",
    services: [
      bind(JobsService, {
        async getJob(req, ctx) {
          await auth.project(ctx, req.projectId, "admin");
          throw new ApiError(404, "not_found", "job not found");
        },
      }),
    ],
  };
}
