import { rowToStored, toEventMessage as storedToMessage, type EventRow as StoredEventRow } from "../events/store.js";
import { cursorFormat } from "../shared/cursor.js";
import type { Queryable } from "../storage/db.js";
import type { Node } from "./filters.js";
import { rawScan } from "./plan.js";
import type { SlotMap } from "./sql.js";
import type { Window } from "./time.js";
import type { EventJson } from "./export-format.js";

// POST .../events/query: matching events newest first, keyset pages on (ts DESC, id DESC).
// The cursor (the shared format, src/shared/cursor.ts; tag evq1): the last row's ts in epoch
// microseconds and its id.

/** An event row (the same columns as the event list reads) plus its timestamp in microseconds. */
export interface EventRow extends StoredEventRow {
  us: string;
}

const US = /^-?\d{1,17}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A position in a keyset scan of events: the last row's ts (epoch microseconds) and id. */
export interface EventPosition {
  us: string;
  id: string;
}

export const queryCursor = cursorFormat<EventPosition>("evq1", {
  parts: 2,
  write: (p) => [p.us, p.id],
  read: ([us, id]) => (US.test(us) && UUID.test(id) ? { us, id } : undefined),
});

export async function queryEvents(
  db: Queryable,
  projectId: string,
  w: Window | null,
  filter: Node | null,
  slots: SlotMap,
  limit: number,
  cursor: string | null,
): Promise<{ rows: EventRow[]; nextCursor: string | null }> {
  const after = cursor ? queryCursor.read(cursor, "pagination.cursor") : null;
  const read = await keysetScan(db, projectId, w, filter, slots, "newest", after, limit + 1);
  const rows = read.slice(0, limit);
  const more = read.length > limit;
  return { rows, nextCursor: more ? queryCursor.encode(rows[rows.length - 1]) : null };
}

/**
 * The matching events past `after` (exclusive) in (ts, id) order, newest or oldest first, at most
 * `limit`: one bounded, index-ordered read. The event list pages with it (newest first, a cursor);
 * the export walks with it (POST .../events/export: oldest first, batch after batch, so an export of
 * any size holds one batch in memory and no statement or snapshot open between batches).
 */
export async function keysetScan(
  db: Queryable,
  projectId: string,
  w: Window | null,
  filter: Node | null,
  slots: SlotMap,
  order: "newest" | "oldest",
  after: EventPosition | null,
  limit: number,
): Promise<EventRow[]> {
  const s = rawScan(projectId, w, filter, slots);
  const [past, dir] = order === "newest" ? ["<", "DESC"] : [">", "ASC"];
  let where = s.where;
  if (after) {
    where += ` AND (e.ts, e.id) ${past} (timestamptz 'epoch' + ${s.params.add(after.us)}::bigint * interval '1 microsecond', ${s.params.add(after.id)}::uuid)`;
  }
  const r = await db.query<EventRow>(
    `SELECT e.id, e.project_id, e.type, e.ts, e.user_id, e.group_id, e.source_id, e.data, e.context, e.tags, e.created_at,
            (extract(epoch FROM e.ts) * 1000000)::bigint::text AS us
     FROM events e WHERE ${where} ORDER BY e.ts ${dir}, e.id ${dir} LIMIT ${s.params.add(limit)}`,
    s.params.values,
  );
  return r.rows;
}

/** The same Event message as the event list answers. */
export function toEventMessage(r: EventRow) {
  return storedToMessage(rowToStored(r));
}

/** An event as the event list's REST JSON writes it (unset optional fields `null`): NDJSON's line, CSV's source. */
export function toEventJson(r: EventRow): EventJson {
  const m = toEventMessage(r);
  return {
    id: m.id,
    projectId: m.projectId,
    type: m.type,
    timestamp: m.timestamp,
    userId: m.userId ?? null,
    groupId: m.groupId ?? null,
    sourceId: m.sourceId ?? null,
    data: m.data,
    context: m.context,
    tags: m.tags,
    createdAt: m.createdAt,
  };
}
