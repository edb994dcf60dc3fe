import { z } from "zod";
import { CURSOR_REFUSED, cursorFormat } from "../shared/cursor.js";
import { parseTimestampMs } from "../shared/time.js";
import { alsoRefused, validate } from "../shared/validate.js";
import type { Queryable } from "../storage/db.js";
import type { MonitorRow } from "./store.js";

// GET .../monitors: keyset pages, oldest monitor first (created_at, id), as the event list pages.
// The cursor is the (created_at, id) of the last monitor on the page, created_at to the
// microsecond as PostgreSQL holds it, in the shared cursor format (src/shared/cursor.ts; tag mon1).

const LIST_DEFAULT = 100;
const LIST_MAX = 1000;
const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ID = /^mon_[0-9A-Za-z]{1,64}$/;

export const monitorListSchema = z.object({
  limit: z
    .number()
    .int()
    .min(1, `must be between 1 and ${LIST_MAX}`)
    .max(LIST_MAX, `must be between 1 and ${LIST_MAX}`)
    .default(LIST_DEFAULT),
  cursor: alsoRefused(z.string(), CURSOR_REFUSED).optional(),
});

interface Position {
  at: string;
  id: string;
}

export const monitorCursor = cursorFormat<Position>("mon1", {
  parts: 2,
  write: (p) => [p.at, p.id],
  read: ([at, id]) => (AT.test(at) && parseTimestampMs(at) !== undefined && ID.test(id) ? { at, id } : undefined),
});

export async function listMonitorsPage(
  db: Queryable,
  projectId: string,
  req: { limit?: number; cursor?: string },
): Promise<{ rows: MonitorRow[]; nextCursor?: string; hasMore: boolean }> {
  const input = validate(monitorListSchema, { limit: req.limit, cursor: req.cursor === "" ? undefined : req.cursor });
  const after = input.cursor !== undefined ? monitorCursor.read(input.cursor) : undefined;
  const r = await db.query<MonitorRow & { cursor_at: string }>(
    `SELECT m.*, to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
       FROM monitors m
      WHERE m.project_id = $1 AND ($2::timestamptz IS NULL OR (m.created_at, m.id) > ($2::timestamptz, $3::text))
      ORDER BY m.created_at, m.id LIMIT $4`,
    [projectId, after?.at ?? null, after?.id ?? null, input.limit + 1],
  );
  const hasMore = r.rows.length > input.limit;
  const page = r.rows.slice(0, input.limit);
  const last = page[page.length - 1];
  return {
    rows: page.map(({ cursor_at: _c, ...m }) => m as MonitorRow),
    hasMore,
    nextCursor: hasMore && last ? monitorCursor.encode({ at: last.cursor_at, id: last.id }) : undefined,
  };
}
