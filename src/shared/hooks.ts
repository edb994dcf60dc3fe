import type { PoolClient } from "pg";

// In-transaction extension points between features, so that what follows an accepted write
// commits atomically with it (driven from what was stored; nothing lost, nothing twice).

/** An event as stored, handed to hooks inside the ingest transaction. */
export interface StoredEvent {
  id: string;
  projectId: string;
  type: string;
  timestamp: Date;
  userId: string | null;
  groupId: string | null;
  sourceId: string | null;
  data: Record<string, unknown>;
  context: Record<string, unknown>;
  tags: Record<string, unknown>;
  createdAt: Date;
}

export interface IncidentNotice {
  type: "incident.started" | "incident.recovered";
  projectId: string;
  /** Unique per incident and transition: used to deliver at most once. */
  dedupeKey: string;
  payload: Record<string, unknown>;
  at: Date;
}

export type EventsCommittingHook = (client: PoolClient, events: StoredEvent[]) => Promise<void>;
export type IncidentHook = (client: PoolClient, notice: IncidentNotice) => Promise<void>;

export class Hooks {
  readonly eventsCommitting: EventsCommittingHook[] = [];
  readonly incident: IncidentHook[] = [];

  async runEventsCommitting(client: PoolClient, events: StoredEvent[]): Promise<void> {
    for (const h of this.eventsCommitting) await h(client, events);
  }

  async runIncident(client: PoolClient, notice: IncidentNotice): Promise<void> {
    for (const h of this.incident) await h(client, notice);
  }
}
