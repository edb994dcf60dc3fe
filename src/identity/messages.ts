import type { JsonObject } from "@bufbuild/protobuf";
import type { UserRow } from "./store.js";

// Users rows → the User message, and the user line of GET .../users/:userId/export.

export function toUser(r: UserRow, withCount: boolean) {
  return {
    id: r.id,
    projectId: r.project_id,
    externalId: r.external_id,
    properties: r.properties as JsonObject,
    eventCount: withCount ? BigInt(r.event_count) : undefined,
    firstSeenAt: r.first_seen_at.toISOString(),
    lastSeenAt: r.last_seen_at.toISOString(),
  };
}

/**
 * The user record as GET .../users/:userId writes it over REST (eventCount a number): the first line
 * of the user export's NDJSON.
 */
export function userLine(r: UserRow): string {
  const u = toUser(r, true);
  return JSON.stringify({ ...u, eventCount: Number(r.event_count) }) + "\n";
}
