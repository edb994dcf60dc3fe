import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PageSchema } from "../../gen/vigil/v1/pages_pb.js";
import type { PageRow } from "./store.js";

// Page rows as the API's record (decisions.md: Status pages): `id, slug, title, description,
// published, monitors: [{monitorId, name, section}], createdAt, updatedAt`; a display name or
// section not given is null (the page shows the monitor's own name, no heading).

export function pageMessage(r: PageRow): MessageInitShape<typeof PageSchema> {
  return {
    id: r.id,
    slug: r.slug,
    title: r.title,
    description: r.description ?? undefined,
    published: r.published,
    monitors: r.monitors.map((m) => ({
      monitorId: m.monitor_id,
      name: m.name ?? undefined,
      section: m.section ?? undefined,
    })),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}
