import { defineSignal } from "@temporalio/workflow";

// The signals of Vigil's workflows (names are part of their histories: never rename).

/** Re-read the monitor now (a new or earlier deadline, a status change, a pause, a deletion). */
export const wakeSignal = defineSignal("wake");
/** A manual retry of a delivery: attempt now instead of at the planned time. */
export const retryNowSignal = defineSignal("retryNow");
