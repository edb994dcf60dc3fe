import type { StoredEvent } from "./hooks.js";

// The contract between the events feature (which implements it with group commit) and the
// features that record events through it (metrics' $measure/$increment/$decrement, ...).

/** A validated event ready to store. `source` is the caller's source key (resolved to sourceId). */
export interface NewEvent {
  type: string;
  timestamp: Date;
  userId: string | null;
  groupId: string | null;
  source: string | null;
  data: Record<string, unknown>;
  context: Record<string, unknown>;
  tags: Record<string, unknown>;
}

export interface Ingestor {
  /**
   * Stores the events durably (committed before the promise resolves; concurrent callers share a
   * transaction) and resolves with them as stored. Runs the ingest hooks inside that transaction.
   */
  accept(projectId: string, events: NewEvent[]): Promise<StoredEvent[]>;
}
