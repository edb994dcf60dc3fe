import { createAuthFeature } from "../auth/service.js";
import { createProjectsFeature } from "../projects/service.js";
import type { Deps } from "../shared/deps.js";
import type { Feature } from "../shared/feature.js";
import { createHealthFeature } from "./health.js";

// Every feature of the service, in start order. A feature adds its line here.
export async function createFeatures(deps: Deps): Promise<Feature[]> {
  return [
    createHealthFeature(deps),
    createAuthFeature(deps),
    createProjectsFeature(deps),
  ];
}
