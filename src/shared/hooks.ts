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
  /** Typed property slots (n1..n8, s1..s8) set by `eventsPreparing` hooks before the insert. */
  slots?: Record<string, number | string | null>;
}

export interface IncidentNotice {
  type: "incident.started" | "incident.recovered";
  projectId: string;
  /** Unique per incident and transition: used to deliver at most once. */
  dedupeKey: string;
  payload: Record<string, unknown>;
  at: Date;
}

/**
 * A boolean SQL expression that the single ingest statement checks in its own snapshot; `param`
 * binds a value and returns its placeholder.
 */
export type SqlGuard = (param: (value: unknown) => string) => string;

/** Runs inside the ingest transaction before the rows are inserted; may set `slots`. */
export type EventsPreparingHook = ((client: PoolClient, events: StoredEvent[]) => Promise<void>) & {
  /**
   * Optional, for a group written in one statement (see GroupCommitIngestor): does the same from
   * cached state without a query and returns the guard under which that is right, or undefined when
   * the cache cannot tell (the transaction then runs the hook itself).
   */
  cached?: (events: StoredEvent[]) => SqlGuard | undefined;
};
/** Runs inside the ingest transaction after the rows are inserted (rollups, identities, deliveries). */
export type EventsCommittingHook = ((client: PoolClient, events: StoredEvent[]) => Promise<void>) & {
  /** Optional: true when, decided without a query, the hook has nothing to do for these events. */
  idle?: (events: StoredEvent[]) => boolean;
};
export type IncidentHook = (client: PoolClient, notice: IncidentNotice) => Promise<void>;

export class Hooks {
  readonly eventsPreparing: EventsPreparingHook[] = [];
  readonly eventsCommitting: EventsCommittingHook[] = [];
  readonly incident: IncidentHook[] = [];

  async runEventsPreparing(client: PoolClient, events: StoredEvent[]): Promise<void> {
    for (const h of this.eventsPreparing) await h(client, events);
  }

  async runEventsCommitting(client: PoolClient, events: StoredEvent[]): Promise<void> {
    for (const h of this.eventsCommitting) await h(client, events);
  }

  /**
   * The guards under which a group can be written in one statement with no hook query: every
   * preparing hook answered from its cache and every committing hook is idle; else undefined.
   */
  statementGuards(events: StoredEvent[]): SqlGuard[] | undefined {
    if (!this.eventsCommitting.every((h) => h.idle?.(events) === true)) return undefined;
    const guards: SqlGuard[] = [];
    for (const h of this.eventsPreparing) {
      const g = h.cached?.(events);
      if (!g) return undefined;
      guards.push(g);
    }
    return guards;
  }

  async runIncident(client: PoolClient, notice: IncidentNotice): Promise<void> {
    for (const h of this.incident) await h(client, notice);
  }
}
