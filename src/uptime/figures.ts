// Uptime figures as pure functions of a monitor's timeline (epoch milliseconds), tested directly.
// Downtime is the time covered by incidents; observed time is the window clipped to the monitor's
// life (created .. now) minus paused periods and maintenance windows (time that counts neither as up
// nor as down: an incident's part inside them is not downtime); uptime = (observed - downtime) / observed.

export interface Span {
  start: number;
  /** null: still open (counts until now). */
  end: number | null;
}

export interface Timeline {
  createdAt: number;
  firstHeartbeatAt: number | null;
  incidents: Span[];
  pauses: Span[];
  /** Its maintenance periods (monitor_maintenances); absent: none. */
  maintenances?: Span[];
}

export interface WindowFigures {
  observedMs: number;
  downtimeMs: number;
  incidentCount: number;
  /** null: nothing is known (no heartbeat before the window's end, or nothing observed). */
  uptimePercentage: number | null;
}

const overlap = (a0: number, a1: number, b0: number, b1: number) => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));
const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** The spans clipped to [start, end], merged, in order (closed ones; open ones end at `now`). */
function merged(spans: readonly Span[], start: number, end: number, now: number): [number, number][] {
  const parts = spans
    .map((s): [number, number] => [Math.max(s.start, start), Math.min(s.end ?? now, end)])
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of parts) {
    const last = out[out.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** Milliseconds of [start, end] that maintenance windows covered. */
function maintenanceMs(tl: Timeline, start: number, end: number, now: number): number {
  return merged(tl.maintenances ?? [], start, end, now).reduce((n, [a, b]) => n + b - a, 0);
}

export function windowFigures(tl: Timeline, from: number, to: number, now: number): WindowFigures {
  const start = Math.max(from, tl.createdAt);
  const end = Math.min(to, now);
  let paused = 0;
  let down = 0;
  if (end > start) {
    const excluded = merged([...tl.pauses, ...(tl.maintenances ?? [])], start, end, now);
    for (const [a, b] of excluded) paused += b - a;
    for (const i of tl.incidents) {
      const [a, b] = [Math.max(i.start, start), Math.min(i.end ?? now, end)];
      if (b <= a) continue;
      down += b - a;
      for (const [x, y] of excluded) down -= overlap(x, y, a, b);
    }
  }
  const observedMs = Math.max(0, end - start - paused);
  const downtimeMs = Math.min(down, observedMs);
  // An incident counts when any part of it lies in the window (also one still open).
  const incidentCount = tl.incidents.filter((i) => i.start <= Math.min(to, now) && (i.end ?? Infinity) >= from).length;
  // Before a monitor's first heartbeat nothing says it was up: no figure rather than 100 (a status page's rule too).
  const heard = tl.firstHeartbeatAt !== null && tl.firstHeartbeatAt < end;
  const uptimePercentage = heard && observedMs > 0 ? round3((100 * (observedMs - downtimeMs)) / observedMs) : null;
  return { observedMs, downtimeMs, incidentCount, uptimePercentage };
}

export type BucketStatus = "up" | "down" | "unknown" | "paused" | "maintenance";

export interface Bucket {
  start: number;
  end: number;
  status: BucketStatus;
  uptimePercentage: number | null;
  downtimeMs: number;
}

/**
 * `count` buckets of `size` ms aligned to UTC, the last one holding `now` and ending at it.
 * status: down when it had downtime; unknown when it ends before the monitor existed or before its
 * first heartbeat; maintenance when a maintenance window covered all of it; paused when paused for
 * all of its observed part; up otherwise.
 */
export function historyBuckets(tl: Timeline, size: number, count: number, now: number): Bucket[] {
  const lastStart = Math.floor(now / size) * size;
  const out: Bucket[] = [];
  for (let i = count - 1; i >= 0; i--) {
    const start = lastStart - i * size;
    const end = Math.min(start + size, now);
    const f = windowFigures(tl, start, end, now);
    const beforeLife = end <= tl.createdAt || tl.firstHeartbeatAt === null || end <= tl.firstHeartbeatAt;
    let status: BucketStatus;
    if (f.downtimeMs > 0) status = "down";
    else if (beforeLife) status = "unknown";
    else if (end > start && maintenanceMs(tl, start, end, now) >= end - start) status = "maintenance";
    else if (f.observedMs === 0) status = "paused";
    else status = "up";
    out.push({
      start,
      end,
      status,
      uptimePercentage:
        status === "unknown" || status === "paused" || status === "maintenance" ? null : f.uptimePercentage,
      downtimeMs: f.downtimeMs,
    });
  }
  return out;
}
