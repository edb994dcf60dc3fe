import type { HandlerContext } from "@connectrpc/connect";
import type { Value } from "@bufbuild/protobuf/wkt";
import { ProjectService } from "../../gen/vigil/v1/projects_pb.js";
import { PING_PREFIX, PUBLISHABLE_PREFIX, type Access, type KeyKind } from "../auth/principal.js";
import type { Deps } from "../platform/deps.js";
import { ApiError, conflict, notFound } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { newId, randomToken, sha256Hex } from "../shared/ids.js";
import { isUniqueViolation } from "../shared/pg-errors.js";
import { validate } from "../shared/validate.js";
import { retentionView } from "../lifecycle/model.js";
import * as lifecycle from "../lifecycle/store.js";
import { toKey, toMember, toProject } from "./messages.js";
import {
  addMemberSchema,
  createSchema,
  keySchema,
  parseAllowedOrigins,
  parseRetentionDays,
  roleSchema,
  updateSchema,
} from "./requests.js";
import * as store from "./store.js";

// Projects, members and API keys: handlers only (SQL in store.ts, validation in requests.ts).

/** A ListValue item as what requests.ts validates: its string, or a marker for any other kind. */
const valueItem = (v: Value): unknown => (v.kind.case === "stringValue" ? v.kind.value : { notAString: v.kind.case });

/** A Value as the JSON it carries at the top level (lists and objects as markers: never valid where used). */
const valueJson = (v: Value): unknown =>
  v.kind.case === "nullValue"
    ? null
    : v.kind.case === "numberValue" || v.kind.case === "stringValue" || v.kind.case === "boolValue"
      ? v.kind.value
      : { notAScalar: v.kind.case };

/**
 * `vk_` + 40 random base62 characters (about 238 bits); publishable keys `vk_pub_` + the same, ping
 * keys `vk_ping_` + the same. The `_` after `pub`/`ping` is not base62, so no secret key can begin
 * with `vk_pub_` or `vk_ping_` (auth relies on it).
 */
const KEY_PREFIXES: Record<KeyKind, string> = { secret: "vk_", publishable: PUBLISHABLE_PREFIX, ping: PING_PREFIX };
const newSecret = (kind: KeyKind): string => `${KEY_PREFIXES[kind]}${randomToken(40)}`;

export function createProjectsFeature(deps: Pick<Deps, "db" | "clock" | "auth" | "limits" | "config">): Feature {
  const { db, clock, auth, limits, config } = deps;
  /** Rows → messages, with the retention in force (the last pass read once per answer). */
  const toProjects = async (rows: store.ProjectRow[]) => {
    const last = await lifecycle.lastRunAt(db);
    const now = clock().getTime();
    return rows.map((r) => toProject(r, retentionView(r.retention_days, config.retention, now, last)));
  };
  const one = async (row: store.ProjectRow) => (await toProjects([row]))[0];
  /** Management writes count per project (RATE_LIMIT_WRITES_PER_MINUTE). */
  const write = async (ctx: HandlerContext, projectId: string, access: Access) => {
    const scope = await auth.project(ctx, projectId, access);
    await limits.take("writes", scope.projectId);
    return scope;
  };

  return {
    name: "projects",
    services: [
      bind(
        ProjectService,
        {
          async createProject(req, ctx) {
            const p = await auth.session(ctx);
            // No project yet: project creation counts per account.
            await limits.take("writes", p.accountId);
            const input = validate(createSchema, { name: req.name, platform: req.platform });
            const now = clock();
            const row = await store.insertProject(db, {
              id: newId("prj"),
              name: input.name,
              platform: input.platform,
              ownerId: p.accountId,
              now,
            });
            return { data: await one(row) };
          },
          async listProjects(_req, ctx) {
            const p = await auth.session(ctx);
            return { data: await toProjects(await store.projectsOfAccount(db, p.accountId)) };
          },
          async getProject(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            if (scope.principal.kind === "apiKey") {
              const row = await store.projectById(db, scope.projectId);
              if (!row) throw notFound("project");
              return { data: await one(row) };
            }
            const row = await store.projectForMember(db, scope.projectId, scope.principal.accountId);
            if (!row) throw notFound("project");
            return { data: await one(row) };
          },
          async updateProject(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const input = validate(updateSchema, { name: req.name });
            // A ListValue: absent leaves the origins as they are, `[]` allows any origin.
            const allowedOrigins = req.allowedOrigins && parseAllowedOrigins(req.allowedOrigins.values.map(valueItem));
            // A Value: absent leaves it, null returns to the operator's default.
            const retentionDays =
              req.retentionDays && parseRetentionDays(valueJson(req.retentionDays), config.retention.maxDays);
            if (input.name !== undefined || allowedOrigins !== undefined || retentionDays !== undefined)
              await store.updateProject(
                db,
                scope.projectId,
                { name: input.name, allowedOrigins, retentionDays },
                clock(),
              );
            const row = await store.projectForMember(
              db,
              scope.projectId,
              (scope.principal as { accountId: string }).accountId,
            );
            if (!row) throw notFound("project");
            return { data: await one(row) };
          },
          async deleteProject(req, ctx) {
            const scope = await write(ctx, req.projectId, "owner");
            await store.deleteProject(db, scope.projectId);
            return {};
          },

          async listMembers(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "member");
            return { data: (await store.listMembers(db, scope.projectId)).map(toMember) };
          },
          async addMember(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const input = validate(addMemberSchema, { email: req.email, role: req.role });
            const accountId = await store.accountIdByEmail(db, input.email);
            if (!accountId)
              throw new ApiError(404, "not_found", "no account with this email", [
                { field: "email", message: "no such account" },
              ]);
            try {
              await store.insertMember(db, scope.projectId, accountId, input.role, clock(), config.projects.maxMembers);
            } catch (err) {
              if (isUniqueViolation(err)) throw conflict("this account is already a member of the project");
              throw err;
            }
            return { data: toMember((await store.member(db, scope.projectId, accountId))!) };
          },
          async updateMember(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const input = validate(roleSchema, { role: req.role });
            const target = await store.member(db, scope.projectId, req.userId);
            if (!target) throw notFound("member");
            if (target.role === "owner") throw new ApiError(403, "forbidden", "the owner cannot be demoted");
            await store.setMemberRole(db, scope.projectId, req.userId, input.role);
            return { data: toMember({ ...target, role: input.role }) };
          },
          async removeMember(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const target = await store.member(db, scope.projectId, req.userId);
            if (!target) throw notFound("member");
            if (target.role === "owner") throw new ApiError(403, "forbidden", "the owner cannot be removed");
            await store.removeMember(db, scope.projectId, req.userId);
            return {};
          },

          async createApiKey(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            const input = validate(keySchema, { name: req.name, environment: req.environment, kind: req.kind });
            const secret = newSecret(input.kind);
            const hash = sha256Hex(secret);
            const row = await store.insertApiKey(db, config.projects.maxApiKeys, {
              id: newId("key"),
              projectId: scope.projectId,
              name: input.name,
              environment: input.environment,
              kind: input.kind,
              prefix: secret.slice(0, 7),
              hash,
              now: clock(),
            });
            return { data: { ...toKey(row), secret } };
          },
          async listApiKeys(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "admin");
            return { data: (await store.listApiKeys(db, scope.projectId)).map(toKey) };
          },
          async revokeApiKey(req, ctx) {
            const scope = await write(ctx, req.projectId, "admin");
            if (!(await store.revokeApiKey(db, scope.projectId, req.keyId, clock()))) throw notFound("API key");
            return {};
          },
        },
        {
          rules: {
            createProject: createSchema,
            updateProject: updateSchema,
            addMember: addMemberSchema,
            updateMember: roleSchema,
            createApiKey: keySchema,
          },
        },
      ),
    ],
  };
}
