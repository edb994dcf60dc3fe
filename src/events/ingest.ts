import type { Deps } from "../platform/deps.js";
import type { IngestMetrics } from "./metrics.js";
import type { Pipeline } from "./pipeline.js";
import type { Projector } from "./projector.js";
import { Coalescer } from "../shared/coalesce.js";
import { ApiError } from "../shared/errors.js";
import type { StoredEvent } from "./pipeline.js";
import type { Ingestor, NewEvent } from "./pipeline.js";
import { tx } from "../storage/db.js";
import { ensurePartitions, PartitionCache } from "./partitions.js";
import { uuidv7 } from "./uuidv7.js";
import { copyEvents, insertEvents, resolveSources, SourceCache } from "./write.js";

/** Groups of at least this many events are written with COPY. */
export const COPY_MIN_ROWS = 200;

// Group commit: concurrent accept() calls are queued and written together in one transaction,
// flushed after INGEST_FLUSH_MS or as soon as INGEST_MAX_BATCH rows wait. A caller's promise
// resolves only after COMMIT, so a 202 built on it is durable. A caller's events are never split
// across transactions. When a shared flush fails, each caller is retried alone, so one caller's
// bad input (a hook refusing it) cannot fail the others; a caller that still fails is rejected.
// The queue is shared/coalesce.ts: batches of whole callers up to INGEST_MAX_BATCH rows, up to
// maxInFlight transactions at once; callers queued behind them go as soon as one ends.

interface Pending {
  projectId: string;
  events: NewEvent[];
}

/** Forgets what a write attempt set on the events: a retry must not keep a source id or slots from an attempt that wrote nothing. */
function clearAttempt(events: StoredEvent[]): void {
  for (const e of events) {
    e.sourceId = null;
    e.slots = undefined;
  }
}

export class GroupCommitIngestor implements Ingestor {
  private readonly batches: Coalescer<Pending, StoredEvent[]>;
  private stopped = false;
  private readonly partitions = new PartitionCache();
  private readonly sources = new SourceCache();
  private readonly maxInFlight: number;

  constructor(
    private readonly deps: Pick<Deps, "config" | "db" | "log" | "clock" | "pressure">,
    /** Who runs inside the transaction (wired in server/features.ts; the contract is in pipeline.ts). */
    private readonly pipeline: Pipeline,
    /** Where the projections' deltas go; kicked after each commit. */
    private readonly derived: Projector,
    private readonly metrics: IngestMetrics,
  ) {
    this.maxInFlight = Math.max(1, Math.min(deps.config.ingest.maxInFlight, Math.floor(deps.config.pgPoolSize / 2)));
    this.batches = new Coalescer<Pending, StoredEvent[]>({
      flush: (group) => this.flush(group),
      maxBatch: deps.config.ingest.maxBatch,
      weight: (p) => p.events.length,
      concurrency: this.maxInFlight,
      wait: deps.config.ingest.flushMs,
      // Events waiting while every writer is busy: ingestion is the bottleneck, so background
      // senders on this node yield CPU and connections to it for a moment (see IngestPressure).
      onSaturated: () => deps.pressure.mark(),
      onDepth: (rows) => metrics.queueDepth.set(rows),
    });
  }

  accept(projectId: string, events: NewEvent[]): Promise<StoredEvent[]> {
    if (events.length === 0) return Promise.resolve([]);
    if (this.stopped) return Promise.reject(new ApiError(503, "unavailable", "the service is shutting down"));
    return this.batches.submit({ projectId, events });
  }

  /** Stops accepting, flushes what is queued and waits for every flush in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.batches.stop();
  }

  /** One group commit: each caller's stored events, or its error (a throw rejects the only caller). */
  private async flush(group: Pending[]): Promise<(StoredEvent[] | Error)[]> {
    const prepared = group.map((p) => this.prepare(p));
    try {
      await this.write(
        prepared.flatMap((x) => x.stored),
        prepared.flatMap((x) => x.sources),
      );
      return prepared.map((x) => x.stored);
    } catch (err) {
      if (group.length === 1) throw err;
      this.deps.log.warn({ err, callers: group.length }, "group commit failed; retrying each caller alone");
      const out: (StoredEvent[] | Error)[] = [];
      for (let i = 0; i < group.length; i++) {
        try {
          await this.write(prepared[i].stored, prepared[i].sources);
          out.push(prepared[i].stored);
        } catch (e) {
          out.push(e instanceof Error ? e : new Error(String(e)));
        }
      }
      return out;
    }
  }

  private prepare(p: Pending): { stored: StoredEvent[]; sources: (string | null)[] } {
    const stored: StoredEvent[] = new Array(p.events.length);
    const sources: (string | null)[] = new Array(p.events.length);
    for (let i = 0; i < p.events.length; i++) {
      const e = p.events[i];
      stored[i] = {
        id: uuidv7(e.timestamp.getTime()),
        projectId: p.projectId,
        type: e.type,
        timestamp: e.timestamp,
        userId: e.userId,
        groupId: e.groupId,
        sourceId: null,
        data: e.data,
        context: e.context,
        tags: e.tags,
        createdAt: e.timestamp, // set to the commit clock in write()
      };
      sources[i] = e.source;
    }
    return { stored, sources };
  }

  /** One transaction: partitions, sources, preparing steps, insert with the projections' deltas, committing steps, COMMIT. */
  private async write(events: StoredEvent[], sourceKeys: (string | null)[]): Promise<void> {
    const { db, clock } = this.deps;
    const { pipeline } = this;
    const started = process.hrtime.bigint();
    const createdAt = clock();
    for (const e of events) e.createdAt = createdAt;
    clearAttempt(events);
    const weeks = this.partitions.missing(events.map((e) => e.timestamp.getTime()));
    if (await this.writeStatement(events, sourceKeys, weeks, createdAt)) {
      this.done(events, started, "statement");
      return;
    }
    const newSources = await tx(db, async (client) => {
      await ensurePartitions(client, weeks);
      const resolved = await resolveSources(client, events, sourceKeys, this.sources, createdAt);
      await pipeline.runPreparing(client, events);
      const deltas = this.derived.rowsFor(events);
      // Large groups through COPY (cheaper per row for PostgreSQL, one more round trip for the
      // deltas); small ones in one INSERT that carries the deltas too (fewest round trips).
      if (events.length >= COPY_MIN_ROWS) await copyEvents(client, events, createdAt, deltas);
      else await insertEvents(client, events, createdAt, deltas);
      await pipeline.runCommitting(client, events);
      return resolved;
    });
    // Only what a committed transaction created is remembered.
    this.partitions.remember(weeks);
    this.sources.remember(newSources);
    this.done(events, started, "transaction");
  }

  /**
   * A small group whose partitions and sources are known, and whose pipeline steps can answer from
   * their caches (Pipeline.statementGuards: the `cached`/`idle` contract in pipeline.ts), is written
   * by ONE statement outside any transaction: the events, the derived-record deltas and the steps'
   * guards (for the analytics registry: no version moved).
   * One statement is one atomic transaction, with one round trip instead of four (BEGIN, the registry
   * read, the insert, COMMIT). False when the group does not qualify or a guard failed (nothing was
   * written; the transaction path then reads what moved).
   */
  private async writeStatement(
    events: StoredEvent[],
    sourceKeys: (string | null)[],
    weeks: number[],
    createdAt: Date,
  ): Promise<boolean> {
    if (weeks.length > 0 || events.length >= COPY_MIN_ROWS) return false;
    if (!this.sources.resolveCached(events, sourceKeys)) return false;
    const guards = this.pipeline.statementGuards(events);
    if (guards) {
      const inserted = await insertEvents(this.deps.db, events, createdAt, this.derived.rowsFor(events), guards);
      if (inserted === events.length) return true;
      if (inserted !== 0) throw new Error(`ingest statement inserted ${inserted} of ${events.length} events`);
    }
    clearAttempt(events);
    return false;
  }

  private done(events: StoredEvent[], started: bigint, path: "statement" | "transaction"): void {
    const { metrics } = this;
    this.derived.kick();
    metrics.commits.inc({ path });
    metrics.commitSize.observe(events.length);
    metrics.commitDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    metrics.accepted.inc(events.length);
  }
}
