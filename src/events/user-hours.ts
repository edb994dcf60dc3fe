import type { PoolClient } from "pg";
import type { DerivedProjection } from "../shared/derived.js";
import type { Queryable } from "../storage/db.js";
import type { StoredEvent } from "../shared/hooks.js";

// The userId access path of the event list (migration 1005): `event_user_hours` holds one row per
// (project, user, UTC hour) with events, maintained as a derived record (shared/derived.ts) from
// the stored events. A listing by user settles its project first, so every event acknowledged before
// the read has its hour here.

export const HOUR_MS = 3_600_000;
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** A delta: [userId, hour ms] pairs, each once. Pure. */
export type UserHoursDelta = [string, number][];

export function userHoursDelta(events: StoredEvent[]): UserHoursDelta | null {
  const seen = new Set<string>();
  const out: UserHoursDelta = [];
  for (const e of events) {
    if (e.userId === null) continue;
    const hour = hourOf(e.timestamp.getTime());
    const k = `${hour}\u0000${e.userId}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push([e.userId, hour]);
  }
  return out.length ? out : null;
}

export const userHoursProjection: DerivedProjection<UserHoursDelta> = {
  name: "userHours",
  delta: userHoursDelta,
  async apply(client: PoolClient, projectId: string, deltas: UserHoursDelta[]) {
    const pairs = new Map<string, [string, number]>();
    for (const d of deltas) for (const [u, h] of d) pairs.set(`${h}\u0000${u}`, [u, h]);
    if (!pairs.size) return;
    const list = [...pairs.values()];
    // Sorted, so that concurrent projectors take the key locks in one order.
    await client.query(
      `INSERT INTO event_user_hours (project_id, user_id, hour)
       SELECT $1, u, to_timestamp(h / 1000.0) FROM unnest($2::text[], $3::float8[]) AS x(u, h)
       ORDER BY 2, 3
       ON CONFLICT DO NOTHING`,
      [projectId, list.map((x) => x[0]), list.map((x) => x[1])],
    );
  },
};

/**
 * The user's hours with events, newest first, at most `limit`, with hour <= `upTo` (ms) and
 * hour >= `from` (ms) when given.
 */
export async function userHours(db: Queryable, projectId: string, userId: string, upTo: number | undefined, from: number | undefined, limit: number): Promise<Date[]> {
  const r = await db.query<{ hour: Date }>(
    `SELECT hour FROM event_user_hours
     WHERE project_id = $1 AND user_id = $2 AND ($3::timestamptz IS NULL OR hour <= $3) AND ($4::timestamptz IS NULL OR hour >= $4)
     ORDER BY hour DESC LIMIT $5`,
    [projectId, userId, upTo === undefined ? null : new Date(upTo).toISOString(), from === undefined ? null : new Date(from).toISOString(), limit],
  );
  return r.rows.map((x) => x.hour);
}
