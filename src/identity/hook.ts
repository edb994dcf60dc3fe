import type { PoolClient } from "pg";
import type { EventsCommittingHook, StoredEvent } from "../shared/hooks.js";
import { newId } from "../shared/ids.js";

// Identities driven from stored events, inside the ingest transaction (so a crash can never leave
// an accepted event without its user or group). Rows are aggregated per key first (one upsert
// per row), then written sorted by key so that concurrent transactions lock them in one order.
// Properties merge shallowly, last ingested wins: `$identify` data onto the user, `$group` data
// onto the group.

export interface IdentityAgg {
  projectId: string;
  key: string;
  properties: Record<string, unknown>;
  count: number;
  first: number;
  last: number;
}

/** Aggregates events per (project, key); `merging` says which event type carries properties. Pure. */
export function aggregate(events: StoredEvent[], keyOf: (e: StoredEvent) => string | null, merging: string): IdentityAgg[] {
  const byKey = new Map<string, IdentityAgg>();
  for (const e of events) {
    const key = keyOf(e);
    if (key === null) continue;
    const k = `${e.projectId}\u0000${key}`;
    const ms = e.timestamp.getTime();
    let a = byKey.get(k);
    if (!a) {
      a = { projectId: e.projectId, key, properties: {}, count: 0, first: ms, last: ms };
      byKey.set(k, a);
    }
    a.count++;
    if (ms < a.first) a.first = ms;
    if (ms > a.last) a.last = ms;
    if (e.type === merging) Object.assign(a.properties, e.data);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

async function upsertUsers(client: PoolClient, rows: IdentityAgg[]): Promise<void> {
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO users (project_id, external_id, id, properties, event_count, first_seen_at, last_seen_at)
     SELECT p, x, i, pr::jsonb, c, f, l
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::timestamptz[], $7::timestamptz[]) AS u(p, x, i, pr, c, f, l)
     ORDER BY p, x
     ON CONFLICT (project_id, external_id) DO UPDATE SET
       properties = users.properties || EXCLUDED.properties,
       event_count = users.event_count + EXCLUDED.event_count,
       first_seen_at = LEAST(users.first_seen_at, EXCLUDED.first_seen_at),
       last_seen_at = GREATEST(users.last_seen_at, EXCLUDED.last_seen_at)`,
    [
      rows.map((r) => r.projectId),
      rows.map((r) => r.key),
      rows.map(() => newId("usr")),
      rows.map((r) => JSON.stringify(r.properties)),
      rows.map((r) => r.count),
      rows.map((r) => new Date(r.first).toISOString()),
      rows.map((r) => new Date(r.last).toISOString()),
    ],
  );
}

async function upsertGroups(client: PoolClient, rows: IdentityAgg[]): Promise<void> {
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO groups (project_id, group_id, properties, event_count, first_seen_at, last_seen_at)
     SELECT p, g, pr::jsonb, c, f, l
     FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::timestamptz[], $6::timestamptz[]) AS u(p, g, pr, c, f, l)
     ORDER BY p, g
     ON CONFLICT (project_id, group_id) DO UPDATE SET
       properties = groups.properties || EXCLUDED.properties,
       event_count = groups.event_count + EXCLUDED.event_count,
       first_seen_at = LEAST(groups.first_seen_at, EXCLUDED.first_seen_at),
       last_seen_at = GREATEST(groups.last_seen_at, EXCLUDED.last_seen_at)`,
    [
      rows.map((r) => r.projectId),
      rows.map((r) => r.key),
      rows.map((r) => JSON.stringify(r.properties)),
      rows.map((r) => r.count),
      rows.map((r) => new Date(r.first).toISOString()),
      rows.map((r) => new Date(r.last).toISOString()),
    ],
  );
}

export const identityHook: EventsCommittingHook = async (client, events) => {
  await upsertUsers(client, aggregate(events, (e) => e.userId, "$identify"));
  await upsertGroups(client, aggregate(events, (e) => e.groupId, "$group"));
};
