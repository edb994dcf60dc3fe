import { JobsService } from "../../gen/vigil/v1/jobs_pb.js";
import type { DerivedRecords } from "../events/pipeline.js";
import type { Deps } from "../platform/deps.js";
import { notFound } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { toJob } from "./messages.js";
import { createJobRunner } from "./runner.js";
import { getJob } from "./store.js";

// Durable background jobs a request started (deleting a user's data; docs/lifecycle.md "## Jobs"):
// GetJob reads one (owner or admin, like the requests that start them); the runner (runner.ts)
// runs them on worker nodes.

const JOB_ID = /^job_[0-9A-Za-z]{20}$/;

export function createJobsFeature(
  deps: Pick<Deps, "db" | "log" | "clock" | "auth" | "background">,
  derived: DerivedRecords,
): Feature {
  const { db, auth } = deps;
  const runner = createJobRunner(deps, derived);
  return {
    name: "jobs",
    services: [
      bind(JobsService, {
        async getJob(req, ctx) {
          const scope = await auth.project(ctx, req.projectId, "admin");
          // Another project's job is as unknown as a job that never existed.
          const row = JOB_ID.test(req.jobId) ? await getJob(db, scope.projectId, req.jobId) : undefined;
          if (!row) throw notFound("job");
          return { data: toJob(row) };
        },
      }),
    ],
    async start() {
      runner.start();
    },
    async stop() {
      await runner.stop();
    },
  };
}
