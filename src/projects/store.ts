import type { Queryable } from "../storage/db.js";

// SQL for projects, members and API keys. Rows are mapped to the API's shapes here.

export interface ProjectRow {
  id: string;
  name: string;
  platform: string;
  created_at: Date;
  updated_at: Date;
  role?: string | null;
}

export const toProject = (r: ProjectRow) => ({
  id: r.id,
  name: r.name,
  platform: r.platform,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  role: r.role ?? undefined,
});

export interface MemberRow {
  account_id: string;
  email: string;
  name: string | null;
  role: string;
  created_at: Date;
}

export const toMember = (r: MemberRow) => ({ userId: r.account_id, email: r.email, name: r.name ?? undefined, role: r.role, createdAt: r.created_at.toISOString() });

export interface KeyRow {
  id: string;
  name: string;
  environment: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
}

export const toKey = (r: KeyRow) => ({
  id: r.id,
  name: r.name,
  environment: r.environment,
  prefix: r.prefix,
  createdAt: r.created_at.toISOString(),
  lastUsedAt: r.last_used_at?.toISOString(),
});

export async function projectForMember(q: Queryable, projectId: string, accountId: string): Promise<ProjectRow | undefined> {
  const r = await q.query<ProjectRow>(
    "SELECT p.*, m.role FROM projects p JOIN project_members m ON m.project_id = p.id AND m.account_id = $2 WHERE p.id = $1",
    [projectId, accountId],
  );
  return r.rows[0];
}

export async function member(q: Queryable, projectId: string, accountId: string): Promise<MemberRow | undefined> {
  const r = await q.query<MemberRow>(
    "SELECT m.account_id, a.email, a.name, m.role, m.created_at FROM project_members m JOIN accounts a ON a.id = m.account_id WHERE m.project_id = $1 AND m.account_id = $2",
    [projectId, accountId],
  );
  return r.rows[0];
}
