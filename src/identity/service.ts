import { z } from "zod";
import { IdentityService } from "../../gen/vigil/v1/identity_pb.js";
import type { DerivedRecords } from "../events/pipeline.js";
import type { Deps } from "../platform/deps.js";
import { notFound } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { unlessProjectGone } from "../shared/gone.js";
import { jsonObjectSchema } from "../shared/json.js";
import { textSchema } from "../shared/text.js";
import { validate } from "../shared/validate.js";
import { getUser, identify, listUsers, toUser } from "./store.js";
import { rowToStored, toEventMessage, userEvents } from "../events/store.js";
import { toJob } from "../jobs/messages.js";
import { insertJob } from "../jobs/store.js";
import { tx, withCancellable } from "../storage/db.js";

// Users of a project: maintained from events by the pipeline's identity projection
// (projection.ts), identified from the dashboard, read by API key or member session.

const identifySchema = z.object({
  externalId: textSchema({ min: 1, max: 256 }),
  // The shared JSON check: finite numbers, storable text, keys such as __proto__ kept as data.
  properties: jsonObjectSchema(1024 * 1024).default({}),
});
const listSchema = z.object({
  limit: z.number().int().min(1, "must be between 1 and 100").max(100, "must be between 1 and 100").default(50),
  offset: z.number().int().min(0, "must not be negative").default(0),
});

/** `derived`: the projector of the ingest pipeline (users and groups are its derived records). */
export function createIdentityFeature(
  deps: Pick<Deps, "db" | "clock" | "auth" | "limits">,
  derived: DerivedRecords,
): Feature {
  const { db, clock, auth, limits } = deps;

  return {
    name: "identity",
    services: [
      bind(IdentityService, {
        async identify(req, ctx) {
          const scope = await auth.project(ctx, req.projectId, "member");
          await limits.take("identify", scope.projectId);
          const input = validate(identifySchema, { externalId: req.externalId, properties: req.properties });
          // Settle first: properties merge last-wins, so events accepted before this call apply before it.
          await derived.settle(scope.projectId);
          // A project deleted meanwhile answers as after the delete (404), not 500.
          const row = await unlessProjectGone(
            () => identify(db, scope.projectId, input.externalId, input.properties, clock()),
            () => auth.project(ctx, req.projectId, "member"),
          );
          return { data: toUser(row, false) };
        },
        async listUsers(req, ctx) {
          const scope = await auth.project(ctx, req.projectId, "data");
          const input = validate(listSchema, { limit: req.limit, offset: req.offset });
          await derived.settle(scope.projectId);
          const { rows, total } = await listUsers(db, scope.projectId, input.limit, input.offset);
          return {
            data: rows.map((r) => toUser(r, false)),
            meta: { total: BigInt(total), limit: input.limit, offset: input.offset },
          };
        },
        async getUser(req, ctx) {
          const scope = await auth.project(ctx, req.projectId, "data");
          await derived.settle(scope.projectId);
          const row = req.userId.length <= 256 ? await getUser(db, scope.projectId, req.userId) : undefined;
          if (!row) throw notFound("user");
          return { data: toUser(row, true) };
        },
        async deleteUser(req, ctx) {
          const scope = await auth.project(ctx, req.projectId, "admin");
          await derived.settle(scope.projectId);
          // The job is stored with the request (same transaction) and runs in the background (src/jobs/).
          const job = await tx(db, async (c) => {
            const row = req.userId.length <= 256 ? await getUser(c, scope.projectId, req.userId) : undefined;
            if (!row) throw notFound("user");
            return insertJob(
              c,
              scope.projectId,
              "user.delete",
              { userId: row.id, externalId: row.external_id },
              clock(),
            );
          });
          return { data: toJob(job) };
        },
        async exportUser(req, ctx) {
          const scope = await auth.project(ctx, req.projectId, "data");
          await derived.settle(scope.projectId);
          const row = req.userId.length <= 256 ? await getUser(db, scope.projectId, req.userId) : undefined;
          if (!row) throw notFound("user");
          // One read: the user's events are found through their hours (event_user_hours), oldest first.
          const events = await withCancellable(db, ctx.signal, (c) => userEvents(c, scope.projectId, row.external_id));
          return { data: { user: toUser(row, true), events: events.map((e) => toEventMessage(rowToStored(e))) } };
        },
      }),
    ],
  };
}
