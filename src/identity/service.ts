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
import { getUser, identify, listUsers } from "./store.js";
import { toUser, userLine } from "./messages.js";
import { userEventsAfter } from "../events/store.js";
import { toEventJson } from "../events/record.js";
import { CONTENT_TYPES, ndjsonLine } from "../analytics/export-format.js";
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

/** Events per user-export batch (one read, one chunk), as the events export. */
const USER_EXPORT_BATCH = 1000;

/** `derived`: the projector of the ingest pipeline (users and groups are its derived records). */
export function createIdentityFeature(
  deps: Pick<Deps, "db" | "clock" | "auth" | "limits">,
  derived: DerivedRecords,
): Feature {
  const { db, clock, auth, limits } = deps;

  return {
    name: "identity",
    services: [
      bind(
        IdentityService,
        {
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
          async *exportUser(req, ctx) {
            const scope = await auth.project(ctx, req.projectId, "data");
            await derived.settle(scope.projectId);
            const row = req.userId.length <= 256 ? await getUser(db, scope.projectId, req.userId) : undefined;
            if (!row) throw notFound("user");
            // NDJSON as the events export writes it (docs/lifecycle.md "Export"): the user record first, on
            // its own chunk, then keyset batches of their events, oldest first, a chunk per batch. One batch
            // in memory whatever the person's size; the consumer's pace (REST: the socket's drain, RPC: the
            // stream's) decides when the next batch is read, and each read is cancelled with the request.
            yield { contentType: CONTENT_TYPES.ndjson, data: Buffer.from(userLine(row)) };
            let after: { us: string; id: string } | null = null;
            for (;;) {
              const rows = await withCancellable(db, ctx.signal, (c) =>
                userEventsAfter(c, scope.projectId, row.external_id, after, USER_EXPORT_BATCH),
              );
              if (rows.length > 0) yield { data: Buffer.from(rows.map((r) => ndjsonLine(toEventJson(r))).join("")) };
              if (rows.length < USER_EXPORT_BATCH) return;
              const last = rows[rows.length - 1];
              after = { us: last.us, id: last.id };
            }
          },
        },
        {
          streamContentTypes: { exportUser: ["application/x-ndjson"] },
          rules: { identify: identifySchema, listUsers: listSchema },
        },
      ),
    ],
  };
}
