import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PageSubscriberSchema } from "../../gen/vigil/v1/pages_pb.js";
import type { SubscriberRow } from "./store.js";

// Subscriber rows as the owners' list shows them: `id, kind: email|webhook, email?, url?, status:
// pending|confirmed, createdAt, confirmedAt?`. Only owners and admins see them; no public answer
// does; a webhook subscriber's secret is answered once, by its create (service.ts).

export function subscriberMessage(r: SubscriberRow): MessageInitShape<typeof PageSubscriberSchema> {
  return {
    id: r.id,
    kind: r.url !== null ? "webhook" : "email",
    email: r.email ?? undefined,
    url: r.url ?? undefined,
    status: r.confirmed_at ? "confirmed" : "pending",
    createdAt: r.created_at.toISOString(),
    confirmedAt: r.confirmed_at?.toISOString(),
  };
}
