import type { Queryable } from "../storage/db.js";
import { fieldProblem, SEGMENT } from "./fields.js";

// GET .../analytics/fields: the keys a filter builder suggests. Two bounded reads, cheap on a
// project of any size: event types from the daily rollups of the last 30 days (one row per type and
// day), and the keys of the latest SAMPLE events (a backward scan of the (project_id, ts, id) index
// of the newest partitions, stopped after SAMPLE rows): `data.*`, `context.*`, `tags.*`, top-level
// keys and one level below.

/** Latest events whose keys are read. */
export const SAMPLE = 500;
const MAX_TYPES = 200;
export const MAX_FIELDS = 300;
const TYPE_DAYS = 30;
const DAY_GRAIN = 2;

export interface KnownType {
  type: string;
  count: number;
}
export interface KnownField {
  field: string;
  kind: string;
  count: number;
}
/** One (field, JSON type) pair of the sample and the number of sampled events that have it. */
export interface FieldKindRow {
  field: string;
  kind: string;
  n: number;
}

/**
 * The fields of the sample (pure): names the filter grammar accepts, each with its most frequent
 * JSON type (ties: the first in name order) and the events having it; most frequent first, then by
 * name; at most MAX_FIELDS.
 */
export function pickFields(rows: FieldKindRow[]): KnownField[] {
  const byField = new Map<string, { count: number; kind: string; best: number }>();
  const sorted = [...rows].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  for (const r of sorted) {
    if (r.kind === "null" || fieldProblem(r.field) !== null) continue;
    const f = byField.get(r.field) ?? { count: 0, kind: r.kind, best: 0 };
    f.count += r.n;
    if (r.n > f.best) {
      f.best = r.n;
      f.kind = r.kind;
    }
    byField.set(r.field, f);
  }
  return [...byField.entries()]
    .map(([field, f]) => ({ field, kind: f.kind, count: f.count }))
    .sort((a, b) => b.count - a.count || (a.field < b.field ? -1 : a.field > b.field ? 1 : 0))
    .slice(0, MAX_FIELDS);
}

export async function knownTypes(db: Queryable, projectId: string, now: Date): Promise<KnownType[]> {
  const since = new Date(now.getTime() - TYPE_DAYS * 86_400_000);
  const r = await db.query<{ type: string; n: number }>(
    `SELECT type, sum(count)::bigint AS n FROM analytics_rollups
     WHERE project_id = $1 AND grain = $2 AND bucket >= date_trunc('day', $3::timestamptz, 'UTC')
     GROUP BY type ORDER BY n DESC, type LIMIT $4`,
    [projectId, DAY_GRAIN, since.toISOString(), MAX_TYPES],
  );
  return r.rows.map((x) => ({ type: x.type, count: Number(x.n) }));
}

/** Keys of the latest SAMPLE events with their JSON types; the number of events read. */
export async function sampledFields(
  db: Queryable,
  projectId: string,
): Promise<{ rows: FieldKindRow[]; sampled: number }> {
  const r = await db.query<{ sampled: number; rows: { field: string; kind: string; n: number }[] }>(
    `WITH recent AS (
       SELECT data, context, tags FROM events WHERE project_id = $1 ORDER BY ts DESC, id DESC LIMIT $2
     ), roots AS (
       SELECT 'data' AS root, data AS doc FROM recent
       UNION ALL SELECT 'context', context FROM recent
       UNION ALL SELECT 'tags', tags FROM recent
     ), top AS (
       SELECT r.root, k.key, k.value
       FROM roots r CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(r.doc) = 'object' THEN r.doc END) AS k
       WHERE k.key ~ $3
     ), keys AS (
       SELECT root || '.' || key AS field, jsonb_typeof(value) AS kind FROM top
       UNION ALL
       SELECT t.root || '.' || t.key || '.' || k.key, jsonb_typeof(k.value)
       FROM top t CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(t.value) = 'object' THEN t.value END) AS k
       WHERE k.key ~ $3
     )
     SELECT (SELECT count(*) FROM recent)::int AS sampled,
       coalesce((SELECT json_agg(json_build_object('field', field, 'kind', kind, 'n', n))
                 FROM (SELECT field, kind, count(*) AS n FROM keys GROUP BY field, kind) g), '[]') AS rows`,
    // A key is a field only if it is one segment of the grammar ("a.b" would name a nested key).
    [projectId, SAMPLE, SEGMENT.source],
  );
  const row = r.rows[0];
  return { rows: row.rows.map((x) => ({ field: x.field, kind: x.kind, n: Number(x.n) })), sampled: row.sampled };
}
