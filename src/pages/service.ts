import type { HandlerContext } from "@connectrpc/connect";
import { PageService } from "../../gen/vigil/v1/pages_pb.js";
import type { Deps } from "../platform/deps.js";
import { notFound } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { unlessProjectGone } from "../shared/gone.js";
import { newId } from "../shared/ids.js";
import { pageMessage } from "./messages.js";
import { isEmptyPatch } from "./model.js";
import { createInput, createSchema, updateInput, updateSchema } from "./requests.js";
import * as store from "./store.js";

// Status page management (decisions.md: Status pages; docs/pages.md): session routes, owners and
// admins write, every member reads; API keys are refused (403). Another project's page is a 404.
// What the public sees of a page is the status feature's (src/status/), which reads these tables.

export function createPagesFeature(deps: Pick<Deps, "db" | "clock" | "auth" | "limits">): Feature {
  const { db, clock, auth, limits } = deps;
  const read = (ctx: HandlerContext, projectId: string) => auth.project(ctx, projectId, "member");
  const admin = (ctx: HandlerContext, projectId: string) => auth.project(ctx, projectId, "admin");
  /** Writes count as management writes per project (RATE_LIMIT_WRITES_PER_MINUTE). */
  const write = async (ctx: HandlerContext, projectId: string) => {
    const scope = await admin(ctx, projectId);
    await limits.take("writes", scope.projectId);
    return scope;
  };
  const pageOf = async (projectId: string, id: string) => {
    const row = await store.getPage(db, projectId, id);
    if (!row) throw notFound("page");
    return row;
  };

  return {
    name: "pages",
    services: [
      bind(
        PageService,
        {
          async createPage(req, ctx) {
            const { projectId } = await write(ctx, req.projectId);
            const input = createInput(req);
            const row = await unlessProjectGone(
              () => store.createPage(db, { ...input, id: newId("pg"), projectId, now: clock() }),
              () => admin(ctx, req.projectId),
            );
            return { data: pageMessage(row) };
          },
          async listPages(req, ctx) {
            const { projectId } = await read(ctx, req.projectId);
            return { data: (await store.listPages(db, projectId)).map(pageMessage) };
          },
          async getPage(req, ctx) {
            const { projectId } = await read(ctx, req.projectId);
            return { data: pageMessage(await pageOf(projectId, req.pageId)) };
          },
          async updatePage(req, ctx) {
            const { projectId } = await write(ctx, req.projectId);
            const input = updateInput(req);
            if (isEmptyPatch(input)) return { data: pageMessage(await pageOf(projectId, req.pageId)) };
            const row = await unlessProjectGone(
              () => store.updatePage(db, projectId, req.pageId, input, clock()),
              () => admin(ctx, req.projectId),
            );
            return { data: pageMessage(row) };
          },
          async deletePage(req, ctx) {
            const { projectId } = await write(ctx, req.projectId);
            if (!(await store.deletePage(db, projectId, req.pageId))) throw notFound("page");
            return {};
          },
        },
        { rules: { createPage: createSchema, updatePage: updateSchema } },
      ),
    ],
  };
}
