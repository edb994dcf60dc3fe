import type { Logger } from "pino";
import type { BackgroundTasks, TaskName } from "./background.js";
import { Coalescer } from "./coalesce.js";
import { failureLevel } from "./periodic.js";

// A background pass woken on demand (a NOTIFY, start-up, a LISTEN reconnection) and by its own timer:
// passes are coalesced (shared/coalesce.ts: one at a time, one more after it when woken meanwhile),
// each recorded under `name` in `tasks` (/health `background`), and each says when the next one is
// due (its timer, at most `maxTimerMs` away). A failed pass is logged (a warning when the database is
// out of reach, shared/periodic.ts failureLevel) and tried again in 1 s. Used by the webhook outbox
// expander (webhooks/expander.ts) and the subscribers' mail sender (subscribers/sender.ts).

export interface PumpOptions {
  tasks: BackgroundTasks;
  log: Logger;
  name: TaskName;
  /** The period /health expects of the task (its safety-net timer). */
  expectedMs: number;
  /** One pass; `stopped()` ends it early. Answers the ms until the next pass, or null for none planned. */
  pass: (stopped: () => boolean) => Promise<number | null>;
  /** The log line of a failed pass. */
  failure: string;
  maxTimerMs?: number;
}

/** setTimeout's longest delay (a longer one fires at once). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** The retry of a failed pass. */
export const PUMP_RETRY_MS = 1_000;

export class CoalescedPump {
  private readonly passes = new Coalescer<void>({ flush: () => this.run() });
  private stopped = true;
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: PumpOptions) {}

  start(): void {
    this.stopped = false;
    this.wake();
  }

  /** Work may be waiting: a pass soon (coalesced; safe to call often). */
  wake(): void {
    if (this.stopped) return;
    void this.passes.submit();
  }

  private async run(): Promise<void> {
    clearTimeout(this.timer);
    const task = this.o.tasks.record(this.o.name, this.o.expectedMs);
    try {
      const next = await task.run(() => this.o.pass(() => this.stopped));
      if (next !== null) this.arm(next);
    } catch (err) {
      this.o.log[failureLevel(err)]({ err }, this.o.failure);
      this.arm(PUMP_RETRY_MS);
    }
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), Math.max(0, Math.min(ms, this.o.maxTimerMs ?? MAX_TIMEOUT_MS)));
    this.timer.unref?.();
  }

  /** No pass after this; waits for the running one. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.passes.idle();
  }
}
