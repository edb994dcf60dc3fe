import type { PoolClient } from "pg";
import type { Claim } from "./claims.js";
import type { EventRecord } from "./record.js";

// The ingest pipeline: the contracts between the events feature, which stores accepted events
// (GroupCommitIngestor, ingest.ts), and the features whose work must commit with them. Which
// participants run, and in which order, is assembled in ONE place, where the features are wired
// (src/server/features.ts), with the rules below written beside that list:
//
// - `preparing`, in order, inside the ingest transaction BEFORE the rows are inserted; may set the
//   events' typed `slots` (analytics' property registry).
// - `committing`, in order, inside the same transaction AFTER the insert: writes that must commit
//   with the events or not at all (metric points, webhook outbox rows). A step that throws fails
//   the transaction; the ingestor then retries each caller alone, so one caller's events that a
//   step refuses never fail another caller's.
// - `projections`: derived records (user hours, users and groups, analytics rollups). Not run in
//   the transaction: each one's pure `delta` is stored with the events (one `ingest_deltas` row per
//   project) and the Projector (projector.ts) applies them after the commit; readers `settle()`
//   their project first, so an answer never misses an acknowledged event.
// - Client ids (claims.ts): an event sent with an `id` already stored in its project (or repeated
//   within the group) is settled BEFORE any step runs: the group's claims are the transaction's
//   first statement (or ride in the one statement), and a repeat is answered with the stored event,
//   never handed to a preparing or committing step nor to a projection's delta.
// - The one-statement path: a small group whose partitions and sources are cached is written by ONE
//   guarded statement, without a transaction, only when EVERY preparing step answers from its cache
//   (`cached` returns the SQL guard under which its answer holds, checked in the statement's own
//   snapshot) and EVERY committing step is `idle` for the group (decided without a query). A step
//   without `cached`/`idle` always sends the group through the transaction.

/** An event as stored (its fields: the record's table, record.ts), handed to the pipeline's steps inside the ingest transaction. */
export interface StoredEvent extends EventRecord {
  /** Typed property slots (n1..n8, s1..s8) set by `preparing` steps before the insert. */
  slots?: Record<string, number | string | null>;
  /** The client id it was sent with (claims.ts); the steps of the pipeline only ever see the first of an id. */
  claim?: Claim;
}

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
  /**
   * The client id it was sent with (claims.ts): when the id is already stored in the project, the
   * ingestor stores nothing and answers with the stored event.
   */
  claim?: Claim;
}

/** What features that record events (metrics' $measure/$increment/$decrement, ...) hand them to. */
export interface Ingestor {
  /**
   * Stores the events durably (committed before the promise resolves; concurrent callers share a
   * transaction) and resolves with them as stored, in order. Runs the pipeline inside that
   * transaction. An event whose `claim` is already stored (or repeats an earlier one of the same
   * group) is not written: its place holds the event stored first.
   */
  accept(projectId: string, events: NewEvent[]): Promise<StoredEvent[]>;
}

/**
 * A boolean SQL expression that the single ingest statement checks in its own snapshot; `param`
 * binds a value and returns its placeholder.
 */
export type SqlGuard = (param: (value: unknown) => string) => string;

/** Runs inside the ingest transaction before the rows are inserted; may set `slots`. */
export interface PreparingStep {
  /** Who this is (for readers and logs). */
  readonly name: string;
  run(client: PoolClient, events: StoredEvent[]): Promise<void>;
  /**
   * Optional, for a group written in one statement: does the same as `run` from cached state
   * without a query and returns the guard under which that is right, or undefined when the cache
   * cannot tell (the transaction then runs `run`).
   */
  cached?(events: StoredEvent[]): SqlGuard | undefined;
}

/** Runs inside the ingest transaction after the rows are inserted. */
export interface CommittingStep {
  readonly name: string;
  run(client: PoolClient, events: StoredEvent[]): Promise<void>;
  /** Optional: true when, decided without a query, the step has nothing to do for these events. */
  idle?(events: StoredEvent[]): boolean;
}

/** A derived record maintained from stored events after acceptance (see projector.ts). */
export interface Projection<D = unknown> {
  /** Key of this projection's delta in a row's JSON. */
  name: string;
  /** Pure: the JSON-serializable delta of one project's events, or null when they change nothing. */
  delta(events: StoredEvent[]): D | null;
  /** Applies a project's deltas, in commit order, inside the projector's transaction. */
  apply(client: PoolClient, projectId: string, deltas: D[]): Promise<void>;
}

/** The participants of the ingest pipeline, in the order they run (assembled in server/features.ts). */
export interface PipelineParts {
  preparing: PreparingStep[];
  committing: CommittingStep[];
  projections: Projection[];
}

/** What readers of derived records use: apply the project's pending deltas before reading. */
export interface DerivedRecords {
  settle(projectId: string): Promise<void>;
}

/** Runs the steps of the pipeline for the ingestor (the lists are the ones wired in server/features.ts). */
export class Pipeline {
  readonly preparing: PreparingStep[];
  readonly committing: CommittingStep[];

  constructor(parts: Pick<PipelineParts, "preparing" | "committing">) {
    this.preparing = parts.preparing;
    this.committing = parts.committing;
  }

  async runPreparing(client: PoolClient, events: StoredEvent[]): Promise<void> {
    for (const s of this.preparing) await s.run(client, events);
  }

  async runCommitting(client: PoolClient, events: StoredEvent[]): Promise<void> {
    for (const s of this.committing) await s.run(client, events);
  }

  /**
   * The guards under which a group can be written in one statement with no step's query: every
   * committing step is idle and every preparing step answered from its cache; else undefined.
   */
  statementGuards(events: StoredEvent[]): SqlGuard[] | undefined {
    if (!this.committing.every((s) => s.idle?.(events) === true)) return undefined;
    const guards: SqlGuard[] = [];
    for (const s of this.preparing) {
      const g = s.cached?.(events);
      if (!g) return undefined;
      guards.push(g);
    }
    return guards;
  }
}
