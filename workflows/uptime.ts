import {
  condition,
  continueAsNew,
  patched,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from "@temporalio/workflow";
import { VigilMonitorSlug, VigilMonitorStatus } from "../src/temporal/search-attributes.js";
import type { MonitorWorkflowInput, UptimeActivities } from "../src/uptime/activities.js";
import { wakeSignal } from "./signals.js";
import { monitorLoopV1 } from "./uptime-v1.js";

// One workflow per watched monitor (id `monitor-<monitorId>`, task queue `<base>.uptime`): what
// operators find a monitor by (search attributes VigilMonitorStatus/Slug kept current, a summary),
// and the monitor's own re-check:
//   check (a LOCAL activity: re-reads the monitor, decides with the shared evaluateDeadline(), takes
//   it down by compare-and-set) → wait for a wake (at most idleCheckMs) → check again.
// - Since `deadline-v3` the deadline itself is timed by the deadline scan (deadlines.ts: one timer
//   for every monitor), which wakes this workflow through the outbox when it takes the monitor
//   down. Before, this loop slept until the deadline it read, and so woke once per deadline period
//   even when heartbeats kept moving the deadline: Temporal's load grew with the monitor count /
//   the period, not with state changes.
// - Heartbeats never call Temporal. `wake` (sent from the monitor_wakes outbox) cuts a wait short: a
//   new or earlier deadline, a status change, a pause, a deletion.
// - A paused or deleted monitor ends the workflow.
// - The check returns a DURATION measured on Vigil's clock, never an absolute time: the workflow's
//   clock (the task's start) is not Vigil's.
// Versioning: runs started before the `deadline-v2` patch keep the v1 loop (uptime-v1.ts), runs
// started before `deadline-v3` keep sleeping until their deadline; every later change to this loop
// goes behind a new patched() id, and CI replays the saved histories.
// Deterministic: only @temporalio/workflow, @temporalio/common and pure or type imports.

const { checkMonitor } = proxyLocalActivities<UptimeActivities>({
  startToCloseTimeout: "10 seconds",
  // A deadline check never gives up: a database outage delays detection, it does not end the watch.
  retry: { initialInterval: "500 milliseconds", backoffCoefficient: 2, maximumInterval: "30 seconds" },
});

/** Checks per run before continue-as-new (or earlier when Temporal suggests it). */
const CHECKS_PER_RUN = 500;
const MIN_SLEEP_MS = 20;

export async function monitorDeadlineWorkflow(input: MonitorWorkflowInput): Promise<void> {
  if (!patched("deadline-v2")) return monitorLoopV1(input);
  const idleMs = input.idleCheckMs ?? 3_600_000;
  const scanned = patched("deadline-v3"); // the deadline scan times the deadline
  let woken = false;
  setHandler(wakeSignal, () => {
    woken = true;
  });
  let shown: { status: string; slug: string } | undefined;
  for (let i = 0; i < CHECKS_PER_RUN && !workflowInfo().continueAsNewSuggested; i++) {
    woken = false; // a wake during the check means: check again
    const r = await checkMonitor(input.monitorId);
    if (input.attributes && r.slug !== null && (shown?.status !== r.status || shown.slug !== r.slug)) {
      upsertSearchAttributes([
        { key: VigilMonitorStatus, value: r.status },
        { key: VigilMonitorSlug, value: r.slug },
      ]);
    }
    shown = { status: r.status, slug: r.slug ?? shown?.slug ?? "" };
    if (r.stop) {
      setCurrentDetails(`monitor ${r.status}: watch ended`);
      return;
    }
    if (woken) continue;
    if (scanned) {
      setCurrentDetails(`monitor ${r.status}: waiting for a change`);
      await condition(() => woken, idleMs);
      continue;
    }
    const sleepMs = r.sleepMs === null ? idleMs : Math.max(MIN_SLEEP_MS, r.sleepMs);
    setCurrentDetails(
      r.sleepMs === null
        ? `monitor ${r.status}: waiting for a heartbeat`
        : `monitor ${r.status}: next deadline in ${Math.round(sleepMs / 1000)} s`,
    );
    await condition(() => woken, sleepMs);
  }
  await continueAsNew<typeof monitorDeadlineWorkflow>(input);
}
