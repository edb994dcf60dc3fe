import type { Queryable } from "../storage/db.js";
import type { StoredEvent } from "../shared/hooks.js";
import type { JsonObject } from "@bufbuild/protobuf";

// Reading events back: the keyset-paginated list and the lookup by id.

export interface EventRow {
  project_id: string;
  ts: Date;
  id: string;
  type: string;
  user_id: string | null;
  group_id: string | null;
  source_id: string | null;
  data: Record<string, unknown>;
  context: Record<string, unknown>;
  tags: Record<string, unknown>;
  created_at: Date;
}

const COLUMNS = "project_id, ts, id, type, user_id, group_id, source_id, data, context, tags, created_at";

export interface ListFilter {
  projectId: string;
  limit: number;
  after?: { ts: Date; id: string };
  type?: string;
  userId?: string;
  sourceKey?: string;
  search?: string;
  start?: Date;
  end?: Date;
}

/** `%text%` for ILIKE with `\` as the escape character. */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** One page, newest first, plus whether more follow. */
export async function listEvents(db: Queryable, f: ListFilter): Promise<{ rows: EventRow[]; hasMore: boolean }> {
  const params: unknown[] = [f.projectId];
  const where = ["project_id = $1"];
  const add = (sql: (n: string) => string, v: unknown) => {
    params.push(v);
    where.push(sql(`$${params.length}`));
  };
  if (f.type !== undefined) add((p) => `type = ${p}`, f.type);
  if (f.userId !== undefined) add((p) => `user_id = ${p}`, f.userId);
  if (f.sourceKey !== undefined) add((p) => `source_id = (SELECT id FROM sources WHERE project_id = $1 AND key = ${p})`, f.sourceKey);
  if (f.start !== undefined) add((p) => `ts >= ${p}`, f.start.toISOString());
  if (f.end !== undefined) add((p) => `ts <= ${p}`, f.end.toISOString());
  if (f.search !== undefined) {
    add((p) => `(type ILIKE ${p} ESCAPE '\\' OR user_id ILIKE ${p} ESCAPE '\\' OR data::text ILIKE ${p} ESCAPE '\\' OR context::text ILIKE ${p} ESCAPE '\\')`, likePattern(f.search));
  }
  if (f.after !== undefined) {
    params.push(f.after.ts.toISOString(), f.after.id);
    where.push(`(ts, id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
  }
  params.push(f.limit + 1);
  const r = await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE ${where.join(" AND ")} ORDER BY ts DESC, id DESC LIMIT $${params.length}`, params);
  const hasMore = r.rows.length > f.limit;
  return { rows: hasMore ? r.rows.slice(0, f.limit) : r.rows, hasMore };
}

/** The event with this id in the project (the id's time prefix selects the partition). */
export async function getEvent(db: Queryable, projectId: string, id: string, ts: Date): Promise<EventRow | undefined> {
  const r = await db.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE project_id = $1 AND ts = $2 AND id = $3`, [projectId, ts.toISOString(), id]);
  return r.rows[0];
}

/** The Event message (REST: the spec's JSON) of a stored event. */
export function toEventMessage(e: StoredEvent) {
  return {
    id: e.id,
    projectId: e.projectId,
    type: e.type,
    timestamp: e.timestamp.toISOString(),
    userId: e.userId ?? undefined,
    groupId: e.groupId ?? undefined,
    sourceId: e.sourceId ?? undefined,
    data: e.data as JsonObject,
    context: e.context as JsonObject,
    tags: e.tags as JsonObject,
    createdAt: e.createdAt.toISOString(),
  };
}

export function rowToStored(r: EventRow): StoredEvent {
  return {
    id: r.id,
    projectId: r.project_id,
    type: r.type,
    timestamp: r.ts,
    userId: r.user_id,
    groupId: r.group_id,
    sourceId: r.source_id,
    data: r.data,
    context: r.context,
    tags: r.tags,
    createdAt: r.created_at,
  };
}
