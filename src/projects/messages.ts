import type { retentionView } from "../lifecycle/model.js";
import type { KeyRow, MemberRow, ProjectRow } from "./store.js";

// Rows of projects, members and API keys → the API's messages.

/** `retention`: what is in force for the project (lifecycle/model.ts retentionView). */
export const toProject = (r: ProjectRow, retention: ReturnType<typeof retentionView>) => ({
  id: r.id,
  name: r.name,
  platform: r.platform,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  allowedOrigins: r.allowed_origins,
  retentionDays: r.retention_days ?? undefined,
  retention,
  role: r.role ?? undefined,
});

export const toMember = (r: MemberRow) => ({
  userId: r.account_id,
  email: r.email,
  name: r.name ?? undefined,
  role: r.role,
  createdAt: r.created_at.toISOString(),
});

export const toKey = (r: KeyRow) => ({
  id: r.id,
  name: r.name,
  environment: r.environment,
  kind: r.kind,
  prefix: r.prefix,
  createdAt: r.created_at.toISOString(),
  lastUsedAt: r.last_used_at?.toISOString(),
});
