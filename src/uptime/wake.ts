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
}

export async function notifyWake(c: Queryable, changes: DeadlineChange[]): Promise<void> {
  const wake = changes.filter((x) => x.wake && x.deadlineAt !== null);
  if (!wake.length) return;
  await c.query(`SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, [WAKE_CHANNEL, wake.map((x) => `${x.id} ${x.deadlineAt}`)]);
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
}
