import type { Deps } from "../shared/deps.js";
import { monitorWorkflowId, temporalClient, type TemporalConfig } from "../temporal/client.js";
import type { DeadlineChange, DeadlineRunner } from "./wake.js";

// The Temporal deadline runner (TEMPORAL_ADDRESS set): one monitorDeadlineWorkflow per monitor.
// Only a new or earlier deadline (came up, resumed, interval shortened) and a deletion call Temporal
// (signal-with-start of `wake`, which starts the workflow when it is not running); steady heartbeats
// never do. At start-up every monitor with a deadline is signalled once (idempotent), so monitors
// armed while Temporal was unreachable get their workflow.

const START_CONCURRENCY = 16;

export class TemporalDeadlineRunner implements DeadlineRunner {
  private inflight = new Set<Promise<void>>();

  constructor(private readonly deps: Deps, private readonly cfg: TemporalConfig) {}

  async start(): Promise<void> {
    const r = await this.deps.db.query<{ id: string }>("SELECT id FROM monitors WHERE deadline_at IS NOT NULL ORDER BY deadline_at");
    const ids = r.rows.map((x) => x.id);
    const work = async () => {
      for (let id = ids.shift(); id !== undefined; id = ids.shift()) await this.wake(id).catch((err) => this.deps.log.warn({ err, monitorId: id }, "could not start monitor workflow"));
    };
    await Promise.all(Array.from({ length: START_CONCURRENCY }, work));
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }

  changed(changes: DeadlineChange[]): void {
    for (const c of changes) {
      if (!c.wake && !c.deleted) continue;
      const p = (c.deleted ? this.signal(c.id) : this.wake(c.id))
        .catch((err) => this.deps.log.error({ err, monitorId: c.id }, "temporal signal failed; the monitor workflow is started at the next worker start"))
        .finally(() => this.inflight.delete(p));
      this.inflight.add(p);
    }
  }

  /** Starts the monitor's workflow if needed and wakes it to re-read its deadline. */
  async wake(monitorId: string): Promise<void> {
    const client = await temporalClient(this.cfg);
    await client.workflow.signalWithStart("monitorDeadlineWorkflow", {
      workflowId: monitorWorkflowId(monitorId),
      taskQueue: this.cfg.taskQueue,
      args: [{ monitorId }],
      signal: "wake",
      signalArgs: [],
    });
  }

  private async signal(monitorId: string): Promise<void> {
    const client = await temporalClient(this.cfg);
    await client.workflow
      .getHandle(monitorWorkflowId(monitorId))
      .signal("wake")
      .catch(() => undefined); // no workflow: nothing to stop
  }
}
