import { condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from "@temporalio/workflow";
import type { UptimeActivities } from "../src/uptime/activities.js";
import { wakeSignal } from "./signals.js";

// VERSION 1 of the monitor loop, kept only so that histories started before the `deadline-v2` patch
// replay (test/temporal/histories/v1-*.json). New runs take the v2 loop in uptime.ts. Do not edit.
//
// One workflow per monitor (id `monitor-<monitorId>`): check the deadline through an activity (which
// re-reads the database, decides with the shared pure function and applies a compare-and-set), sleep
// until the deadline it returns, and check again. Heartbeats never call Temporal: on waking, the check
// finds the later deadline and the workflow sleeps again. A signal wakes it early when a deadline is
// new or earlier (monitor came up, resumed, interval shortened) or the monitor was deleted.
// Deterministic: only @temporalio/workflow and type imports.

const { checkMonitorDeadline } = proxyActivities<UptimeActivities>({
  startToCloseTimeout: "30 seconds",
  retry: { initialInterval: "1 second", backoffCoefficient: 2, maximumInterval: "30 seconds" },
});

/** Checks per run before continue-as-new keeps the history short (about 10 events per check). */
const CHECKS_PER_RUN = 200;
/** Never sleep less than this (a clock skew between worker and workflow time must not spin). */
const MIN_SLEEP_MS = 50;

export async function monitorLoopV1(input: { monitorId: string }): Promise<void> {
  let woken = false;
  setHandler(wakeSignal, () => {
    woken = true;
  });
  for (let i = 0; i < CHECKS_PER_RUN && !workflowInfo().continueAsNewSuggested; i++) {
    woken = false; // a signal during the check means: check again
    const r = await checkMonitorDeadline(input.monitorId);
    if (!r.exists) return;
    if (woken) continue;
    if (r.nextCheckAt === null)
      await condition(() => woken); // down, paused or unknown: wait for a signal
    else await condition(() => woken, Math.max(MIN_SLEEP_MS, r.nextCheckAt - Date.now()));
  }
  await continueAsNew(input);
}
