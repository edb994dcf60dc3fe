import { isNoPartition } from "../shared/pg-errors.js";
import type { PoolClient } from "pg";
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
import { copyEvents, insertEvents, resolveSources, SourceCache } from "./write.js";
import { claimIds, claimKey, isClaimTaken, sortedClaims, type ClaimRow } from "./claims.js";
import { getEvents } from "./store.js";
import { uuidv7, uuidv7Time } from "./uuidv7.js";

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

/** Events whose client id repeats one already stored (or earlier in the group) → the event answered for them. */
type Repeats = Map<StoredEvent, StoredEvent>;

/** The group without its in-group repeats of a client id (the first of each id stays), or undefined when no event has an id. */
function firstOfEachId(
  events: StoredEvent[],
  sourceKeys: (string | null)[],
): { events: StoredEvent[]; sourceKeys: (string | null)[]; repeats: Repeats; claims: ClaimRow[] } | undefined {
  if (!events.some((e) => e.claim !== undefined)) return undefined;
  const seen = new Map<string, StoredEvent>();
  const out: StoredEvent[] = [];
  const keys: (string | null)[] = [];
  const repeats: Repeats = new Map();
  const claims: ClaimRow[] = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e.claim) {
      const k = claimKey(e.projectId, e.claim.kind, e.claim.keyKind, e.claim.id);
      const first = seen.get(k);
      if (first) {
        repeats.set(e, first);
        continue;
      }
      seen.set(k, e);
      claims.push({
        projectId: e.projectId,
        kind: e.claim.kind,
        keyKind: e.claim.keyKind,
        clientId: e.claim.id,
        recordId: e.id,
      });
    }
    out.push(e);
    keys.push(sourceKeys[i]);
  }
  return { events: out, sourceKeys: keys, repeats, claims: sortedClaims(claims) };
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
    // Each caller's events as answered: a repeated client id answers the event stored first.
    const answer = (stored: StoredEvent[], repeats: Repeats | undefined) =>
      repeats?.size ? stored.map((e) => repeats.get(e) ?? e) : stored;
    try {
      const repeats = await this.write(
        prepared.flatMap((x) => x.stored),
        prepared.flatMap((x) => x.sources),
      );
      return prepared.map((x) => answer(x.stored, repeats));
    } catch (err) {
      if (group.length === 1) throw err;
      this.deps.log.warn({ err, callers: group.length }, "group commit failed; retrying each caller alone");
      const out: (StoredEvent[] | Error)[] = [];
      for (let i = 0; i < group.length; i++) {
        try {
          out.push(answer(prepared[i].stored, await this.write(prepared[i].stored, prepared[i].sources)));
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
      if (e.claim) stored[i].claim = e.claim;
      sources[i] = e.source;
    }
    return { stored, sources };
  }

  /**
   * One transaction: the client ids' claims, partitions, sources, preparing steps, insert with the
   * projections' deltas, committing steps, COMMIT. Returns the events not written because their
   * client id was stored already (or repeated within the group), each with the event answered for it.
   */
  private async write(all: StoredEvent[], allSourceKeys: (string | null)[]): Promise<Repeats | undefined> {
    try {
      return await this.writeOnce(all, allSourceKeys);
    } catch (err) {
      // A remembered partition dropped since by retention (on any node): forget it and write again,
      // which recreates it. Nothing was written (the statement or the transaction failed whole).
      if (!isNoPartition(err)) throw err;
      this.partitions.forget(all.map((e) => e.timestamp.getTime()));
      return this.writeOnce(all, allSourceKeys);
    }
  }

  private async writeOnce(all: StoredEvent[], allSourceKeys: (string | null)[]): Promise<Repeats | undefined> {
    const { db, clock } = this.deps;
    const { pipeline } = this;
    const started = process.hrtime.bigint();
    const createdAt = clock();
    for (const e of all) e.createdAt = createdAt;
    clearAttempt(all);
    // Without client ids nothing of this runs (no allocation, no statement).
    const ids = firstOfEachId(all, allSourceKeys);
    let events = ids?.events ?? all;
    let sourceKeys = ids?.sourceKeys ?? allSourceKeys;
    const weeks = this.partitions.missing(events.map((e) => e.timestamp.getTime()));
    if (await this.writeStatement(events, sourceKeys, weeks, createdAt, ids?.claims ?? [])) {
      this.done(events, started, "statement");
      return ids?.repeats;
    }
    const repeats: Repeats = ids?.repeats ?? new Map();
    const newSources = await tx(db, async (client) => {
      // The claims first (claims.ts): a repeat is decided before any step of the pipeline sees it.
      if (ids?.claims.length) {
        const stored = await this.claim(client, events, ids.claims, createdAt);
        if (stored.size) {
          const keep = events.map((e) => !stored.has(e));
          sourceKeys = sourceKeys.filter((_, i) => keep[i]);
          events = events.filter((_, i) => keep[i]);
          for (const [e, first] of stored) repeats.set(e, first);
          // An in-group repeat of an id stored already answers what its first answers.
          for (const [e, first] of repeats) repeats.set(e, stored.get(first) ?? first);
        }
      }
      if (events.length === 0) return new Map<string, string>();
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
    if (events.length) this.partitions.remember(weeks);
    this.sources.remember(newSources);
    this.done(events, started, "transaction");
    return repeats;
  }

  /**
   * Claims the client ids of `events` (inside the transaction, before anything else). Returns the
   * events whose id was stored already, each with the stored event it is answered with (the event
   * as first stored; if that event is gone since, retention or a user's deletion, this one under the
   * stored id).
   */
  private async claim(
    client: PoolClient,
    events: StoredEvent[],
    claims: ClaimRow[],
    createdAt: Date,
  ): Promise<Map<StoredEvent, StoredEvent>> {
    const out = new Map<StoredEvent, StoredEvent>();
    const existing = await claimIds(client, claims, createdAt);
    if (existing.size === 0) return out;
    const refs: { projectId: string; id: string; ts: Date }[] = [];
    const recorded = new Map<StoredEvent, string>();
    for (const e of events) {
      if (!e.claim) continue;
      const k = claimKey(e.projectId, e.claim.kind, e.claim.keyKind, e.claim.id);
      if (!existing.has(k)) continue;
      const id = existing.get(k) ?? e.id;
      recorded.set(e, id);
      const ms = uuidv7Time(id);
      if (ms !== undefined) refs.push({ projectId: e.projectId, id, ts: new Date(ms) });
    }
    const rows = new Map((await getEvents(client, refs)).map((r) => [`${r.projectId}\u0000${r.id}`, r]));
    for (const [e, id] of recorded) {
      const row = rows.get(`${e.projectId}\u0000${id}`);
      const ms = uuidv7Time(id);
      out.set(e, row ?? { ...e, id, timestamp: ms === undefined ? e.timestamp : new Date(ms) });
    }
    return out;
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
    claims: ClaimRow[],
  ): Promise<boolean> {
    if (weeks.length > 0 || events.length >= COPY_MIN_ROWS) return false;
    if (!this.sources.resolveCached(events, sourceKeys)) return false;
    const guards = this.pipeline.statementGuards(events);
    if (guards) {
      let inserted: number;
      try {
        inserted = await insertEvents(this.deps.db, events, createdAt, this.derived.rowsFor(events), guards, claims);
      } catch (err) {
        // A client id stored already: the statement wrote nothing; the transaction sorts out the repeats.
        if (!isClaimTaken(err)) throw err;
        inserted = 0;
      }
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
