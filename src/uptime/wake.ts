import type { Queryable } from "../storage/db.js";

// How deadline changes travel. Every writer reports them to its own runner after commit; the rare
// changes other nodes' timers must learn of (a new deadline, or an earlier one) are also announced
// with NOTIFY inside the writing transaction, so they arrive exactly when the change commits.
// Later deadlines need no announcement: a stale timer fires early, re-reads, and re-arms.

export const WAKE_CHANNEL = "vigil_uptime_wake";

export interface DeadlineChange {
  id: string;
  /** The deadline now in force (epoch ms), or null when none applies. */
  deadlineAt: number | null;
  /** A new or earlier deadline: other nodes must learn of it. */
  wake: boolean;
  /** The monitor was deleted. */
  deleted?: boolean;
  /** Its status changed (Temporal mode: the workflow re-reads it, and ends on a pause). */
  statusChanged?: boolean;
}

/**
 * Inside the writing transaction: NOTIFY other nodes' embedded timers of new or earlier deadlines,
 * or, in Temporal mode (`outbox`), upsert the monitor_wakes rows that the runner turns into
 * signals (temporal-runner.ts), so a committed change cannot miss its workflow.
 */
export async function notifyWake(c: Queryable, changes: DeadlineChange[], outbox = false): Promise<void> {
  if (outbox) {
    const wake = changes.filter((x) => x.wake || x.deleted || x.statusChanged);
    await enqueueWakes(
      c,
      wake.map((x) => ({ id: x.id, kind: x.deadlineAt !== null ? "start" : "signal" })),
    );
    return;
  }
  const wake = changes.filter((x) => x.wake && x.deadlineAt !== null);
  if (!wake.length) return;
  await c.query(`SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, [
    WAKE_CHANNEL,
    wake.map((x) => `${x.id} ${x.deadlineAt}`),
  ]);
}

/**
 * Upserts monitor_wakes rows (Temporal mode): a newer wake replaces an unsent one (new seq, no
 * lease, attempts reset), so the drainer never deletes a wake it did not send.
 */
export async function enqueueWakes(c: Queryable, wakes: { id: string; kind: "start" | "signal" }[]): Promise<void> {
  if (!wakes.length) return;
  await c.query(
    `INSERT INTO monitor_wakes (monitor_id, kind, created_at) SELECT id, kind, now() FROM unnest($1::text[], $2::text[]) AS u(id, kind)
     ON CONFLICT (monitor_id) DO UPDATE SET kind = EXCLUDED.kind, seq = nextval('monitor_wakes_seq'), lease_until = '-infinity', attempts = 0`,
    [wakes.map((w) => w.id), wakes.map((w) => w.kind)],
  );
}

export function parseWake(payload: string | undefined): { id: string; deadlineAt: number } | undefined {
  const m = /^(\S+) (\d+)$/.exec(payload ?? "");
  return m ? { id: m[1], deadlineAt: Number(m[2]) } : undefined;
}

/** What a deadline runner (embedded scheduler or Temporal) offers the rest of the feature. */
export interface DeadlineRunner {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Called after a local commit with the deadlines it set. */
  changed(changes: DeadlineChange[]): void;
  /** Acts now on every deadline already due (the embedded re-scan; Temporal's reconciler pass). */
  sweep(): Promise<void>;
}

/**
 * Temporal mode: the deadline scan as other features whose due times ride on it see it (alert
 * evaluations): `dueTimeSet` when a due time is set or moved, `watchDue` for the reconciler's check
 * of those the scan missed (true: one is earlier than `before`). The Temporal runner is one.
 */
export interface DeadlineScanHooks {
  dueTimeSet(): void;
  watchDue(overdue: (before: Date) => Promise<boolean>): void;
}
