import path from "node:path";
import { fileURLToPath } from "node:url";
import { NativeConnection, Worker } from "@temporalio/worker";
import type { Deps } from "../shared/deps.js";
import type { Feature } from "../shared/feature.js";
import { createActivities } from "./activities.js";
import { closeTemporalClients, type TemporalConfig } from "./client.js";

// The Temporal worker: runs in the service process where ROLE is `all` or `worker` (so
// `npm run worker` is a worker node), when TEMPORAL_ADDRESS is set. It serves every workflow of
// workflows/index.ts and every activity of activities.ts on TEMPORAL_TASK_QUEUE.

export const WORKFLOWS_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../workflows/index.ts");

export function createTemporalFeature(deps: Deps): Feature {
  const cfg: TemporalConfig | undefined = deps.config.temporal;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  let connection: NativeConnection | undefined;
  return {
    name: "temporal",
    services: [],
    async start() {
      if (!cfg) return;
      connection = await NativeConnection.connect({ address: cfg.address });
      worker = await Worker.create({ connection, namespace: cfg.namespace, taskQueue: cfg.taskQueue, workflowsPath: WORKFLOWS_PATH, activities: createActivities(deps) });
      running = worker.run().catch((err) => deps.log.error({ err }, "temporal worker stopped with an error"));
      deps.log.info({ address: cfg.address, namespace: cfg.namespace, taskQueue: cfg.taskQueue }, "temporal worker running");
    },
    async stop() {
      if (worker && worker.getState() === "RUNNING") worker.shutdown();
      await running;
      await connection?.close().catch(() => undefined);
      await closeTemporalClients();
    },
  };
}
