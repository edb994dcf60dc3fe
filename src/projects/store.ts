import { retryDeadlock } from "../shared/gone.js";
import { holdProjectCap, type ProjectCap } from "../shared/project-cap.js";
import { tx, type Db, type Queryable } from "../storage/db.js";

// SQL for projects, members and API keys (messages.ts maps the rows to the API's shapes).

export interface ProjectRow {
  id: string;
  name: string;
  platform: string;
  created_at: Date;
  updated_at: Date;
  /** Normalised origins publishable keys may be used from (empty: any). */
  allowed_origins: string[];
  /** The project's own retention (NULL: the operator's default). */
  retention_days: number | null;
  role?: string | null;
}

export interface MemberRow {
  account_id: string;
  email: string;
  name: string | null;
  role: string;
  created_at: Date;
}

export interface KeyRow {
  id: string;
  name: string;
  environment: string;
  kind: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
}

const MEMBER_COLUMNS =
  "m.account_id, a.email, a.name, m.role, m.created_at FROM project_members m JOIN accounts a ON a.id = m.account_id";
const KEY_COLUMNS = "id, name, environment, kind, prefix, created_at, last_used_at";

/** A new project and its owner, in one transaction. */
export async function insertProject(
  db: Db,
  p: { id: string; name: string; platform: string; ownerId: string; now: Date },
): Promise<ProjectRow> {
  return tx(db, async (c) => {
    const r = await c.query<ProjectRow>(
      "INSERT INTO projects (id, name, platform, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING *",
      [p.id, p.name, p.platform, p.now],
    );
    await c.query(
      "INSERT INTO project_members (project_id, account_id, role, created_at) VALUES ($1, $2, 'owner', $3)",
      [r.rows[0].id, p.ownerId, p.now],
    );
    return { ...r.rows[0], role: "owner" };
  });
}

/** The projects an account is a member of, with its role. */
export async function projectsOfAccount(q: Queryable, accountId: string): Promise<ProjectRow[]> {
  const r = await q.query<ProjectRow>(
    "SELECT p.*, m.role FROM projects p JOIN project_members m ON m.project_id = p.id WHERE m.account_id = $1 ORDER BY p.created_at, p.id",
    [accountId],
  );
  return r.rows;
}

export async function projectById(q: Queryable, projectId: string): Promise<ProjectRow | undefined> {
  const r = await q.query<ProjectRow>("SELECT * FROM projects WHERE id = $1", [projectId]);
  return r.rows[0];
}

export async function projectForMember(
  q: Queryable,
  projectId: string,
  accountId: string,
): Promise<ProjectRow | undefined> {
  const r = await q.query<ProjectRow>(
    "SELECT p.*, m.role FROM projects p JOIN project_members m ON m.project_id = p.id AND m.account_id = $2 WHERE p.id = $1",
    [projectId, accountId],
  );
  return r.rows[0];
}

/** Sets what is given (name, allowed origins, retention days: null sets it back to the default); the rest stays. */
export async function updateProject(
  q: Queryable,
  projectId: string,
  change: { name?: string; allowedOrigins?: string[]; retentionDays?: number | null },
  now: Date,
): Promise<void> {
  await q.query(
    `UPDATE projects SET name = COALESCE($2, name), allowed_origins = COALESCE($3::text[], allowed_origins),
       retention_days = CASE WHEN $5::boolean THEN $6::integer ELSE retention_days END, updated_at = $4 WHERE id = $1`,
    [
      projectId,
      change.name ?? null,
      change.allowedOrigins ?? null,
      now,
      change.retentionDays !== undefined,
      change.retentionDays ?? null,
    ],
  );
}

/**
 * Deletes the project row (its members, API keys, sources, monitors, webhooks and pages go with it
 * by cascade) and queues the rest of its data for the purge sweeper (src/lifecycle/purge.ts), in
 * one transaction: the project is gone and queued together, or neither.
 *
 * Lock order: a heartbeat write locks its monitors (in id order) before its inserts take the
 * project's key-share lock (src/uptime/heartbeats.ts); a bare cascade takes the project's row
 * first and the monitors after, the opposite order, and deadlocks with such a write. So the
 * project's monitors are locked first, in id order, as the writers lock them; an in-flight write
 * finishes before the delete goes on, and one arriving after waits and then finds its monitor gone.
 * A deadlock left (a write that locks monitors in two rounds) is run again, a few times.
 */
export async function deleteProject(db: Db, projectId: string): Promise<void> {
  await retryDeadlock(
    () =>
      tx(db, async (c) => {
        await c.query("SELECT id FROM monitors WHERE project_id = $1 ORDER BY id FOR UPDATE", [projectId]);
        await c.query(
          "WITH d AS (DELETE FROM projects WHERE id = $1 RETURNING id) INSERT INTO deleted_projects (id, deleted_at) SELECT id, now() FROM d ON CONFLICT (id) DO NOTHING",
          [projectId],
        );
      }),
    DELETE_ATTEMPTS,
  );
}

/** Attempts of a project delete that PostgreSQL chose as a deadlock victim (it is safe to repeat). */
const DELETE_ATTEMPTS = 6;

export async function listMembers(q: Queryable, projectId: string): Promise<MemberRow[]> {
  const r = await q.query<MemberRow>(
    `SELECT ${MEMBER_COLUMNS} WHERE m.project_id = $1 ORDER BY m.created_at, a.email`,
    [projectId],
  );
  return r.rows;
}

export async function member(q: Queryable, projectId: string, accountId: string): Promise<MemberRow | undefined> {
  const r = await q.query<MemberRow>(`SELECT ${MEMBER_COLUMNS} WHERE m.project_id = $1 AND m.account_id = $2`, [
    projectId,
    accountId,
  ]);
  return r.rows[0];
}

/** The account with this (lower-cased) email, if any. */
export async function accountIdByEmail(q: Queryable, email: string): Promise<string | undefined> {
  const r = await q.query<{ id: string }>("SELECT id FROM accounts WHERE lower(email) = $1", [email]);
  return r.rows[0]?.id;
}

/** Members per project (the owner included): MAX_MEMBERS_PER_PROJECT. */
const memberCap = (max: number): ProjectCap => ({
  what: "members",
  max,
  countSql: "SELECT count(*)::int AS n FROM project_members WHERE project_id = $1",
  field: "email",
});

/**
 * Adds the member under the project's member cap (409 when full). Throws the unique violation when
 * the account is already a member.
 */
export function insertMember(
  db: Db,
  projectId: string,
  accountId: string,
  role: string,
  now: Date,
  maxMembers: number,
): Promise<void> {
  return tx(db, async (c) => {
    await holdProjectCap(c, projectId, memberCap(maxMembers));
    await c.query("INSERT INTO project_members (project_id, account_id, role, created_at) VALUES ($1, $2, $3, $4)", [
      projectId,
      accountId,
      role,
      now,
    ]);
  });
}

export async function setMemberRole(q: Queryable, projectId: string, accountId: string, role: string): Promise<void> {
  await q.query("UPDATE project_members SET role = $3 WHERE project_id = $1 AND account_id = $2", [
    projectId,
    accountId,
    role,
  ]);
}

export async function removeMember(q: Queryable, projectId: string, accountId: string): Promise<void> {
  await q.query("DELETE FROM project_members WHERE project_id = $1 AND account_id = $2", [projectId, accountId]);
}

/** Keys per project that are not revoked (revoked ones give their place back): MAX_API_KEYS_PER_PROJECT. */
const keyCap = (max: number): ProjectCap => ({
  what: "API keys",
  max,
  countSql: "SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1 AND revoked_at IS NULL",
  field: "name",
});

/** Creates the key under the project's key cap (409 when full). */
export function insertApiKey(
  db: Db,
  maxKeys: number,
  k: {
    id: string;
    projectId: string;
    name: string;
    environment: string;
    kind: string;
    prefix: string;
    hash: string;
    now: Date;
  },
): Promise<KeyRow> {
  return tx(db, async (c) => {
    await holdProjectCap(c, k.projectId, keyCap(maxKeys));
    const r = await c.query<KeyRow>(
      `INSERT INTO api_keys (id, project_id, name, environment, kind, prefix, key_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${KEY_COLUMNS}`,
      [k.id, k.projectId, k.name, k.environment, k.kind, k.prefix, k.hash, k.now],
    );
    return r.rows[0];
  });
}

/** The project's keys that are not revoked. */
export async function listApiKeys(q: Queryable, projectId: string): Promise<KeyRow[]> {
  const r = await q.query<KeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys WHERE project_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`,
    [projectId],
  );
  return r.rows;
}

/** False when there was no such unrevoked key in the project. */
export async function revokeApiKey(q: Queryable, projectId: string, keyId: string, now: Date): Promise<boolean> {
  const r = await q.query(
    "UPDATE api_keys SET revoked_at = $3 WHERE id = $1 AND project_id = $2 AND revoked_at IS NULL",
    [keyId, projectId, now],
  );
  return !!r.rowCount;
}
