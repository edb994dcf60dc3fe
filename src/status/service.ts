import { StatusService } from "../../gen/vigil/v1/status_pb.js";
import type { Deps } from "../platform/deps.js";
import { clientAddress, clientInfoKey } from "../shared/context.js";
import { notFound } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { SnapshotCache } from "./cache.js";
import { createStatusHttp } from "./http.js";
import { StatusMetrics } from "./metrics.js";
import { parseSlug, slugSchema } from "./requests.js";
import { buildSnapshot, type Snapshot } from "./snapshot.js";

// The public reading side of status pages (decisions.md: Status pages; docs/pages.md): no
// credentials (`no_credentials` on the RPC), rate limited per client address, answered from a
// per-page snapshot computed at most once per STATUS_PAGE_REFRESH_MS (cache.ts). gRPC and Connect
// callers get the snapshot's message through StatusService; REST, HTML, badge and feed readers get
// its ready bytes through the feature's HTTP routes (http.ts). The pages themselves are managed by
// PageService (src/pages/).

export type StatusDeps = Pick<Deps, "db" | "clock" | "config" | "limits" | "log" | "telemetry">;

export function createStatusFeature(deps: StatusDeps): Feature {
  const metrics = new StatusMetrics(deps.telemetry.registry);
  const refreshMs = deps.config.statusPages.refreshMs;
  const pages = new SnapshotCache<Snapshot>({
    refreshMs,
    size: (s) => s.bytes,
    build: async (slug) => {
      try {
        const s = await buildSnapshot(deps, slug);
        metrics.builds.inc({ outcome: s ? "page" : "not_found" });
        return s;
      } catch (err) {
        metrics.builds.inc({ outcome: "failed" });
        throw err;
      }
    },
    onStaleError: (err, slug) => deps.log.warn({ err, slug }, "status page refresh failed; serving the previous one"),
  });

  const service = bind(
    StatusService,
    {
      async getStatusPage(req, ctx) {
        await deps.limits.take("statusReads", clientAddress(ctx.values.get(clientInfoKey)));
        const snapshot = await pages.get(parseSlug(req.slug));
        if (!snapshot) throw notFound("status page");
        return { data: snapshot.message };
      },
    },
    { rules: { getStatusPage: slugSchema } },
  );

  return {
    name: "status",
    services: [service],
    http: createStatusHttp({
      pages,
      limits: deps.limits,
      maxAgeSeconds: Math.max(1, Math.ceil(refreshMs / 1000)),
      log: deps.log,
    }),
  };
}
