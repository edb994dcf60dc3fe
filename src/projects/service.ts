import { createHash, randomBytes } from "node:crypto";
import type { HandlerContext } from "@connectrpc/connect";
import { z } from "zod";
import { ProjectService } from "../../gen/vigil/v1/projects_pb.js";
import type { Access } from "../auth/principal.js";
import type { Deps } from "../shared/deps.js";
import { ApiError, conflict, notFound } from "../shared/errors.js";
import type { Feature } from "../shared/feature.js";
import { retryDeadlock } from "../shared/gone.js";
import { newId } from "../shared/ids.js";
import { isUniqueViolation } from "../shared/pg-errors.js";
import { validate } from "../shared/validate.js";
import { tx } from "../storage/db.js";
import { member, projectForMember, toKey, toMember, toProject, type KeyRow, type MemberRow, type ProjectRow } from "./store.js";

const PLATFORMS = ["node", "browser", "react", "next", "other"] as const;
const ENVIRONMENTS = ["production", "development", "preview"] as const;
const name = z.string().trim().min(1, "is required").max(200);

const createSchema = z.object({ name, platform: z.enum(PLATFORMS) });
const updateSchema = z.object({ name: name.optional() });
const keySchema = z.object({ name, environment: z.enum(ENVIRONMENTS) });
const addMemberSchema = z.object({ email: z.string().trim().toLowerCase().email(), role: z.enum(["admin", "member"]) });
const roleSchema = z.object({ role: z.enum(["admin", "member"]) });

/** `vk_` + 40 random base62 characters (about 238 bits). */
function newSecret(): string {
  const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  let s = "";
  while (s.length < 40) for (const b of randomBytes(48)) if (b < 248 && s.length < 40) s += alphabet[b % 62];
  return `vk_${s}`;
}

export function createProjectsFeature(deps: Deps): Feature {
  const { db, clock, auth, limits } = deps;
  /** Management writes count per project (RATE_LIMIT_WRITES_PER_MINUTE). */
  const write = async (ctx: HandlerContext, projectId: string, access: Access) => {
    const scope = await auth.project(ctx, projectId, access);
    await limits.take("writes", scope.projectId);
    return scope;
  };

  return {
    name: "projects",
    services: [
      {
        desc: ProjectService,
        impl: {
          async createProject(req, ctx) {
            const p = await auth.session(ctx);
            // No project yet: project creation counts per account.
            await limits.take("writes", p.accountId);
            const input = validate(createSchema, { name: req.name, platform: req.platform });
            const now = clock();
            const row = await tx(db, async (c) => {
              const r = await c.query<ProjectRow>("INSERT INTO projects (id, name, platform, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING *", [newId("prj"), input.name, input.platform, now]);
              await c.query("INSERT INTO project_members (project_id, account_id, role, created_at) VALUES ($1, $2, 'owner', $3)", [r.rows[0].id, p.accountId, now]);
              return { ...r.rows[0], role: "owner" };
            });
            return { data: toProject(row) };
          },
          async listProjects(_req, ctx) {
            const p = await auth.session(ctx);
            const r = await db.query<ProjectRow>("SELECT p.*, m.role FROM projects p JOIN project_members m ON m.project_id = p.id WHERE m.account_id = $1 ORDER BY p.created_at, p.id", [p.accountId]);
            return { data: r.rows.map(toProject) };
          },
          async getProject(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            if (scope.principal.kind === "apiKey") {
              const r = await db.query<ProjectRow>("SELECT * FROM projects WHERE id = $1", [scope.projectId]);
              if (!r.rows[0]) throw notFound("project");
              return { data: toProject(r.rows[0]) };
            }
            const row = await projectForMember(db, scope.projectId, scope.principal.accountId);
            if (!row) throw notFound("project");
            return { data: toProject(row) };
          },
          async updateProject(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const input = validate(updateSchema, { name: req.name });
            if (input.name !== undefined) await db.query("UPDATE projects SET name = $2, updated_at = $3 WHERE id = $1", [scope.projectId, input.name, clock()]);
            const row = await projectForMember(db, scope.projectId, (scope.principal as { accountId: string }).accountId);
            if (!row) throw notFound("project");
            return { data: toProject(row) };
          },
          async deleteProject(req, ctx) {
            const scope = await write(ctx, req.projectId, "owner");
            // The cascade may deadlock with a write in flight (a heartbeat locking its monitor): run it again.
            await retryDeadlock(() => db.query("DELETE FROM projects WHERE id = $1", [scope.projectId]));
            return {};
          },

          async listMembers(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "member");
            const r = await db.query<MemberRow>(
              "SELECT m.account_id, a.email, a.name, m.role, m.created_at FROM project_members m JOIN accounts a ON a.id = m.account_id WHERE m.project_id = $1 ORDER BY m.created_at, a.email",
              [scope.projectId],
            );
            return { data: r.rows.map(toMember) };
          },
          async addMember(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const input = validate(addMemberSchema, { email: req.email, role: req.role });
            const acct = await db.query<{ id: string }>("SELECT id FROM accounts WHERE lower(email) = $1", [input.email]);
            if (!acct.rows[0]) throw new ApiError(404, "not_found", "no account with this email", [{ field: "email", message: "no such account" }]);
            try {
              await db.query("INSERT INTO project_members (project_id, account_id, role, created_at) VALUES ($1, $2, $3, $4)", [scope.projectId, acct.rows[0].id, input.role, clock()]);
            } catch (err) {
              if (isUniqueViolation(err)) throw conflict("this account is already a member of the project");
              throw err;
            }
            return { data: toMember((await member(db, scope.projectId, acct.rows[0].id))!) };
          },
          async updateMember(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const input = validate(roleSchema, { role: req.role });
            const target = await member(db, scope.projectId, req.userId);
            if (!target) throw notFound("member");
            if (target.role === "owner") throw new ApiError(403, "forbidden", "the owner cannot be demoted");
            await db.query("UPDATE project_members SET role = $3 WHERE project_id = $1 AND account_id = $2", [scope.projectId, req.userId, input.role]);
            return { data: toMember({ ...target, role: input.role }) };
          },
          async removeMember(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const target = await member(db, scope.projectId, req.userId);
            if (!target) throw notFound("member");
            if (target.role === "owner") throw new ApiError(403, "forbidden", "the owner cannot be removed");
            await db.query("DELETE FROM project_members WHERE project_id = $1 AND account_id = $2", [scope.projectId, req.userId]);
            return {};
          },

          async createApiKey(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const input = validate(keySchema, { name: req.name, environment: req.environment });
            const secret = newSecret();
            const hash = createHash("sha256").update(secret).digest("hex");
            const r = await db.query<KeyRow>(
              "INSERT INTO api_keys (id, project_id, name, environment, prefix, key_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, name, environment, prefix, created_at, last_used_at",
              [newId("key"), scope.projectId, input.name, input.environment, secret.slice(0, 7), hash, clock()],
            );
            return { data: { ...toKey(r.rows[0]), secret } };
          },
          async listApiKeys(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "admin");
            const r = await db.query<KeyRow>(
              "SELECT id, name, environment, prefix, created_at, last_used_at FROM api_keys WHERE project_id = $1 AND revoked_at IS NULL ORDER BY created_at, id",
              [scope.projectId],
            );
            return { data: r.rows.map(toKey) };
          },
          async revokeApiKey(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const r = await db.query("UPDATE api_keys SET revoked_at = $3 WHERE id = $1 AND project_id = $2 AND revoked_at IS NULL", [req.keyId, scope.projectId, clock()]);
            if (!r.rowCount) throw notFound("API key");
            return {};
          },
        },
      },
    ],
  };
}
