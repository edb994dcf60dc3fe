import { matchesFilter } from "../analytics/filters-js.js";
import type { CommittingStep, StoredEvent } from "../events/pipeline.js";
import type { Deps } from "../platform/deps.js";
import type { IncidentListener, IncidentNotice } from "../uptime/incidents.js";
import { newId } from "../shared/ids.js";
import type { PoolClient } from "pg";
import { insertOutbox, type OutboxRow } from "./outbox.js";
import { insertNoticeDeliveries } from "./store.js";
import type { Subscription, SubscriptionCache } from "./subscriptions.js";

// Deliveries are enqueued inside the transaction that stores their cause, so they commit (or not)
// with it: `events` is a committing step of the ingest pipeline, `incidents` a listener of uptime's
// incident transitions (both wired in server/features.ts). Events: from the subscription cache, nothing at all when no webhook watches the types,
// else ONE outbox row per watching webhook for the whole ingest batch (its matching events as
// arrays), in one INSERT; a webhook with `filters` gets only the events that pass them (the
// analytics filter model, evaluated in JS with the SQL's semantics: analytics/filters-js.ts); the expander (expander.ts) turns it into deliveries after the commit.
// Incidents (never filtered: decisions.md): deliveries at once, once per (webhook, dedupe key), enforced by a unique index, so
// also across restarts and nodes.

function outboxForEvents(events: StoredEvent[], subs: Map<string, Subscription[]>): OutboxRow[] {
  const rows = new Map<string, OutboxRow>();
  for (const e of events) {
    for (const s of subs.get(e.projectId) ?? []) {
      if (!s.events.has(e.type) || !matchesFilter(s.filter, e)) continue;
      let r = rows.get(s.webhookId);
      if (!r)
        rows.set(
          s.webhookId,
          (r = { webhookId: s.webhookId, projectId: e.projectId, eventIds: [], eventTypes: [], eventTs: [] }),
        );
      r.eventIds.push(e.id);
      r.eventTypes.push(e.type);
      r.eventTs.push(e.timestamp.toISOString());
    }
  }
  return [...rows.values()];
}

export interface WebhookTriggers {
  /** The ingest pipeline's committing step: outbox rows for the events webhooks watch. */
  events: CommittingStep;
  /** Uptime's incident listener: a delivery per watching webhook, once per dedupe key. */
  incidents: IncidentListener;
}

/** `cache`: the webhooks feature's subscription cache (it invalidates it on changes). */
export function createTriggers(deps: Pick<Deps, "config" | "clock">, cache: SubscriptionCache): WebhookTriggers {
  const limit = () => deps.config.webhooks.maxAttempts;
  return {
    events: {
      name: "webhooks: outbox rows for watched event types",
      async run(client: PoolClient, events: StoredEvent[]) {
        if (events.length === 0) return;
        const subs = await cache.forProjects(
          client,
          events.map((e) => e.projectId),
        );
        const rows = outboxForEvents(events, subs);
        if (rows.length) await insertOutbox(client, rows, deps.clock());
      },
      // Idle when the cached subscriptions (the same ones `run` would use) want none of these events.
      idle(events: StoredEvent[]) {
        const subs = cache.cached(events.map((e) => e.projectId));
        return subs !== undefined && outboxForEvents(events, subs).length === 0;
      },
    },
    async incidents(client: PoolClient, notice: IncidentNotice) {
      // Webhooks are sent an incident's start and recovery (decisions.md); its updates go to status page subscribers only.
      if (notice.type === "incident.updated") return;
      await insertNoticeDeliveries(
        client,
        {
          projectId: notice.projectId,
          eventType: notice.type,
          eventId: notice.dedupeKey,
          dedupeKey: notice.dedupeKey,
          payload: notice.payload,
        },
        () => newId("whd"),
        deps.clock(),
        limit(),
      );
    },
  };
}
