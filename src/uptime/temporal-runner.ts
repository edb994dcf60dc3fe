import type { UptimeDeps } from "./deps.js";
import { Coalescer } from "../shared/coalesce.js";
import { forEachLimited } from "../shared/limited.js";
import { startPeriodic, type Periodic } from "../shared/periodic.js";
import type { TemporalLink } from "../temporal/link.js";
import { VigilMonitorId, VigilMonitorSlug, VigilMonitorStatus, VigilProjectId } from "../temporal/search-attributes.js";
import type { DeadlineScanInput, MonitorWorkflowInput } from "./activities.js";
import { checkDeadlines } from "./detect.js";
import { advanceDueWindows } from "./maintenance.js";
import { enqueueWakes, type DeadlineChange, type DeadlineRunner, type DeadlineScanHooks } from "./wake.js";

// The Temporal deadline runner (TEMPORAL_ADDRESS set): one deadlineScanWorkflow per deployment
// (workflows/deadlines.ts, id and task queue `<base>.deadlines`) times every monitor's deadline and
// takes overdue monitors down; one monitorDeadlineWorkflow per watched monitor (workflows/uptime.ts)
// shows its status to operators and re-checks it on every change. How no committed change can miss
// Temporal:
// 1. Outbox. The transaction that changes a monitor (a new or earlier deadline, a status change, a
//    pause, a deletion) upserts its monitor_wakes row (wake.ts). drain() turns rows into signals:
//    `start` rows signal-with-start (a run begins when none is open), `signal` rows only wake an
//    open run. A row is deleted only after Temporal accepted the call, and only if no newer change
//    replaced it meanwhile (seq). Rows are leased while sent; a failure backs off (lease) and any
//    node retries: the committing node at once, worker nodes every drainMs. A batch holding a new
//    deadline also wakes the deadline scan (signal-with-start: it is started if missing).
// 2. Reconciler (worker nodes, every TEMPORAL_RECONCILE_MS): a monitor whose deadline passed more
//    than RECONCILE_SLACK_MS ago was missed (its run was terminated, or Temporal is down): it is
//    checked here with the same checkDeadlines() (compare-and-set: never a second incident) and its
//    workflow is woken through the outbox. It also starts the deadline scan if it is not running
//    (terminated by an operator): start with USE_EXISTING, no history event when it runs.
// 3. Start-up sweep (one worker node at a time, asynchronous): every monitor with a deadline gets
//    its run started if none is open (workflowIdConflictPolicy USE_EXISTING: no history event in an
//    open run), e.g. after switching from the embedded runner.

/** A deadline missed by this much is acted on by the reconciler. */
const RECONCILE_SLACK_MS = 2_000;
const DRAIN_BATCH = 200;
/** How long the reconciler's start of the deadline scan may take (the client retries UNAVAILABLE). */
const ENSURE_TIMEOUT_MS = 10_000;
const SEND_CONCURRENCY = 32;
const SWEEP_LOCK = 0x76_69_67_01; // pg advisory lock id of the start-up sweep ("vig" 1)

interface WakeRow {
  monitor_id: string;
  kind: "start" | "signal";
  seq: string;
  project_id: string | null;
  slug: string | null;
  status: string | null;
}

const monitorWorkflowId = (monitorId: string) => `monitor-${monitorId}`;

export class TemporalDeadlineRunner implements DeadlineRunner, DeadlineScanHooks {
  /** Drain passes (shared/coalesce.ts): one at a time, one more after it when asked meanwhile. */
  private readonly passes = new Coalescer<void>({ flush: () => this.drainPass() });
  private stopped = false;
  /** stop() began: the last drain sends what the rate allows now and does not wait for more. */
  private closing = false;
  /** Rows sent in the current one-second window (TEMPORAL_WAKE_RATE). */
  private window = { start: 0, sent: 0 };
  private periodic: Periodic[] = [];
  private sweeping: Promise<void> | undefined;
  private firstPass: Promise<void> | undefined;
  private ensuring: Promise<void> | undefined;
  /** The reconciler's checks of other due times the scan serves (watchDue). */
  private readonly overdueChecks: ((before: Date) => Promise<boolean>)[] = [];

  constructor(
    private readonly deps: UptimeDeps,
    private readonly link: TemporalLink,
  ) {}

  /** Worker nodes: the periodic drain (leftovers of other nodes), the reconciler, the sweep. */
  async start(): Promise<void> {
    const cfg = this.link.config;
    this.periodic.push(
      startPeriodic(this.deps.background, "temporal wake drain", Math.min(1_000, cfg.reconcileMs), () => this.drain()),
    );
    this.periodic.push(
      startPeriodic(this.deps.background, "uptime reconciler", cfg.reconcileMs, () => this.reconcile()),
    );
    this.sweeping = this.startupSweep().catch((err) =>
      this.deps.log.warn({ err }, "temporal: start-up sweep failed; the reconciler covers missed deadlines"),
    );
    // A deadline missed while no node ran is acted on at start-up, as the embedded runner does.
    this.firstPass = this.reconcile().catch((err) =>
      this.deps.log.warn({ err }, "temporal: start-up reconciler pass failed"),
    );
  }

  async stop(): Promise<void> {
    // The outbox keeps whatever is not sent; one last drain sends what this node just committed.
    this.closing = true;
    await this.drain().catch(() => undefined);
    this.stopped = true;
    await Promise.all(this.periodic.map((p) => p.stop()));
    await this.ensuring;
    await this.sweeping;
    await this.firstPass;
  }

  /** After a local commit: its outbox rows are there; send them now. */
  changed(changes: DeadlineChange[]): void {
    if (!changes.some((c) => c.wake || c.deleted || c.statusChanged)) return;
    void this.drain().catch((err) =>
      this.deps.log.warn({ err }, "temporal: wake drain failed; retried from the outbox"),
    );
  }

  /** Sends every due outbox row (coalesced: one pass at a time, another if asked meanwhile). */
  drain(): Promise<void> {
    return this.passes.submit();
  }

  private async drainPass(): Promise<void> {
    for (;;) {
      if (this.stopped) break;
      const grant = this.take(DRAIN_BATCH);
      if (!grant) {
        if (this.closing) break;
        await new Promise((r) => setTimeout(r, Math.max(1, this.window.start + 1_000 - Date.now())));
        continue;
      }
      const got = await this.drainOnce(grant);
      this.window.sent -= grant - got; // unused grant goes back
      if (got < grant) break;
    }
  }

  /**
   * Up to n rows may be sent now: at most TEMPORAL_WAKE_RATE per second per node, so that a burst of
   * monitor wakes (a mass outage, thousands of new monitors) cannot crowd out the deadline scan's
   * own tasks on the Temporal server; the rest waits in the outbox (the monitors' workflows and their
   * search attributes catch up; deadlines and incidents do not wait for them).
   */
  private take(n: number): number {
    const now = Date.now();
    if (now - this.window.start >= 1_000) this.window = { start: now, sent: 0 };
    const grant = Math.max(0, Math.min(n, this.link.config.wakeRate - this.window.sent));
    this.window.sent += grant;
    return grant;
  }

  private async drainOnce(limit: number): Promise<number> {
    const now = this.deps.clock();
    const claimed = await this.deps.db.query<Pick<WakeRow, "monitor_id" | "kind" | "seq">>(
      `WITH picked AS (
         SELECT monitor_id FROM monitor_wakes WHERE lease_until <= $1 ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)
       UPDATE monitor_wakes w SET lease_until = $1::timestamptz + make_interval(secs => least($3::float8, 2 * 2 ^ least(w.attempts, 10))), attempts = w.attempts + 1
       FROM picked WHERE w.monitor_id = picked.monitor_id
       RETURNING w.monitor_id, w.kind, w.seq::text AS seq`,
      [now, limit, this.link.config.reconcileMs / 1000],
    );
    if (!claimed.rows.length) return 0;
    // The monitors are read by a second statement, never joined into the claim: when the claim
    // waits for a row that a concurrent change replaces, it locks the new row version (kind, seq)
    // but would read the monitor from its own, older snapshot, e.g. a 'signal' row of a monitor
    // that just went down beside its status before ('up'): sent as a plain signal to a run never
    // started, the down monitor would stay unwatched. This statement's snapshot holds the commit
    // that wrote every claimed row, and with it the monitor as that change left it (or newer).
    const m = await this.deps.db.query<{ id: string; project_id: string; slug: string; status: string }>(
      "SELECT id, project_id, slug, status FROM monitors WHERE id = ANY($1)",
      [claimed.rows.map((w) => w.monitor_id)],
    );
    const monitors = new Map(m.rows.map((x) => [x.id, x]));
    const rows = claimed.rows.map((w): WakeRow => {
      const x = monitors.get(w.monitor_id);
      return { ...w, project_id: x?.project_id ?? null, slug: x?.slug ?? null, status: x?.status ?? null };
    });
    const sent: WakeRow[] = [];
    let failure: unknown;
    await forEachLimited(rows, SEND_CONCURRENCY, async (w) => {
      try {
        await this.send(w);
        sent.push(w);
      } catch (err) {
        failure = err; // the others are still sent; this one's lease brings it back
      }
    });
    // A new or earlier deadline may come before the scan's next wake-up (a down monitor has none).
    if (sent.some((w) => w.kind === "start" && w.status !== "down")) {
      try {
        await this.wakeScan();
      } catch (err) {
        failure = err;
        sent.length = 0; // kept: the retry wakes the scan again
      }
    }
    if (sent.length) {
      await this.deps.db.query(
        "DELETE FROM monitor_wakes w USING unnest($1::text[], $2::bigint[]) AS s(id, seq) WHERE w.monitor_id = s.id AND w.seq = s.seq",
        [sent.map((w) => w.monitor_id), sent.map((w) => w.seq)],
      );
    }
    if (failure) throw failure;
    return rows.length;
  }

  /** One outbox row: signal-with-start (the monitor has a deadline or is down) or a plain signal. */
  private async send(w: WakeRow): Promise<void> {
    const client = await this.link.client();
    // A down monitor is watched too (its run idles and shows it down): its wake starts a run if
    // none is open, even as a 'signal' row (it went down with no deadline: born down, or its
    // 'start' row was replaced by the down change before it was sent).
    if (w.project_id === null || (w.kind === "signal" && w.status !== "down")) {
      try {
        await client.workflow.getHandle(monitorWorkflowId(w.monitor_id)).signal("wake");
      } catch (err) {
        // No open run: nothing to tell. (The SDK is loaded already: the link's client() loaded it.)
        const { WorkflowNotFoundError } = await import("@temporalio/client");
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
      return;
    }
    await client.workflow.signalWithStart("monitorDeadlineWorkflow", {
      ...(await this.startOptions(w)),
      signal: "wake",
      signalArgs: [],
    });
  }

  private async startOptions(w: Pick<WakeRow, "monitor_id" | "project_id" | "slug" | "status">) {
    const [queues, attributes] = await Promise.all([this.link.queues(), this.link.searchAttributes()]);
    const input: MonitorWorkflowInput = {
      monitorId: w.monitor_id,
      idleCheckMs: this.link.config.idleCheckMs,
      attributes,
    };
    return {
      workflowId: monitorWorkflowId(w.monitor_id),
      taskQueue: queues.uptime,
      args: [input] as [MonitorWorkflowInput],
      staticSummary: `Watch of monitor '${w.slug}' (${w.monitor_id}) in project ${w.project_id}`,
      ...(attributes
        ? {
            typedSearchAttributes: [
              { key: VigilProjectId, value: w.project_id ?? "" },
              { key: VigilMonitorId, value: w.monitor_id },
              { key: VigilMonitorSlug, value: w.slug ?? "" },
              { key: VigilMonitorStatus, value: w.status ?? "unknown" },
            ],
          }
        : {}),
    };
  }

  private async scanOptions() {
    const queues = await this.link.queues();
    const input: DeadlineScanInput = { gapMs: this.link.config.scanGapMs, idleMs: this.link.config.idleCheckMs };
    return {
      workflowId: queues.deadlines,
      taskQueue: queues.deadlines,
      args: [input] as [DeadlineScanInput],
      staticSummary: "Deadline timer of every monitor of this deployment: takes overdue monitors down",
    };
  }

  /**
   * A due time the deadline scan acts on was set or moved: a maintenance window's (maintenance.ts)
   * or an alert evaluation's (alerts/service.ts). The scan reads it at once. Best effort: without
   * the signal the scan finds it at its next wake-up, and the reconciler, once it is overdue by
   * RECONCILE_SLACK_MS, applies a window itself and wakes the scan for an alert (`watchDue`).
   */
  dueTimeSet(): void {
    if (this.stopped) return;
    void this.wakeScan().catch((err) =>
      this.deps.log.warn({ err }, "temporal: waking the deadline scan for a new due time failed"),
    );
  }

  /**
   * Adds a check the reconciler runs on each pass: true when some due time the scan serves (an alert
   * evaluation) is earlier than `before`, i.e. the scan missed it (a lost wake while it slept its
   * idle time); the reconciler then wakes the scan.
   */
  watchDue(overdue: (before: Date) => Promise<boolean>): void {
    this.overdueChecks.push(overdue);
  }

  /** Cuts the deadline scan's sleep short (starting it if it is not running). */
  private async wakeScan(): Promise<void> {
    const client = await this.link.client();
    await client.workflow.signalWithStart("deadlineScanWorkflow", {
      ...(await this.scanOptions()),
      signal: "wake",
      signalArgs: [],
    });
  }

  /** Starts the deadline scan unless it runs (no history event in a running scan). */
  private async ensureScan(): Promise<void> {
    const client = await this.link.client();
    const options = { ...(await this.scanOptions()), workflowIdConflictPolicy: "USE_EXISTING" as const };
    await client.withDeadline(Date.now() + ENSURE_TIMEOUT_MS, () =>
      client.workflow.start("deadlineScanWorkflow", options),
    );
  }

  sweep(): Promise<void> {
    return this.reconcile();
  }

  /** Missed deadlines: check them here (CAS), then wake their workflows through the outbox. */
  async reconcile(): Promise<void> {
    // In the background: a Temporal outage must not hold up the deadline check below.
    this.ensuring ??= this.ensureScan()
      .catch((err) =>
        this.deps.log.warn({ err }, "temporal: could not start the deadline scan; retried by the next reconciler pass"),
      )
      .finally(() => (this.ensuring = undefined));
    const now = this.deps.clock();
    // Maintenance windows the scan missed (a lost wake while Temporal was away, the scan itself
    // gone): applied here, as the deadlines below, once overdue by the slack.
    const windows = await advanceDueWindows(
      this.deps,
      { changed: (c) => this.changed(c), due: () => undefined },
      new Date(now.getTime() - RECONCILE_SLACK_MS),
      1000,
      true,
    );
    if (windows.applied)
      this.deps.log.warn({ windows: windows.applied }, "temporal: maintenance windows missed by the scan were applied");
    // Other due times the scan serves (alert evaluations), overdue by the slack: the scan missed them.
    const before = new Date(now.getTime() - RECONCILE_SLACK_MS);
    for (const overdue of this.overdueChecks)
      if (await overdue(before)) {
        this.deps.log.warn("temporal: due times missed by the deadline scan; waking it");
        await this.wakeScan();
        break;
      }
    const r = await this.deps.db.query<{ id: string }>("SELECT id FROM monitors WHERE deadline_at < $1 LIMIT 1000", [
      new Date(now.getTime() - RECONCILE_SLACK_MS),
    ]);
    if (!r.rows.length) return;
    const ids = r.rows.map((x) => x.id);
    const res = await checkDeadlines(this.deps, ids, now);
    this.deps.log.warn(
      { monitors: ids.length, opened: res.opened.length },
      "temporal: deadlines missed by their workflows were checked by the reconciler",
    );
    await enqueueWakes(
      this.deps.db,
      ids.map((id) => ({ id, kind: "start" as const })),
    );
    await this.drain();
  }

  /** Starts the run of every monitor with a deadline where none is open; one node at a time. */
  private async startupSweep(): Promise<void> {
    const c = await this.deps.db.connect();
    try {
      const got = await c.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1) AS ok", [SWEEP_LOCK]);
      if (!got.rows[0]?.ok) return;
      try {
        const rows = (
          await c.query<WakeRow>(
            "SELECT id AS monitor_id, project_id, slug, status FROM monitors WHERE deadline_at IS NOT NULL OR status = 'down' ORDER BY deadline_at NULLS LAST",
          )
        ).rows;
        const client = await this.link.client();
        await forEachLimited(
          rows,
          16,
          async (w) => {
            await client.workflow.start("monitorDeadlineWorkflow", {
              ...(await this.startOptions(w)),
              workflowIdConflictPolicy: "USE_EXISTING",
            });
          },
          () => !this.stopped,
        );
      } finally {
        await c.query("SELECT pg_advisory_unlock($1)", [SWEEP_LOCK]);
      }
    } finally {
      c.release();
    }
  }
}
