import type { JsonValue } from "@bufbuild/protobuf";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { DeliveryRow, WebhookRow } from "./store.js";

// Rows of webhooks and deliveries → the API's records (never the secret: the create and rotate
// answers add it themselves).

export function toWebhook(r: WebhookRow) {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    url: r.url ?? undefined,
    to: r.to ?? [],
    // A credential: only its end is shown (as a key's prefix is).
    routingKey: r.routing_key ? `…${r.routing_key.slice(-4)}` : undefined,
    events: r.events,
    enabled: r.enabled,
    disabledReason: r.disabled_reason ?? undefined,
    disabledAt: r.disabled_at?.toISOString(),
    filters: r.filters === null || r.filters === undefined ? undefined : fromJson(ValueSchema, r.filters as JsonValue),
    maxPerSecond: r.max_per_second ?? undefined,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export function toDelivery(r: DeliveryRow) {
  return {
    id: r.id,
    eventId: r.event_id,
    eventType: r.event_type,
    status: r.status,
    attempts: r.attempts.map((a) => ({
      at: a.at,
      statusCode: a.statusCode ?? undefined,
      durationMs: a.durationMs,
      error: a.error ?? undefined,
      responseBody: a.responseBody ?? undefined,
    })),
    nextAttemptAt: r.next_attempt_at?.toISOString(),
    createdAt: r.created_at.toISOString(),
  };
}
