import {
  condition,
  continueAsNew,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from "@temporalio/workflow";
import type { DeadlineScanInput, UptimeActivities } from "../src/uptime/activities.js";
import { wakeSignal } from "./signals.js";

// The deadline timer of every monitor of a deployment: ONE workflow (id `<base>.deadlines`, on its
// own task queue `<base>.deadlines`), not one timer per monitor.
//   scan (a LOCAL activity: takes down by compare-and-set every monitor whose deadline passed, with
//   the shared evaluateDeadline(), and reads the next deadline) → sleep until that deadline, but at
//   least `gapMs` after the previous scan → scan again.
// Why one timer: a steady monitor's deadline moves with every heartbeat without Temporal hearing of
// it, so a per-monitor timer must wake once per deadline period to find the later deadline; at
// 10,000 monitors with the default 60 s interval that is 167 workflow tasks/s of pure re-arming. One
// scan reads every deadline at once, so Temporal's load is at most 1/gapMs tasks/s whatever the
// number of monitors and heartbeats, plus the state changes. Detection waits at most gapMs.
// - `wake` (sent when the monitor_wakes outbox is drained: a new or earlier deadline, a status
//   change) cuts a sleep short, never below gapMs since the last scan.
// - Nothing to wait for: re-scan every idleMs.
// Deterministic: only @temporalio/workflow and type imports; times are durations from the activity.

const { scanDeadlines } = proxyLocalActivities<UptimeActivities>({
  startToCloseTimeout: "30 seconds",
  // A scan never gives up: a database outage delays detection, it does not end the watch.
  retry: { initialInterval: "500 milliseconds", backoffCoefficient: 2, maximumInterval: "30 seconds" },
});

/** Scans per run before continue-as-new (or earlier when Temporal suggests it). */
const SCANS_PER_RUN = 500;

export async function deadlineScanWorkflow(input: DeadlineScanInput): Promise<void> {
  let woken = false;
  setHandler(wakeSignal, () => {
    woken = true;
  });
  for (let i = 0; i < SCANS_PER_RUN && !workflowInfo().continueAsNewSuggested; i++) {
    const began = Date.now(); // the workflow task's time: deterministic
    woken = false;
    const r = await scanDeadlines();
    if (r.more) continue; // a full batch was taken down: the rest at once
    const waitMs = r.sleepMs === null ? input.idleMs : r.sleepMs;
    setCurrentDetails(
      r.sleepMs === null
        ? "no deadline pending"
        : `next deadline in ${Math.round(waitMs)} ms; ${r.opened} monitor(s) taken down by the last scan`,
    );
    const gapLeft = () => input.gapMs - (Date.now() - began);
    if (!woken) await condition(() => woken, Math.max(1, waitMs, gapLeft()));
    if (gapLeft() > 0) await sleep(gapLeft());
  }
  await continueAsNew<typeof deadlineScanWorkflow>(input);
}
