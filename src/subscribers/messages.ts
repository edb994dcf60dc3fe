import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PageSubscriberSchema } from "../../gen/vigil/v1/pages_pb.js";
import type { SubscriberRow } from "./store.js";

// Subscriber rows as the owners' list shows them: `id, email, status: pending|confirmed,
// createdAt, confirmedAt?`. Only owners and admins see them; no public answer does.

export function subscriberMessage(r: SubscriberRow): MessageInitShape<typeof PageSubscriberSchema> {
  return {
    id: r.id,
    email: r.email,
    status: r.confirmed_at ? "confirmed" : "pending",
    createdAt: r.created_at.toISOString(),
    confirmedAt: r.confirmed_at?.toISOString(),
  };
}
