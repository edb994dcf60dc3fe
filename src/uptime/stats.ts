import type { Db } from "../storage/db.js";
import { historyBuckets, windowFigures, type Bucket, type Span, type Timeline, type WindowFigures } from "./figures.js";
import type { WindowName } from "./requests.js";
import type { MonitorRow } from "./store.js";
import { DAY_MS, HOUR_MS } from "../shared/time.js";

// Reads for stats, history and the overview. Incidents and pauses give the time-based figures
// (figures.ts); heartbeat counts and latency come from raw heartbeats inside the raw retention and
// from hourly rollups before it.

interface SpanRow {
  monitor_id: string;
  start: Date;
  end: Date | null;
}

const span = (r: SpanRow): Span => ({ start: r.start.getTime(), end: r.end?.getTime() ?? null });

async function spans(
  db: Db,
  monitorIds: string[],
  from: Date,
  to: Date,
): Promise<{ incidents: Map<string, Span[]>; pauses: Map<string, Span[]>; maintenances: Map<string, Span[]> }> {
  const [inc, pau, mnt] = await Promise.all([
    db.query<SpanRow>(
      `SELECT monitor_id, started_at AS start, ended_at AS "end" FROM incidents
        WHERE monitor_id = ANY($1::text[]) AND started_at <= $3 AND (ended_at IS NULL OR ended_at >= $2)`,
      [monitorIds, from, to],
    ),
    db.query<SpanRow>(
      `SELECT monitor_id, paused_at AS start, resumed_at AS "end" FROM monitor_pauses
        WHERE monitor_id = ANY($1::text[]) AND paused_at <= $3 AND (resumed_at IS NULL OR resumed_at >= $2)`,
      [monitorIds, from, to],
    ),
    db.query<SpanRow>(
      `SELECT monitor_id, started_at AS start, ended_at AS "end" FROM monitor_maintenances
        WHERE monitor_id = ANY($1::text[]) AND started_at <= $3 AND (ended_at IS NULL OR ended_at >= $2)`,
      [monitorIds, from, to],
    ),
  ]);
  const group = (rows: SpanRow[]) => {
    const m = new Map<string, Span[]>();
    for (const r of rows) m.set(r.monitor_id, [...(m.get(r.monitor_id) ?? []), span(r)]);
    return m;
  };
  return { incidents: group(inc.rows), pauses: group(pau.rows), maintenances: group(mnt.rows) };
}

function timelineOf(m: MonitorRow, s: Awaited<ReturnType<typeof spans>>): Timeline {
  return {
    createdAt: m.created_at.getTime(),
    firstHeartbeatAt: m.first_heartbeat_at?.getTime() ?? null,
    incidents: s.incidents.get(m.id) ?? [],
    pauses: s.pauses.get(m.id) ?? [],
    maintenances: s.maintenances.get(m.id) ?? [],
  };
}

export interface HeartbeatFigures {
  total: number;
  successful: number;
  failed: number;
  avgLatencyMs?: number;
  minLatencyMs?: number;
  maxLatencyMs?: number;
}

/** Counts and latency: raw rows for [max(from, boundary), to], hourly rollups for the hours before the boundary. */
export async function heartbeatFigures(
  db: Db,
  monitorId: string,
  from: Date,
  to: Date,
  now: Date,
  rawRetentionMs: number,
): Promise<HeartbeatFigures> {
  const boundary = new Date(Math.floor((now.getTime() - rawRetentionMs) / HOUR_MS) * HOUR_MS);
  const rawFrom = from > boundary ? from : boundary;
  type Agg = {
    total: number;
    ok: number;
    failed: number;
    n: number;
    sum: number | null;
    min: number | null;
    max: number | null;
  };
  const raw = await db.query<Agg>(
    `SELECT count(*) AS total, count(*) FILTER (WHERE status = 'up') AS ok, count(*) FILTER (WHERE status = 'down') AS failed,
            count(latency_ms) AS n, sum(latency_ms) AS sum, min(latency_ms) AS min, max(latency_ms) AS max
       FROM heartbeats WHERE monitor_id = $1 AND at >= $2 AND at <= $3`,
    [monitorId, rawFrom, to],
  );
  const parts: Agg[] = [raw.rows[0]];
  if (from < boundary) {
    const hourFrom = new Date(Math.floor(from.getTime() / HOUR_MS) * HOUR_MS);
    const upTo = to < boundary ? to : boundary;
    const roll = await db.query<Agg>(
      `SELECT coalesce(sum(total), 0) AS total, coalesce(sum(successful), 0) AS ok, coalesce(sum(failed), 0) AS failed,
              coalesce(sum(latency_count), 0) AS n, sum(latency_sum) AS sum, min(latency_min) AS min, max(latency_max) AS max
         FROM heartbeat_rollups WHERE monitor_id = $1 AND hour >= $2 AND hour < $3`,
      [monitorId, hourFrom, upTo],
    );
    parts.push(roll.rows[0]);
  }
  const n = parts.reduce((a, p) => a + Number(p.n), 0);
  const sum = parts.reduce((a, p) => a + Number(p.sum ?? 0), 0);
  const mins = parts.map((p) => p.min).filter((v): v is number => v !== null);
  const maxs = parts.map((p) => p.max).filter((v): v is number => v !== null);
  return {
    total: parts.reduce((a, p) => a + Number(p.total), 0),
    successful: parts.reduce((a, p) => a + Number(p.ok), 0),
    failed: parts.reduce((a, p) => a + Number(p.failed), 0),
    avgLatencyMs: n ? Math.round((sum / n) * 1000) / 1000 : undefined,
    minLatencyMs: mins.length ? Math.min(...mins) : undefined,
    maxLatencyMs: maxs.length ? Math.max(...maxs) : undefined,
  };
}

export async function timeFigures(db: Db, m: MonitorRow, from: Date, to: Date, now: Date) {
  const s = await spans(db, [m.id], from, to);
  return windowFigures(timelineOf(m, s), from.getTime(), to.getTime(), now.getTime());
}

const WINDOW_BUCKETS: Record<WindowName, { size: number; count: number }> = {
  "24h": { size: HOUR_MS, count: 24 },
  "7d": { size: DAY_MS, count: 7 },
  "30d": { size: DAY_MS, count: 30 },
  "90d": { size: DAY_MS, count: 90 },
};

/** The start of a history window's first bucket (buckets aligned to UTC, the last one holding `now`). */
function windowStart(window: WindowName, now: Date): Date {
  const { size, count } = WINDOW_BUCKETS[window];
  return new Date(Math.floor(now.getTime() / size) * size - (count - 1) * size);
}

const bucketsOf = (tl: Timeline, window: WindowName, now: Date): Bucket[] =>
  historyBuckets(tl, WINDOW_BUCKETS[window].size, WINDOW_BUCKETS[window].count, now.getTime());

export async function history(db: Db, m: MonitorRow, window: WindowName, now: Date) {
  const s = await spans(db, [m.id], windowStart(window, now), now);
  return bucketsOf(timelineOf(m, s), window, now).map((b) => ({
    start: new Date(b.start).toISOString(),
    end: new Date(b.end).toISOString(),
    status: b.status,
    uptimePercentage: b.uptimePercentage ?? undefined,
    downtimeMs: b.downtimeMs,
  }));
}

export interface MonitorHistory {
  /** history()'s buckets, as figures.ts gives them (epoch milliseconds). */
  buckets: Bucket[];
  /** The time figures of the last 24 hours (what uptime24h gives). */
  last24h: WindowFigures;
}

/**
 * history() and the last 24 hours for many monitors with ONE read of their incidents and pauses
 * (status pages: one spans() query pair for every monitor of a page, not one per monitor).
 */
export async function histories(
  db: Db,
  monitors: MonitorRow[],
  window: WindowName,
  now: Date,
): Promise<Map<string, MonitorHistory>> {
  if (monitors.length === 0) return new Map();
  const dayAgo = new Date(now.getTime() - DAY_MS);
  const start = windowStart(window, now);
  const s = await spans(
    db,
    monitors.map((m) => m.id),
    start < dayAgo ? start : dayAgo,
    now,
  );
  return new Map(
    monitors.map((m) => {
      const tl = timelineOf(m, s);
      return [
        m.id,
        {
          buckets: bucketsOf(tl, window, now),
          last24h: windowFigures(tl, dayAgo.getTime(), now.getTime(), now.getTime()),
        },
      ];
    }),
  );
}

/** uptimePercentage over the last 24 hours for each monitor. */
export async function uptime24h(db: Db, monitors: MonitorRow[], now: Date): Promise<Map<string, number | null>> {
  const from = new Date(now.getTime() - DAY_MS);
  const s = await spans(
    db,
    monitors.map((m) => m.id),
    from,
    now,
  );
  return new Map(
    monitors.map((m) => [
      m.id,
      windowFigures(timelineOf(m, s), from.getTime(), now.getTime(), now.getTime()).uptimePercentage,
    ]),
  );
}
