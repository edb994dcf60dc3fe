import type { Queryable } from "../storage/db.js";
import { hourOf, userHours, type UserHour } from "./user-hours.js";
import { HOUR_MS } from "../shared/time.js";
import { columnList, recordSelect, type EventRecord } from "./record.js";

// Reading events back: the keyset-paginated list and the lookup by id.

// Every read selects the record's columns keyed by field (record.ts): a row is an EventRecord.
const SELECT = recordSelect("events");

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
export async function listEvents(db: Queryable, f: ListFilter): Promise<{ rows: EventRecord[]; hasMore: boolean }> {
  const params: unknown[] = [f.projectId];
  const where = ["project_id = $1"];
  const add = (sql: (n: string) => string, v: unknown) => {
    params.push(v);
    where.push(sql(`$${params.length}`));
  };
  if (f.type !== undefined) add((p) => `type = ${p}`, f.type);
  if (f.userId !== undefined) add((p) => `user_id = ${p}`, f.userId);
  if (f.sourceKey !== undefined)
    add((p) => `source_id = (SELECT id FROM sources WHERE project_id = $1 AND key = ${p})`, f.sourceKey);
  if (f.start !== undefined) add((p) => `ts >= ${p}`, f.start.toISOString());
  if (f.end !== undefined) add((p) => `ts <= ${p}`, f.end.toISOString());
  if (f.search !== undefined) {
    add(
      (p) =>
        `(type ILIKE ${p} ESCAPE '\\' OR user_id ILIKE ${p} ESCAPE '\\' OR data::text ILIKE ${p} ESCAPE '\\' OR context::text ILIKE ${p} ESCAPE '\\')`,
      likePattern(f.search),
    );
  }
  if (f.after !== undefined) {
    params.push(f.after.ts.toISOString(), f.after.id);
    const [ts, id] = [`$${params.length - 1}::timestamptz`, `$${params.length}::uuid`];
    // Same rows either way. A row comparison is one index condition on (ts, id); in the user path,
    // next to each range's own bounds on ts, btree would start every range's scan at the cursor and
    // walk down to the range. A plain bound on ts lets it start at the tighter of the two.
    where.push(
      f.userId === undefined ? `(ts, id) < (${ts}, ${id})` : `ts <= ${ts} AND NOT (ts = ${ts} AND id >= ${id})`,
    );
  }
  const need = f.limit + 1;
  const rows =
    f.userId === undefined
      ? await page(db, where, params, need)
      : await userPage(db, { ...f, userId: f.userId }, where, params, need);
  const hasMore = rows.length > f.limit;
  return { rows: hasMore ? rows.slice(0, f.limit) : rows, hasMore };
}

async function page(db: Queryable, where: string[], params: unknown[], need: number): Promise<EventRecord[]> {
  const r = await db.query<EventRecord>(
    `SELECT ${SELECT} FROM events WHERE ${where.join(" AND ")} ORDER BY ts DESC, id DESC LIMIT $${params.length + 1}`,
    [...params, need],
  );
  return r.rows;
}

const HOURS_PER_READ = 256;

/**
 * A page for one user: the user's hours with events (event_user_hours), newest first, and in each
 * only the minutes marked as holding the user's events, read through the primary key
 * (project_id, ts, id) with the same filters. Each round reads just enough hours for their marked
 * minutes (each holds at least one of the user's events) to fill the page, more when filters thin
 * the rows out. The ranges are disjoint, so rows stay in (ts, id) order across rounds. The caller
 * has settled the project's derived records.
 */
async function userPage(
  db: Queryable,
  f: ListFilter & { userId: string },
  where: string[],
  params: unknown[],
  need: number,
): Promise<EventRecord[]> {
  const rows: EventRecord[] = [];
  const bounds = [f.after?.ts.getTime(), f.end?.getTime()].filter((x): x is number => x !== undefined);
  let upTo = bounds.length ? hourOf(Math.min(...bounds)) : undefined;
  const from = f.start === undefined ? undefined : hourOf(f.start.getTime());
  let queue: UserHour[] = [];
  let more = true;
  let factor = 1;
  while (rows.length < need) {
    if (queue.length === 0) {
      if (!more) break;
      queue = await userHours(db, f.projectId, f.userId, upTo, from, HOURS_PER_READ);
      more = queue.length === HOURS_PER_READ;
      if (queue.length === 0) break;
      upTo = queue[queue.length - 1].hour - HOUR_MS;
    }
    const want = (need - rows.length) * factor;
    const ranges: [number, number][] = [];
    let marked = 0;
    let take = 0;
    while (take < queue.length && marked < want) {
      ranges.push(...queue[take].ranges);
      marked += queue[take++].minutes;
    }
    queue = queue.slice(take);
    const n = params.length;
    const r = await db.query<EventRecord>(
      `SELECT ${recordSelect("e")} FROM unnest($${n + 1}::timestamptz[], $${n + 2}::timestamptz[]) AS r(lo, hi) CROSS JOIN LATERAL (
         SELECT ${columnList("events")} FROM events
         WHERE ${where.join(" AND ")} AND ts >= r.lo AND ts < r.hi
         ORDER BY ts DESC, id DESC LIMIT $${n + 3}
       ) e ORDER BY ts DESC, id DESC LIMIT $${n + 3}`,
      [
        ...params,
        ranges.map((x) => new Date(x[0]).toISOString()),
        ranges.map((x) => new Date(x[1]).toISOString()),
        need - rows.length,
      ],
    );
    rows.push(...r.rows);
    factor *= 4; // filters or a cursor inside the first hour left rows out: read wider next time
  }
  return rows;
}

/** The event with this id in the project (the id's time prefix selects the partition). */
export async function getEvent(
  db: Queryable,
  projectId: string,
  id: string,
  ts: Date,
): Promise<EventRecord | undefined> {
  const r = await db.query<EventRecord>(`SELECT ${SELECT} FROM events WHERE project_id = $1 AND ts = $2 AND id = $3`, [
    projectId,
    ts.toISOString(),
    id,
  ]);
  return r.rows[0];
}

/** Several events by (project, id, time of the id) at once, in any order (missing ones are absent). */
export async function getEvents(
  db: Queryable,
  refs: { projectId: string; id: string; ts: Date }[],
): Promise<EventRecord[]> {
  if (refs.length === 0) return [];
  const r = await db.query<EventRecord>(
    `SELECT ${SELECT} FROM events WHERE (project_id, ts, id) IN
       (SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::uuid[]))`,
    [refs.map((x) => x.projectId), refs.map((x) => x.ts.toISOString()), refs.map((x) => x.id)],
  );
  return r.rows;
}

/**
 * A user's events (by externalId) past `after` (exclusive), oldest first, at most `limit`: one batch of
 * a user export, walked with the (ts, id) of the last row as the GET .../users/:userId/export keyset.
 * Through event_user_hours (the user's hours; events has no user_id index), each hour a range scan of
 * the primary key filtered on user_id; hours wholly before `after` are skipped.
 */
export async function userEventsAfter(
  db: Queryable,
  projectId: string,
  userId: string,
  after: { us: string; id: string } | null,
  limit: number,
): Promise<(EventRecord & { us: string })[]> {
  const params: unknown[] = [projectId, userId, limit];
  let past = "";
  if (after) {
    params.push(after.us, after.id);
    const ts = "(timestamptz 'epoch' + $4::bigint * interval '1 microsecond')";
    past = ` AND h.hour > ${ts} - interval '1 hour' AND (e.ts, e.id) > (${ts}, $5::uuid)`;
  }
  const r = await db.query<EventRecord & { us: string }>(
    `SELECT ${recordSelect("e")}, (extract(epoch FROM e.ts) * 1000000)::bigint::text AS us
     FROM event_user_hours h
     JOIN events e ON e.project_id = h.project_id AND e.ts >= h.hour AND e.ts < h.hour + interval '1 hour'
                  AND e.user_id = h.user_id
     WHERE h.project_id = $1 AND h.user_id = $2${past}
     ORDER BY e.ts ASC, e.id ASC LIMIT $3`,
    params,
  );
  return r.rows;
}
