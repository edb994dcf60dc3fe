import path from "node:path";
import { fileURLToPath } from "node:url";
import type { NativeConnection, Worker, WorkflowBundle } from "@temporalio/worker";
import type { Logger } from "pino";
import type { BackgroundTasks, TaskRecorder } from "../shared/background.js";
import type { Feature } from "../shared/feature.js";
import { connectionOptions, type TemporalLink } from "./link.js";
import { cachedBundle } from "./bundle-cache.js";
import { installTemporalRuntime } from "./runtime.js";

// The Temporal workers: run in the service process where ROLE is `all` or `worker`, when
// TEMPORAL_ADDRESS is set. Three workers on one connection, one per task queue, so that slow webhook
// receivers never hold a slot a deadline check needs, and a burst of monitor wakes never queues
// ahead of the deadline scan:
// - `<base>.deadlines`: the deadline scan workflow (workflows/deadlines.ts) and its local activity;
// - `<base>.uptime`: monitor workflows; their check is a local activity (TEMPORAL_UPTIME_CONCURRENCY);
// - `<base>.webhooks`: delivery workflows and their send activity (TEMPORAL_WEBHOOK_CONCURRENCY).
// The node starts and serves its API whether or not Temporal is reachable: the workers connect in
// the background and reconnect after any failure (1 s doubling to 30 s); their state is on /health
// (`temporalWorker`; `background["temporal workers"]`: each connection of the workers is a pass, then
// their serving another, which fails if they stop unexpectedly) and the SDK's metrics on /metrics. A server outage once they run does not fail
// them (Core retries the polls): the link's probe (probe.ts) tells it to /health instead. stop() shuts them down gracefully
// (TEMPORAL_SHUTDOWN_GRACE_MS for running activities; Core releases its sticky queues).

export const WORKFLOWS_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../workflows/index.ts");

export type WorkerState = "off" | "connecting" | "running" | "unavailable" | "stopped";

/**
 * The activities each task queue's worker serves, given by the features that own the workflows
 * (uptime: the deadline scan and monitors; webhooks: deliveries), wired in server/features.ts.
 */
export interface QueueActivities {
  deadlines: object;
  uptime: object;
  webhooks: object;
}

export interface TemporalWorkerFeature extends Feature {
  state(): WorkerState;
}

/** Releases a created worker that will not serve (its workflow threads would keep the process alive). */
function startAndStop(w: Worker): Promise<void> {
  const run = w.run();
  w.shutdown();
  return run;
}

let bundle: Promise<WorkflowBundle> | undefined;
/**
 * The workflow bundle, once per process (both workers and every app of a test share it), from
 * `dir` when a process built it from the same sources before (bundle-cache.ts).
 */
function workflowBundle(dir: string): Promise<WorkflowBundle> {
  bundle ??= cachedBundle(dir, WORKFLOWS_PATH, () =>
    import("@temporalio/worker").then(({ bundleWorkflowCode }) =>
      bundleWorkflowCode({
        workflowsPath: WORKFLOWS_PATH,
        logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never,
      }),
    ),
  ).catch((err: unknown) => {
    bundle = undefined; // built again by the next run
    throw err;
  });
  return bundle;
}

export function createTemporalFeature(
  deps: { log: Logger; background: BackgroundTasks },
  link: TemporalLink | undefined,
  activities: QueueActivities,
): TemporalWorkerFeature {
  let state: WorkerState = "off";
  let stopping = false;
  let workers: Worker[] = [];
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  let ran = false;
  const pause = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      wakeUp = () => {
        clearTimeout(t);
        r();
      };
    });

  /** Connects and runs the workers (one recorded pass), then serves until they end (another). */
  const runOnce = async (task: TaskRecorder) => {
    const cfg = link!.config;
    let connection: NativeConnection | undefined;
    try {
      const runs = await task.run(async () => {
        await installTemporalRuntime(deps.log);
        // The SDK is loaded here, on a worker node's first run: nodes without TEMPORAL_ADDRESS never load it.
        const { NativeConnection, Worker } = await import("@temporalio/worker");
        const [queues, code] = await Promise.all([link!.queues(), workflowBundle(cfg.bundleDir)]);
        await link!.searchAttributes().catch(() => false);
        connection = await NativeConnection.connect(connectionOptions(cfg));
        const common = {
          connection,
          namespace: cfg.namespace,
          workflowBundle: code,
          shutdownGraceTime: cfg.shutdownGraceMs,
        };
        const created: Worker[] = [];
        try {
          // The deadline scan alone on its queue: one workflow, one task at a time.
          created.push(
            await Worker.create({
              ...common,
              taskQueue: queues.deadlines,
              activities: activities.deadlines,
              maxConcurrentWorkflowTaskExecutions: 2,
              maxConcurrentLocalActivityExecutions: 2,
              maxConcurrentActivityTaskExecutions: 1,
              maxCachedWorkflows: 4,
            }),
          );
          created.push(
            await Worker.create({
              ...common,
              taskQueue: queues.uptime,
              activities: activities.uptime,
              maxConcurrentLocalActivityExecutions: cfg.uptimeConcurrency,
              maxConcurrentActivityTaskExecutions: 16,
            }),
          );
          created.push(
            await Worker.create({
              ...common,
              taskQueue: queues.webhooks,
              activities: activities.webhooks,
              maxConcurrentActivityTaskExecutions: cfg.webhookConcurrency,
              maxConcurrentLocalActivityExecutions: 32,
            }),
          );
        } catch (err) {
          await Promise.allSettled(created.map((w) => startAndStop(w)));
          throw err;
        }
        workers = created;
        // Always run what was created, even when stop() came meanwhile: a created worker that never
        // runs is never shut down and its workflow threads keep the process alive.
        const runs = workers.map((w) => w.run());
        if (stopping) for (const w of workers) w.shutdown();
        else {
          state = "running";
          ran = true;
          deps.log.info({ address: cfg.address, namespace: cfg.namespace, ...queues }, "temporal workers running");
        }
        return runs;
      });
      await task.run(async () => {
        // One worker failing takes the other down too; both are created again.
        await Promise.race(runs).finally(() => {
          for (const w of workers) if (w.getState() === "RUNNING") w.shutdown();
        });
        await Promise.allSettled(runs);
        await Promise.all(runs);
        if (!stopping) throw new Error("temporal workers stopped unexpectedly");
      });
    } finally {
      workers = [];
      await connection?.close().catch(() => undefined);
    }
  };

  return {
    name: "temporal",
    services: [],
    state: () => state,
    async start() {
      if (!link) return;
      const task = deps.background.record("temporal workers", null);
      state = "connecting";
      loop = (async () => {
        for (let failures = 0; !stopping; failures++) {
          try {
            state = "connecting";
            await runOnce(task);
            break; // runOnce returns only once stopping
          } catch (err) {
            if (stopping) break;
            deps.log.error({ err }, "temporal workers unavailable; reconnecting");
          }
          state = "unavailable";
          if (ran) failures = 0; // it ran: start the backoff over
          ran = false;
          await pause(Math.min(30_000, 1_000 * 2 ** Math.min(failures, 5)));
        }
        state = "stopped";
      })();
    },
    async stop() {
      stopping = true;
      wakeUp?.();
      for (const w of workers) if (w.getState() === "RUNNING") w.shutdown();
      await loop;
    },
  };
}
