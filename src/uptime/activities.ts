import type { UptimeDeps } from "./deps.js";
import { checkDeadlines } from "./detect.js";
import type { MonitorStatus } from "./model.js";
import { advanceDueWindows, type MaintenanceHooks } from "./maintenance.js";
import { enqueueWakes } from "./wake.js";

// Temporal activities of the uptime feature (registered on the uptime worker, src/temporal/worker.ts).

export interface MonitorCheck {
  /** The monitor's status after the check; "deleted" when it no longer exists. */
  status: MonitorStatus | "deleted";
  slug: string | null;
  /** The watch ends: the monitor was deleted or is paused (a resume wakes a new run). */
  stop: boolean;
  /** Sleep this long (ms, measured on Vigil's clock) before the next check; null: no deadline applies. */
  sleepMs: number | null;
}

/** The deadline scan's answer (workflows/deadlines.ts). */
export interface DeadlineScan {
  /** Monitors this scan took down. */
  opened: number;
  /** A full batch was due: scan again at once. */
  more: boolean;
  /** Until the next deadline (ms, on Vigil's clock); null: none pending. */
  sleepMs: number | null;
}

/** Monitors taken down per scan transaction. */
const SCAN_BATCH = 500;

/** v1's answer (workflows/uptime-v1.ts): an absolute time. */
export interface DeadlineCheckV1 {
  exists: boolean;
  nextCheckAt: number | null;
  opened: boolean;
}

/** Maintenance window transitions per scan (a full batch: the scan runs again at once). */
const WINDOW_BATCH = 100;

/** `windows`: the hooks of the transitions the scan applies (the monitors' deadlines to the runner). */
export function createUptimeActivities(deps: UptimeDeps, windows: MaintenanceHooks) {
  const check = async (monitorId: string) => {
    const now = deps.clock();
    const r = await checkDeadlines(deps, [monitorId], now);
    return {
      now,
      next: r.next.get(monitorId) ?? null,
      opened: r.opened.includes(monitorId),
      row: r.found.get(monitorId),
    };
  };
  return {
    /**
     * The deadline scan (local activity of deadlineScanWorkflow): every monitor whose deadline passed
     * is checked with checkDeadlines() (compare-and-set: a heartbeat or another node that got there
     * first wins), the monitors it took down get a wake (their workflow shows them down), and the
     * next deadline is read. One sequential scan of the monitors table (no index on deadline_at:
     * heartbeats stay heap-only updates, migration 4001); at most one scan per TEMPORAL_SCAN_GAP_MS.
     */
    async scanDeadlines(): Promise<DeadlineScan> {
      const now = deps.clock();
      // Maintenance windows first (docs/uptime.md "Maintenance windows"): a window starting now takes
      // its monitors' deadlines away before they are read below.
      // No wakes for their monitors: this scan reads their deadlines below, and a window changes no
      // status a monitor's workflow shows.
      const w = await advanceDueWindows(deps, windows, now, WINDOW_BATCH, false);
      if (w.more) return { opened: 0, more: true, sleepMs: 0 };
      // One sequential scan: the monitors due now (the earliest first) and the next deadline after now.
      const r = await deps.db.query<{ due: string[] | null; next: Date | null }>(
        `SELECT (array_agg(id ORDER BY deadline_at) FILTER (WHERE deadline_at <= $1))[1:$2] AS due,
                min(deadline_at) FILTER (WHERE deadline_at > $1) AS next
           FROM monitors WHERE deadline_at IS NOT NULL`,
        [now, SCAN_BATCH],
      );
      const due = r.rows[0]?.due ?? [];
      let opened: string[] = [];
      // The due times the check left (a run timed out leaves the monitor's deadline; a monitor taken
      // down, its running run's timeout): not in `next`, which was read before the check.
      let after: number | null = null;
      if (due.length) {
        const res = await checkDeadlines(deps, due, now);
        opened = res.opened;
        for (const v of res.next.values()) if (v !== null && (after === null || v < after)) after = v;
        // The incidents are open; the monitors' workflows learn of it from the outbox (drained every second).
        if (opened.length)
          await enqueueWakes(
            deps.db,
            opened.map((id) => ({ id, kind: "start" as const })),
          );
      }
      if (due.length === SCAN_BATCH && opened.length) return { opened: opened.length, more: true, sleepMs: 0 };
      const read = r.rows[0]?.next?.getTime() ?? null;
      const next = [read, after, w.next].reduce<number | null>(
        (a, b) => (b === null ? a : a === null ? b : Math.min(a, b)),
        null,
      );
      return {
        opened: opened.length,
        more: false,
        sleepMs: next !== null ? Math.max(0, next - deps.clock().getTime()) : null,
      };
    },
    /** v2 (local activity): re-reads the monitor, decides with evaluateDeadline(), applies "down" by CAS. */
    async checkMonitor(monitorId: string): Promise<MonitorCheck> {
      const { now, next, row } = await check(monitorId);
      if (!row) return { status: "deleted", slug: null, stop: true, sleepMs: null };
      return {
        status: row.status,
        slug: row.slug,
        stop: row.status === "paused",
        sleepMs: next === null ? null : Math.max(0, next - now.getTime()),
      };
    },
    /** v1 (activity). */
    async checkMonitorDeadline(monitorId: string): Promise<DeadlineCheckV1> {
      const r = await check(monitorId);
      if (!r.row) return { exists: false, nextCheckAt: null, opened: false };
      return { exists: true, nextCheckAt: r.next, opened: r.opened };
    },
  };
}

export type UptimeActivities = ReturnType<typeof createUptimeActivities>;

// The workflows' inputs (workflows/deadlines.ts, workflows/uptime.ts), declared here beside the
// activities they call, so that the runner that starts them imports nothing from workflows/.

export interface DeadlineScanInput {
  /** The least time between two scans (ms): TEMPORAL_SCAN_GAP_MS. */
  gapMs: number;
  /** Re-scan at least this often when no deadline is pending (ms). */
  idleMs: number;
}

export interface MonitorWorkflowInput {
  monitorId: string;
  /** Re-read an idle (down) monitor at least this often (ms). Absent in v1 inputs. */
  idleCheckMs?: number;
  /** The namespace has Vigil's search attributes: keep VigilMonitorStatus/Slug current. */
  attributes?: boolean;
}
