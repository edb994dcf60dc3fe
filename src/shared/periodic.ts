import { performance } from "node:perf_hooks";
import type { BackgroundTasks, TaskName } from "./background.js";
import { isDatabaseUnreachable } from "./pg-errors.js";

// A background pass run every `intervalMs`, never two at once; stop() waits for the running one.
// The pass should check `stopped()` between units of work so that shutdown is prompt. Each pass is
// recorded under `name` in `tasks` (its last run, last error, lag: /health and /metrics).

export interface Periodic {
  stop(): Promise<void>;
}

/**
 * The level a failed background pass is logged at: a database out of reach is an outage the operator
 * sees on /health, not a fault of the pass, so a warning, as for requests (docs/operations.md);
 * anything else is an error.
 */
export const failureLevel = (err: unknown): "warn" | "error" => (isDatabaseUnreachable(err) ? "warn" : "error");

export function startPeriodic(
  tasks: BackgroundTasks,
  name: TaskName,
  intervalMs: number,
  pass: (stopped: () => boolean) => Promise<void>,
): Periodic {
  let stopped = false;
  let running: Promise<void> | undefined;
  const task = tasks.record(name, intervalMs);
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = task
      .run(() => pass(() => stopped))
      .catch((err) => tasks.log[failureLevel(err)]({ err }, `${name} failed`))
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * A duty cycle for a background pass's batches: `paced(work)` runs one batch, then waits so that
 * batches take at most `duty` of the wall time (a batch of 40 ms at duty 0.25 is followed by 120 ms
 * of rest; duty 1 never waits). The pass then leaves the database most of its time for the work
 * requests are waiting on (ingest), on any node, whatever the batch size. A rest is at most
 * `maxRestMs` and ends early once `stopped()`.
 */
export function dutyCycle(duty: number, stopped: () => boolean, maxRestMs = 5_000) {
  if (!(duty > 0 && duty <= 1)) throw new RangeError(`duty cycle must be in (0, 1]: ${duty}`);
  return async <T>(work: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const result = await work();
    const until = performance.now() + Math.min(maxRestMs, ((performance.now() - t0) * (1 - duty)) / duty);
    while (!stopped() && performance.now() < until) {
      await new Promise((r) => setTimeout(r, Math.min(100, until - performance.now())));
    }
    return result;
  };
}
