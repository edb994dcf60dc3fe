import { z } from "zod";
import { badRequest } from "../shared/errors.js";
import { validate } from "../shared/validate.js";
import type { Queryable } from "../storage/db.js";
import type { MonitorRow } from "./store.js";

// GET .../monitors: keyset pages, oldest monitor first (created_at, id), as the event list pages.
// The cursor is the (created_at, id) of the last monitor on the page, created_at to the
// microsecond as PostgreSQL holds it, wrapped so clients treat it as opaque.

export const LIST_DEFAULT = 100;
export const LIST_MAX = 1000;
const PREFIX = "mon1:";
const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ID = /^mon_[0-9A-Za-z]{1,64}$/;

const listSchema = z.object({
  limit: z.number().int().min(1, `must be between 1 and ${LIST_MAX}`).max(LIST_MAX, `must be between 1 and ${LIST_MAX}`).default(LIST_DEFAULT),
  cursor: z.string().optional(),
});

interface Position {
  at: string;
  id: string;
}

export function encodeMonitorCursor(p: Position): string {
  return Buffer.from(`${PREFIX}${p.at}|${p.id}`).toString("base64url");
}

/** The position a cursor stands for, or undefined when it is not one of this list's. */
export function decodeMonitorCursor(cursor: string): Position | undefined {
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  if (!text.startsWith(PREFIX)) return undefined;
  const [at, id, ...rest] = text.slice(PREFIX.length).split("|");
  if (rest.length || !at || !id || !AT.test(at) || !ID.test(id) || Number.isNaN(Date.parse(at))) return undefined;
  return { at, id };
}

export async function listMonitorsPage(db: Queryable, projectId: string, req: { limit?: number; cursor?: string }): Promise<{ rows: MonitorRow[]; nextCursor?: string; hasMore: boolean }> {
  const input = validate(listSchema, { limit: req.limit, cursor: req.cursor === "" ? undefined : req.cursor });
  let after: Position | undefined;
  if (input.cursor !== undefined) {
    after = decodeMonitorCursor(input.cursor);
    if (!after) throw badRequest("invalid cursor: pass the nextCursor of a previous page", [{ field: "cursor", message: "not a cursor of this list" }]);
  }
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
    nextCursor: hasMore && last ? encodeMonitorCursor({ at: last.cursor_at, id: last.id }) : undefined,
  };
}
