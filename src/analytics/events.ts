import { recordSelect, type EventRecord } from "../events/record.js";
import { cursorFormat } from "../shared/cursor.js";
import type { Queryable } from "../storage/db.js";
import type { Node } from "./filters.js";
import { rawScan } from "./plan.js";
import type { SlotMap } from "./sql.js";
import type { Window } from "./time.js";

// POST .../events/query: matching events newest first, keyset pages on (ts DESC, id DESC).
// The cursor (the shared format, src/shared/cursor.ts; tag evq1): the last row's ts in epoch
// microseconds and its id.

/** An event (the same record as the event list reads) plus its timestamp in microseconds. */
export type EventRow = EventRecord & { us: string };

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
    `SELECT ${recordSelect("e")}, (extract(epoch FROM e.ts) * 1000000)::bigint::text AS us
     FROM events e WHERE ${where} ORDER BY e.ts ${dir}, e.id ${dir} LIMIT ${s.params.add(limit)}`,
    s.params.values,
  );
  return r.rows;
}
