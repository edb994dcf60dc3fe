import type { PoolClient } from "pg";
import type { Queryable } from "../storage/db.js";
import type { Projection, StoredEvent } from "./pipeline.js";
import { HOUR_MS, MINUTE_MS } from "../shared/time.js";

// The userId access path of the event list (migration 1005): `event_user_hours` holds one row per
// (project, user, UTC hour) with events and a bitmap of the minutes that have them, maintained as
// a derived record (a projection of the pipeline, pipeline.ts) from the stored events. A listing by user settles its
// project first, so every event acknowledged before the read is marked here.

export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** A delta: [userId, hour ms, bits of minutes 0-29, bits of minutes 30-59], once per (user, hour). Pure. */
export type UserHoursDelta = [string, number, number, number][];

export function userHoursDelta(events: StoredEvent[]): UserHoursDelta | null {
  const byKey = new Map<string, [string, number, number, number]>();
  for (const e of events) {
    if (e.userId === null) continue;
    const ms = e.timestamp.getTime();
    const hour = hourOf(ms);
    const minute = Math.floor((ms - hour) / MINUTE_MS);
    const k = `${hour}\u0000${e.userId}`;
    let x = byKey.get(k);
    if (!x) byKey.set(k, (x = [e.userId, hour, 0, 0]));
    if (minute < 30) x[2] |= 1 << minute;
    else x[3] |= 1 << (minute - 30);
  }
  return byKey.size ? [...byKey.values()] : null;
}

export const userHoursProjection: Projection<UserHoursDelta> = {
  name: "userHours",
  delta: userHoursDelta,
  async apply(client: PoolClient, projectId: string, deltas: UserHoursDelta[]) {
    const merged = new Map<string, [string, number, number, number]>();
    for (const d of deltas) {
      for (const [u, h, lo, hi] of d) {
        const k = `${h}\u0000${u}`;
        const x = merged.get(k);
        if (x) {
          x[2] |= lo;
          x[3] |= hi;
        } else merged.set(k, [u, h, lo, hi]);
      }
    }
    if (!merged.size) return;
    const list = [...merged.values()];
    // Sorted, so that concurrent projectors take the row locks in one order; a row is rewritten only
    // when a minute is new to it.
    await client.query(
      `INSERT INTO event_user_hours (project_id, user_id, hour, minutes)
       SELECT $1, u, to_timestamp(h / 1000.0), lo::bigint | (hi::bigint << 30) FROM unnest($2::text[], $3::float8[], $4::int4[], $5::int4[]) AS x(u, h, lo, hi)
       ORDER BY 2, 3
       ON CONFLICT (project_id, user_id, hour) DO UPDATE SET minutes = event_user_hours.minutes | EXCLUDED.minutes
       WHERE event_user_hours.minutes | EXCLUDED.minutes <> event_user_hours.minutes`,
      [projectId, list.map((x) => x[0]), list.map((x) => x[1]), list.map((x) => x[2]), list.map((x) => x[3])],
    );
  },
};

export interface UserHour {
  hour: number;
  /** The marked minutes as [from, to) ranges (ms), newest first. */
  ranges: [number, number][];
  /** How many minutes are marked: each holds at least one of the user's events. */
  minutes: number;
}

/** The user's hours with events, newest first, at most `limit`, with `from` <= hour <= `upTo` (ms) when given. */
export async function userHours(
  db: Queryable,
  projectId: string,
  userId: string,
  upTo: number | undefined,
  from: number | undefined,
  limit: number,
): Promise<UserHour[]> {
  const r = await db.query<{ hour: Date; minutes: string }>(
    `SELECT hour, minutes::text FROM event_user_hours
     WHERE project_id = $1 AND user_id = $2 AND ($3::timestamptz IS NULL OR hour <= $3) AND ($4::timestamptz IS NULL OR hour >= $4)
     ORDER BY hour DESC LIMIT $5`,
    [
      projectId,
      userId,
      upTo === undefined ? null : new Date(upTo).toISOString(),
      from === undefined ? null : new Date(from).toISOString(),
      limit,
    ],
  );
  return r.rows.map((row) => {
    const ranges = minuteRanges(row.hour.getTime(), BigInt(row.minutes));
    return { hour: row.hour.getTime(), ranges, minutes: ranges.reduce((n, [a, b]) => n + (b - a) / MINUTE_MS, 0) };
  });
}

/** The [from, to) ranges (ms) of the set bits of an hour's minute bitmap, newest first. Pure. */
export function minuteRanges(hour: number, minutes: bigint): [number, number][] {
  const out: [number, number][] = [];
  let end = -1;
  for (let m = 59; m >= -1; m--) {
    const set = m >= 0 && ((minutes >> BigInt(m)) & 1n) === 1n;
    if (set && end < 0) end = m + 1;
    if (!set && end >= 0) {
      out.push([hour + (m + 1) * MINUTE_MS, hour + end * MINUTE_MS]);
      end = -1;
    }
  }
  return out;
}
