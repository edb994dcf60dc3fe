import type { Deps } from "../shared/deps.js";
import type { IncidentNotice, StoredEvent } from "../shared/hooks.js";
import { newId } from "../shared/ids.js";
import type { PoolClient } from "pg";
import { insertDeliveries, insertNoticeDeliveries, type NewDelivery } from "./store.js";
import type { SubscriptionCache } from "./subscriptions.js";

// Deliveries are enqueued inside the transaction that stores their cause, so they commit (or not)
// with it. Events: from the subscription cache, nothing at all when no webhook watches the types,
// else one INSERT per ingest batch. Incidents: once per (webhook, dedupe key), enforced by a unique
// constraint, so also across restarts and nodes.

export function deliveriesForEvents(events: StoredEvent[], subs: Map<string, { webhookId: string; events: Set<string> }[]>): NewDelivery[] {
  const rows: NewDelivery[] = [];
  for (const e of events) {
    for (const s of subs.get(e.projectId) ?? []) {
      if (!s.events.has(e.type)) continue;
      rows.push({ id: newId("whd"), webhook_id: s.webhookId, project_id: e.projectId, event_id: e.id, event_type: e.type, event_ts: e.timestamp.toISOString() });
    }
  }
  return rows;
}

export function registerTriggers(deps: Deps, cache: SubscriptionCache): void {
  const limit = () => deps.config.webhooks.maxAttempts;

  deps.hooks.eventsCommitting.push(async (client: PoolClient, events: StoredEvent[]) => {
    if (events.length === 0) return;
    const subs = await cache.forProjects(client, events.map((e) => e.projectId));
    const rows = deliveriesForEvents(events, subs);
    if (rows.length) await insertDeliveries(client, rows, deps.clock(), limit());
  });

  deps.hooks.incident.push(async (client: PoolClient, notice: IncidentNotice) => {
    await insertNoticeDeliveries(
      client,
      { projectId: notice.projectId, eventType: notice.type, eventId: notice.dedupeKey, dedupeKey: notice.dedupeKey, payload: notice.payload },
      () => newId("whd"),
      deps.clock(),
      limit(),
    );
  });
}
