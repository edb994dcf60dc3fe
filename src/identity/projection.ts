import type { PoolClient } from "pg";
import type { Projection, StoredEvent } from "../events/pipeline.js";
import { newId } from "../shared/ids.js";
import { assignJson } from "../shared/objects.js";

// Identities driven from stored events, as a projection of the ingest pipeline (events/pipeline.ts,
// applied by events/projector.ts; wired in server/features.ts): the ingest
// transaction stores each group's per-key aggregates with its events (so a crash can never leave an
// accepted event without its user or group), and the projector merges many groups into one upsert
// per user or group, written sorted by key so that concurrent transactions lock rows in one order.
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
export function aggregate(
  events: StoredEvent[],
  keyOf: (e: StoredEvent) => string | null,
  merging: string,
): IdentityAgg[] {
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
    if (e.type === merging) assignJson(a.properties, e.data);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

// Rows travel as one JSON document (see events/write.ts): one parse in PostgreSQL, no escaping.
const rowsJson = (rows: IdentityAgg[], withId: boolean) =>
  JSON.stringify(
    rows.map((r) => ({
      p: r.projectId,
      k: r.key,
      i: withId ? newId("usr") : null,
      pr: r.properties,
      c: r.count,
      f: new Date(r.first).toISOString(),
      l: new Date(r.last).toISOString(),
    })),
  );

async function upsertUsers(client: PoolClient, rows: IdentityAgg[]): Promise<void> {
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO users (project_id, external_id, id, properties, event_count, first_seen_at, last_seen_at)
     SELECT p, k, i, pr, c, f, l FROM json_to_recordset($1::json) AS r(p text, k text, i text, pr jsonb, c int8, f timestamptz, l timestamptz)
     ORDER BY p, k
     ON CONFLICT (project_id, external_id) DO UPDATE SET
       properties = users.properties || EXCLUDED.properties,
       event_count = users.event_count + EXCLUDED.event_count,
       first_seen_at = LEAST(users.first_seen_at, EXCLUDED.first_seen_at),
       last_seen_at = GREATEST(users.last_seen_at, EXCLUDED.last_seen_at)`,
    [rowsJson(rows, true)],
  );
}

async function upsertGroups(client: PoolClient, rows: IdentityAgg[]): Promise<void> {
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO groups (project_id, group_id, properties, event_count, first_seen_at, last_seen_at)
     SELECT p, k, pr, c, f, l FROM json_to_recordset($1::json) AS r(p text, k text, pr jsonb, c int8, f timestamptz, l timestamptz)
     ORDER BY p, k
     ON CONFLICT (project_id, group_id) DO UPDATE SET
       properties = groups.properties || EXCLUDED.properties,
       event_count = groups.event_count + EXCLUDED.event_count,
       first_seen_at = LEAST(groups.first_seen_at, EXCLUDED.first_seen_at),
       last_seen_at = GREATEST(groups.last_seen_at, EXCLUDED.last_seen_at)`,
    [rowsJson(rows, false)],
  );
}

/** One aggregate as stored in a delta: [key, properties, count, first ms, last ms]. */
type Packed = [string, Record<string, unknown>, number, number, number];

interface IdentityDelta {
  u?: Packed[];
  g?: Packed[];
}

const pack = (rows: IdentityAgg[]): Packed[] => rows.map((r) => [r.key, r.properties, r.count, r.first, r.last]);

/** Merges packed aggregates of one project, in commit order (properties: last wins). Pure. */
export function mergePacked(projectId: string, lists: Packed[][]): IdentityAgg[] {
  const byKey = new Map<string, IdentityAgg>();
  for (const list of lists) {
    for (const [key, properties, count, first, last] of list) {
      const a = byKey.get(key);
      if (!a) byKey.set(key, { projectId, key, properties: { ...properties }, count, first, last });
      else {
        assignJson(a.properties, properties);
        a.count += count;
        a.first = Math.min(a.first, first);
        a.last = Math.max(a.last, last);
      }
    }
  }
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

export const identityProjection: Projection<IdentityDelta> = {
  name: "identity",
  delta(events) {
    const u = aggregate(events, (e) => e.userId, "$identify");
    const g = aggregate(events, (e) => e.groupId, "$group");
    if (!u.length && !g.length) return null;
    const d: IdentityDelta = {};
    if (u.length) d.u = pack(u);
    if (g.length) d.g = pack(g);
    return d;
  },
  async apply(client, projectId, deltas) {
    await upsertUsers(
      client,
      mergePacked(
        projectId,
        deltas.map((d) => d.u ?? []),
      ),
    );
    await upsertGroups(
      client,
      mergePacked(
        projectId,
        deltas.map((d) => d.g ?? []),
      ),
    );
  },
};
