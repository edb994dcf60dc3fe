import type { Queryable } from "../storage/db.js";
import { newId } from "../shared/ids.js";

export interface UserRow {
  id: string;
  project_id: string;
  external_id: string;
  properties: Record<string, unknown>;
  event_count: number;
  first_seen_at: Date;
  last_seen_at: Date;
}

const COLUMNS = "id, project_id, external_id, properties, event_count, first_seen_at, last_seen_at";

/** Creates the user or merges `properties` onto it and moves lastSeenAt forward to `now`. */
export async function identify(
  db: Queryable,
  projectId: string,
  externalId: string,
  properties: Record<string, unknown>,
  now: Date,
): Promise<UserRow> {
  const r = await db.query<UserRow>(
    `INSERT INTO users (project_id, external_id, id, properties, first_seen_at, last_seen_at)
     VALUES ($1, $2, $3, $4::jsonb, $5, $5)
     ON CONFLICT (project_id, external_id) DO UPDATE SET
       properties = users.properties || EXCLUDED.properties,
       last_seen_at = GREATEST(users.last_seen_at, EXCLUDED.last_seen_at)
     RETURNING ${COLUMNS}`,
    [projectId, externalId, newId("usr"), JSON.stringify(properties), now.toISOString()],
  );
  return r.rows[0];
}

export async function listUsers(
  db: Queryable,
  projectId: string,
  limit: number,
  offset: number,
): Promise<{ rows: UserRow[]; total: number }> {
  const [rows, total] = await Promise.all([
    db.query<UserRow>(
      `SELECT ${COLUMNS} FROM users WHERE project_id = $1 ORDER BY last_seen_at DESC, id DESC LIMIT $2 OFFSET $3`,
      [projectId, limit, offset],
    ),
    db.query<{ n: number }>("SELECT count(*) AS n FROM users WHERE project_id = $1", [projectId]),
  ]);
  return { rows: rows.rows, total: total.rows[0].n };
}

/** By the user's id, else by its externalId. */
export async function getUser(db: Queryable, projectId: string, idOrExternal: string): Promise<UserRow | undefined> {
  const r = await db.query<UserRow>(
    `SELECT ${COLUMNS} FROM users WHERE project_id = $1 AND (id = $2 OR external_id = $2) ORDER BY (id = $2) DESC LIMIT 1`,
    [projectId, idOrExternal],
  );
  return r.rows[0];
}
