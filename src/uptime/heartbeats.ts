import type { PoolClient } from "pg";
import type { z } from "zod";
import { validate } from "../shared/validate.js";
import * as rq from "./requests.js";
import type { UptimeDeps } from "./deps.js";
import { Coalescer } from "../shared/coalesce.js";
import { newId } from "../shared/ids.js";
import { conflict, notFound } from "../shared/errors.js";
import { claimIds, isClaimTaken, type ClaimRow } from "../events/claims.js";
import { heartbeatKey, knownRepeats, REPEAT, repeatedIds, sortedHeartbeatClaims } from "./heartbeat-claims.js";
import { tx } from "../storage/db.js";
import { lockMonitorCreation, monitorCapReached, monitorCounts } from "./cap.js";
import { openIncidents, resolveIncidents } from "./incidents.js";
import { writeHeartbeats, type HeartbeatRow, type MonitorWrite, type RunRows } from "./heartbeat-sql.js";
import {
  applyHeartbeat,
  applyRunStart,
  applySettings,
  applyRunTimeouts,
  evaluateDeadline,
  markDown,
  needsWake,
  pairRun,
  runIncidentDescription,
  runningSinceOf,
  runOutcome,
  type HeartbeatStatus,
  type MonitorState,
  type OpenRun,
} from "./model.js";
import { endRuns, insertRuns, openRuns, outputTail, type RunDuration, type RunEnd, type RunWrite } from "./runs.js";
import type { Schedule } from "./schedule.js";
import { monitorsBySlug, stateOf, withState, type MonitorRow } from "./store.js";
import { notifyWake, type DeadlineChange } from "./wake.js";

// The heartbeat write path, with group commit: concurrent heartbeats are written together.
// - Fast path (steady heartbeats and run signals): this node remembers each monitor row it last wrote
//   (with its version) and the running runs of those it wrote at that version. A signal whose outcome
//   from that row opens or resolves no incident and needs no wake-up is written, run rows included,
//   in ONE autocommit statement with a compare-and-set on the version.
// - Locked path (everything else, and fast writes whose compare-and-set lost): one transaction locks
//   the monitors (in id order), creates missing ones, applies applyHeartbeat() to each in arrival
//   order, and writes monitors, raw heartbeats, hourly rollups and any incident changes.
// Both decide with the same applySignal(); all heartbeats of one monitor in a group take the
// same path, in arrival order. Steady heartbeats touch no timer and send no notification.
// The queue is shared/coalesce.ts: a batch waits one event-loop turn for company (also one queued
// behind a running transaction), up to MAX_BATCH heartbeats, up to MAX_INFLIGHT transactions at once.

const DEFAULT_INTERVAL_MS = 60_000;
const DEFAULT_GRACE_MS = 30_000;
const MAX_BATCH = 1000;
const MAX_INFLIGHT = 3;
const MAX_KNOWN = 200_000;

export interface HeartbeatRequest {
  projectId: string;
  slug: string;
  at: Date;
  status: HeartbeatStatus;
  latencyMs?: number;
  metadata: Record<string, unknown>;
  expectedIntervalMs?: number;
  gracePeriodMs?: number;
  /**
   * The client id (events/claims.ts, kind heartbeat): when it is stored already in the project the
   * heartbeat records nothing and is answered with the monitor as it is now, statusChanged false.
   */
  clientId?: string;
  /**
   * The signal (decisions.md "Cron jobs and ping keys"): a plain `heartbeat` (default; a success or,
   * with status down, a failure), a run's `start`, or its `end` (`fail`, `exit/:code`: status down,
   * or up for exit code 0).
   */
  kind?: "heartbeat" | "start" | "end";
  exitCode?: number;
  runId?: string;
  /** The run's output (its tail is kept: runs.ts). */
  output?: string;
  /** Sets the monitor's schedule (an interval given clears it). */
  schedule?: Schedule;
}

export interface HeartbeatAnswer {
  monitor: MonitorRow;
  statusChanged: boolean;
}

interface Pending {
  req: HeartbeatRequest;
  resolve: (a: HeartbeatAnswer) => void;
  reject: (e: unknown) => void;
}

const keyOf = (projectId: string, slug: string) => `${projectId}\u0000${slug}`;

export class HeartbeatWriter {
  private readonly batches = new Coalescer<Pending>({
    wait: "turn",
    waitEachBatch: true,
    maxBatch: MAX_BATCH,
    concurrency: MAX_INFLIGHT,
    flush: (batch) => this.flush(batch),
  });
  /**
   * (project, slug) -> the monitor row as this node last wrote or read it, with its version: the
   * fast path's starting state, and the locked path's primary key (verified after locking).
   */
  private known = new Map<string, MonitorRow>();
  /** Monitor id -> its running runs at a version (remember()): the fast path's runs. */
  private runsKnown = new Map<string, { version: number; open: OpenRun[] }>();

  constructor(
    private readonly deps: UptimeDeps,
    private readonly onCommitted: (changes: DeadlineChange[]) => void,
    /** Runs that ended with a start (their durations), after the commit that ended them. */
    private readonly onRunsEnded: (durations: RunDuration[]) => void = () => {},
  ) {}

  submit(req: HeartbeatRequest): Promise<HeartbeatAnswer> {
    // flush() settles each heartbeat itself; a flush that throws rejects its whole batch.
    return new Promise((resolve, reject) => void this.batches.submit({ req, resolve, reject }).catch(reject));
  }

  /** Resolves once everything submitted so far is committed. */
  drain(): Promise<void> {
    return this.batches.idle();
  }

  private async flush(batch: Pending[]): Promise<void> {
    const locked = await this.writeFast(batch);
    if (!locked.length) return;
    try {
      const { answers, changes, rows, durations, running } = await tx(this.deps.db, (c) =>
        this.write(
          c,
          locked.map((b) => b.req),
        ),
      );
      locked.forEach((b, i) => settle(b, answers[i]));
      this.remember(rows, running);
      this.onCommitted(changes);
      if (durations.length) this.onRunsEnded(durations);
    } catch (err) {
      // One bad item (its project deleted meanwhile, say) must not fail the others: retry alone.
      if (locked.length === 1) locked[0].reject(err);
      else for (const b of locked) await this.writeOne(b);
    }
  }

  private async writeOne(b: Pending): Promise<void> {
    try {
      const { answers, changes, rows, durations, running } = await tx(this.deps.db, (c) => this.write(c, [b.req]));
      settle(b, answers[0]);
      this.remember(rows, running);
      this.onCommitted(changes);
      if (durations.length) this.onRunsEnded(durations);
    } catch (err) {
      b.reject(err);
    }
  }

  /**
   * Remembers rows as committed, and with them (`running`, per monitor id) the running runs of those
   * this commit wrote, at that version: the fast path's starting point for run signals.
   */
  private remember(rows: MonitorRow[], running?: Map<string, OpenRun[]>): void {
    if (this.known.size > MAX_KNOWN) this.known.clear();
    if (this.runsKnown.size > MAX_KNOWN) this.runsKnown.clear();
    for (const r of rows) {
      const { created: _created, ...row } = r as Created;
      const k = keyOf(row.project_id, row.slug);
      const cur = this.known.get(k);
      if (!cur || cur.id !== row.id || cur.version < row.version) this.known.set(k, row);
      const open = running?.get(row.id);
      if (row.running_since !== null && open !== undefined) this.runsKnown.set(row.id, { version: row.version, open });
    }
  }

  /**
   * A remembered monitor's running runs: none when it runs nothing (running_since is set exactly
   * while a run is running), else those remembered at its version (every write of runs updates the
   * monitor, which bumps its version); undefined when unknown.
   */
  private openRunsOf(row: MonitorRow): OpenRun[] | undefined {
    if (row.running_since === null) return [];
    const r = this.runsKnown.get(row.id);
    return r && r.version === row.version ? r.open : undefined;
  }

  /**
   * Writes the heartbeats and run signals of monitors whose remembered row (and running runs) make
   * them steady (no incident to open or resolve, no earlier deadline to announce) with one
   * compare-and-set statement, run rows included. Returns the heartbeats left for the locked path, in
   * arrival order.
   */
  private async writeFast(batch: Pending[]): Promise<Pending[]> {
    const now = this.deps.clock();
    const groups = new Map<string, FastGroup | null>();
    // A client id twice in the batch: its monitors go down the locked path, which answers the repeat.
    const twice = repeatedIds(batch);
    for (const b of batch) {
      const k = keyOf(b.req.projectId, b.req.slug);
      let g = groups.get(k);
      if (g === undefined) {
        const row = this.known.get(k);
        const open = row && this.openRunsOf(row);
        // An alert's monitor (409) and one whose running runs this node does not know: the locked path.
        g =
          row && open && row.owned_by === null
            ? { row, open, items: [], outs: [], heartbeats: [], runs: new RunChanges() }
            : null;
        groups.set(k, g);
      }
      if (g === null) continue;
      if (b.req.clientId !== undefined && twice?.has(heartbeatKey(b.req.projectId, b.req.clientId))) {
        groups.set(k, null);
        continue;
      }
      const prev = g.outs.length ? g.outs[g.outs.length - 1].next : stateOf(g.row);
      const list: Effect[] = [];
      const s = applySignal(g.row, prev, g.open, b.req, g.runs, list, now);
      // An incident to open or resolve: the locked path.
      if (list.length) groups.set(k, null);
      else {
        g.items.push(b);
        g.outs.push(s);
        g.open = s.open;
        if (s.heartbeat) g.heartbeats.push(s.heartbeat);
      }
    }
    const fast = [...groups.values()].filter(
      (g): g is FastGroup =>
        g !== null &&
        needsWake(g.row.deadline_at?.getTime() ?? null, g.outs[g.outs.length - 1].next.deadlineAt) === false,
    );
    if (!fast.length) return batch;
    const monitors: MonitorWrite[] = fast.map((g) => ({
      id: g.row.id,
      version: g.row.version,
      next: g.outs[g.outs.length - 1].next,
    }));
    const heartbeats = fast.flatMap((g) => g.heartbeats);
    const runRows: RunRows = {
      inserts: fast.flatMap((g) => g.runs.inserted()),
      ends: fast.flatMap((g) => g.runs.ended().map((e) => ({ ...e, monitorId: g.row.id }))),
    };
    // Client ids are claimed in the same statement, for the monitors it writes (events/claims.ts).
    const claims = sortedHeartbeatClaims(
      fast.flatMap((g) =>
        g.items.flatMap((b) =>
          b.req.clientId === undefined
            ? []
            : [{ projectId: b.req.projectId, clientId: b.req.clientId, monitorId: g.row.id }],
        ),
      ),
    );
    let won: Map<string, number>;
    let taken = false;
    try {
      won = await writeHeartbeats(this.deps.db, true, monitors, heartbeats, now, claims, runRows);
    } catch (err) {
      // A client id stored already: nothing was written; the locked path answers the repeat (the
      // remembered rows are still right).
      taken = isClaimTaken(err);
      if (!taken) this.deps.log.warn({ err }, "heartbeat compare-and-set write failed; taking the locked path");
      won = new Map();
    }
    const done = new Set<Pending>();
    const changes: DeadlineChange[] = [];
    const rows: MonitorRow[] = [];
    const running = new Map<string, OpenRun[]>();
    const durations: RunDuration[] = [];
    for (const g of fast) {
      const version = won.get(g.row.id);
      if (version === undefined) {
        if (!taken) this.known.delete(keyOf(g.row.project_id, g.row.slug));
        continue;
      }
      g.items.forEach((b, i) => {
        b.resolve({
          monitor: { ...withState(g.row, g.outs[i].next, now), version },
          statusChanged: g.outs[i].statusChanged,
        });
        done.add(b);
      });
      const final = g.outs[g.outs.length - 1].next;
      rows.push({ ...withState(g.row, final, now), version });
      running.set(g.row.id, g.open);
      changes.push({ id: g.row.id, deadlineAt: final.deadlineAt, wake: false });
      durations.push(...g.runs.durations);
    }
    this.remember(rows, running);
    if (changes.length) this.onCommitted(changes);
    if (durations.length) this.onRunsEnded(durations);
    return done.size ? batch.filter((b) => !done.has(b)) : batch;
  }

  /**
   * The locked path's transaction. A heartbeat whose client id is stored already (or repeated
   * earlier in the group) writes nothing and is answered with its monitor as it is after this
   * transaction's writes, statusChanged false. The ids known to be stored are left out first (a
   * plain read: a repeat creates no monitor); the others are claimed right after the monitors'
   * locks, where the fast path's statement claims them too (events/claims.ts).
   */
  private async write(
    c: PoolClient,
    reqs: HeartbeatRequest[],
  ): Promise<{
    answers: (HeartbeatAnswer | Error)[];
    changes: DeadlineChange[];
    rows: MonitorRow[];
    durations: RunDuration[];
    running?: Map<string, OpenRun[]>;
  }> {
    const now = this.deps.clock();
    const { repeats, claims } = await knownRepeats(c, reqs);
    const fresh = reqs.filter((_, i) => !repeats.has(i));
    const out = fresh.length
      ? await this.writeFresh(c, fresh, now, claims)
      : { answers: [], changes: [], rows: [], durations: [], running: undefined };
    let j = 0;
    const isRepeat = reqs.map((_, i) => repeats.has(i) || out.answers[j++] === REPEAT);
    const current = isRepeat.some(Boolean)
      ? await monitorsBySlug(
          c,
          reqs.filter((_, i) => isRepeat[i]),
        )
      : new Map<string, MonitorRow>();
    j = 0;
    const answers = reqs.map((r, i): HeartbeatAnswer | Error => {
      const a = repeats.has(i) ? REPEAT : out.answers[j++];
      if (a !== REPEAT) return a;
      const monitor = current.get(keyOf(r.projectId, r.slug));
      // Its monitor deleted since the first heartbeat: nothing to answer with, nothing recorded.
      return monitor ? { monitor, statusChanged: false } : notFound("monitor");
    });
    return { ...out, answers };
  }

  /**
   * Locks, claims `claims` (REPEAT for those stored meanwhile), applies (applySignal) and writes the
   * heartbeats and run signals. The running runs of the locked monitors are read under their locks.
   */
  private async writeFresh(
    c: PoolClient,
    reqs: HeartbeatRequest[],
    now: Date,
    claims: ClaimRow[],
  ): Promise<{
    answers: (HeartbeatAnswer | Error | typeof REPEAT)[];
    changes: DeadlineChange[];
    rows: MonitorRow[];
    durations: RunDuration[];
    running: Map<string, OpenRun[]>;
  }> {
    const { found: rows, refused } = await this.lockMonitors(c, reqs, now);
    // An alert's monitor takes no heartbeat (409 below): nor are their client ids claimed.
    const owned = new Set(
      reqs
        .filter((r) => r.clientId !== undefined && rows.get(keyOf(r.projectId, r.slug))?.owned_by)
        .map((r) => heartbeatKey(r.projectId, r.clientId!)),
    );
    const mine = owned.size ? claims.filter((x) => !owned.has(heartbeatKey(x.projectId, x.clientId))) : claims;
    const raced = mine.length ? await claimIds(c, mine, now) : undefined;
    const state = new Map<string, MonitorState>();
    const effects = new Map<string, Effect[]>();
    const answers: (HeartbeatAnswer | Error | typeof REPEAT)[] = [];
    const heartbeats: HeartbeatRow[] = [];
    const running = await openRuns(
      c,
      [...rows.values()].filter((r) => r.running_since !== null).map((r) => r.id),
    );
    const runs = new RunChanges();

    for (const req of reqs) {
      if (raced?.size && req.clientId !== undefined && raced.has(heartbeatKey(req.projectId, req.clientId))) {
        answers.push(REPEAT);
        continue;
      }
      // A new slug over the project's monitor cap: refused, nothing recorded.
      if (refused.has(keyOf(req.projectId, req.slug))) {
        answers.push(monitorCapReached(this.deps.config.uptime.maxMonitorsPerProject));
        continue;
      }
      const row = rows.get(keyOf(req.projectId, req.slug))!;
      // An alert's monitor (src/alerts/): its evaluations set its status, heartbeats and run signals are refused.
      if (row.owned_by !== null) {
        answers.push(ownedMonitor(req.slug));
        continue;
      }
      const list = effects.get(row.id) ?? [];
      const s = applySignal(row, state.get(row.id) ?? stateOf(row), running.get(row.id) ?? [], req, runs, list, now);
      if (s.heartbeat) heartbeats.push(s.heartbeat);
      const next = s.next;
      running.set(row.id, s.open);
      const statusChanged = s.statusChanged;
      state.set(row.id, next);
      if (list.length) effects.set(row.id, list);
      const snapshot = withState(row, next, now);
      answers.push({ monitor: snapshot, statusChanged: statusChanged || (row as Created).created === true });
    }

    await runs.write(c);
    const versions = await writeHeartbeats(
      c,
      false,
      [...state].map(([id, next]) => ({ id, version: 0, next })),
      heartbeats,
      now,
    );
    await this.applyEffects(c, effects, now);

    const changes: DeadlineChange[] = [];
    const written: MonitorRow[] = [];
    for (const row of new Map([...rows.values()].map((r) => [r.id, r])).values()) {
      const next = state.get(row.id);
      if (next === undefined) continue; // locked for heartbeats that turned out repeats only
      const before = (row as Created).created ? null : (row.deadline_at?.getTime() ?? null);
      changes.push({
        id: row.id,
        deadlineAt: next.deadlineAt,
        wake: needsWake(before, next.deadlineAt),
        statusChanged: (row as Created).created === true || row.status !== next.status,
      });
      const version = versions.get(row.id);
      if (version !== undefined) written.push({ ...withState(row, next, now), version });
    }
    for (const a of answers)
      if (a !== REPEAT && !(a instanceof Error)) a.monitor.version = versions.get(a.monitor.id) ?? a.monitor.version;
    await notifyWake(c, changes, this.deps.config.temporal !== undefined);
    return { answers, changes, rows: written, durations: runs.durations, running };
  }

  /**
   * Locks the addressed monitors in id order; creates the missing ones (name = slug, type heartbeat)
   * up to the project's monitor cap, under its creation lock. `refused`: new slugs over the cap.
   */
  private async lockMonitors(
    c: PoolClient,
    reqs: HeartbeatRequest[],
    now: Date,
  ): Promise<{ found: Map<string, MonitorRow>; refused: Set<string> }> {
    const keys = new Map<string, HeartbeatRequest>();
    for (const r of reqs) if (!keys.has(keyOf(r.projectId, r.slug))) keys.set(keyOf(r.projectId, r.slug), r);
    const select = async (list: HeartbeatRequest[]) =>
      (
        await c.query<MonitorRow>(
          `SELECT m.* FROM monitors m JOIN unnest($1::text[], $2::text[]) AS k(project_id, slug) ON m.project_id = k.project_id AND m.slug = k.slug
            ORDER BY m.id FOR UPDATE OF m`,
          [list.map((r) => r.projectId), list.map((r) => r.slug)],
        )
      ).rows;
    const found = new Map<string, MonitorRow>();
    const refused = new Set<string>();
    // Creation locks come before row locks (the order createMonitor takes them): a look-up without
    // locks finds which slugs unknown to this node are new, and their projects are locked first.
    const creating = new Set<string>();
    const unknown = [...keys.values()].filter((r) => !this.known.has(keyOf(r.projectId, r.slug)));
    if (unknown.length) {
      const r = await c.query<{ project_id: string; slug: string }>(
        "SELECT m.project_id, m.slug FROM monitors m JOIN unnest($1::text[], $2::text[]) AS k(project_id, slug) ON m.project_id = k.project_id AND m.slug = k.slug",
        [unknown.map((x) => x.projectId), unknown.map((x) => x.slug)],
      );
      const existing = new Set(r.rows.map((x) => keyOf(x.project_id, x.slug)));
      for (const x of unknown) if (!existing.has(keyOf(x.projectId, x.slug))) creating.add(x.projectId);
      await lockMonitorCreation(c, creating);
    }
    // Known monitors by primary key (in id order); a cached id whose row moved (deleted, slug
    // changed) falls through to the lookup by slug.
    const cached = [...keys.keys()].map((k) => this.known.get(k)?.id).filter((id): id is string => id !== undefined);
    if (cached.length) {
      const r = await c.query<MonitorRow>("SELECT * FROM monitors WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", [
        cached,
      ]);
      for (const row of r.rows)
        if (keys.has(keyOf(row.project_id, row.slug))) found.set(keyOf(row.project_id, row.slug), row);
    }
    const unresolved = [...keys.values()].filter((r) => !found.has(keyOf(r.projectId, r.slug)));
    if (unresolved.length) for (const row of await select(unresolved)) found.set(keyOf(row.project_id, row.slug), row);
    let missing = unresolved.filter((r) => !found.has(keyOf(r.projectId, r.slug)));
    if (missing.length) {
      // Rare: a slug deleted or renamed since the look-up; its project's lock comes after row locks.
      await lockMonitorCreation(
        c,
        missing.map((r) => r.projectId).filter((p) => !creating.has(p)),
      );
      // Under the locks: what another transaction created meanwhile is found; the rest counts against the cap.
      for (const row of await select(missing)) found.set(keyOf(row.project_id, row.slug), row);
      const max = this.deps.config.uptime.maxMonitorsPerProject;
      const counts = await monitorCounts(
        c,
        missing.map((r) => r.projectId),
      );
      missing = missing.filter((r) => {
        if (found.has(keyOf(r.projectId, r.slug))) return false;
        const n = counts.get(r.projectId) ?? 0;
        if (n >= max) refused.add(keyOf(r.projectId, r.slug));
        else counts.set(r.projectId, n + 1);
        return n < max;
      });
    }
    if (missing.length) {
      const ins = await c.query<MonitorRow>(
        `INSERT INTO monitors (id, project_id, slug, name, type, status, expected_interval_ms, grace_period_ms, created_at, updated_at)
         SELECT id, project_id, slug, slug, 'heartbeat', 'unknown', ei, gp, $6, $6
           FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS n(id, project_id, slug, ei, gp)
         ON CONFLICT (project_id, slug) DO NOTHING RETURNING *`,
        [
          missing.map(() => newId("mon")),
          missing.map((r) => r.projectId),
          missing.map((r) => r.slug),
          missing.map((r) => r.expectedIntervalMs ?? DEFAULT_INTERVAL_MS),
          missing.map((r) => r.gracePeriodMs ?? DEFAULT_GRACE_MS),
          now,
        ],
      );
      for (const row of ins.rows) found.set(keyOf(row.project_id, row.slug), Object.assign(row, { created: true }));
      const raced = missing.filter((r) => !found.has(keyOf(r.projectId, r.slug)));
      if (raced.length) for (const row of await select(raced)) found.set(keyOf(row.project_id, row.slug), row);
    }
    return { found, refused };
  }

  /** Incident changes in rounds: the k-th change of every monitor together, in arrival order per monitor. */
  private async applyEffects(c: PoolClient, effects: Map<string, Effect[]>, now: Date): Promise<void> {
    for (let k = 0; ; k++) {
      const round = [...effects.values()].filter((l) => l.length > k).map((l) => l[k]);
      if (!round.length) return;
      const opens = round.filter((e) => e.kind === "open");
      const resolves = round.filter((e) => e.kind === "resolve");
      await openIncidents(
        this.deps,
        c,
        opens.map((e) => ({ monitor: e.monitor, startedAt: e.at, description: e.description })),
        now,
      );
      await resolveIncidents(
        this.deps,
        c,
        resolves.map((e) => ({ monitor: e.monitor, endedAt: e.at })),
        now,
        { notify: true },
      );
    }
  }
}

type Created = MonitorRow & { created?: boolean };

const ownedMonitor = (slug: string) =>
  conflict(`monitor '${slug}' belongs to an alert: its status follows the alert's evaluations, not heartbeats`, [
    { field: "monitorSlug", message: "belongs to an alert" },
  ]);

function settle(b: Pending, a: HeartbeatAnswer | Error): void {
  if (a instanceof Error) b.reject(a);
  else b.resolve(a);
}
interface Effect {
  kind: "open" | "resolve";
  at: Date;
  monitor: MonitorRow;
  description?: string;
}

/** A monitor's signals the fast path writes together: the row they start from, their outcomes, rows and runs. */
interface FastGroup {
  row: MonitorRow;
  open: OpenRun[];
  items: Pending[];
  outs: { next: MonitorState; statusChanged: boolean }[];
  heartbeats: HeartbeatRow[];
  runs: RunChanges;
}

/** The run rows one transaction writes, in signal order (a run started and ended in it is inserted ended). */
class RunChanges {
  private inserts = new Map<string, RunWrite>();
  private ends = new Map<string, RunEnd>();
  readonly durations: RunDuration[] = [];

  start(row: MonitorRow, run: OpenRun, output: string | null, at: Date): void {
    this.inserts.set(run.id, {
      id: run.id,
      monitorId: row.id,
      runId: run.runId,
      startedAt: at,
      endedAt: null,
      outcome: "running",
      exitCode: null,
      output,
      createdAt: at,
    });
  }

  /** Ends the paired run, or records an end without a start; returns the run's names. */
  end(
    row: MonitorRow,
    paired: OpenRun | null,
    req: HeartbeatRequest,
    output: string | null,
    failed: boolean,
  ): { id: string; runId: string | null } {
    const outcome = failed ? "failed" : "succeeded";
    const exitCode = req.exitCode ?? null;
    if (paired === null) {
      const id = newId("run");
      const runId = req.runId ?? null;
      this.inserts.set(id, {
        id,
        monitorId: row.id,
        runId,
        startedAt: null,
        endedAt: req.at,
        outcome,
        exitCode,
        output,
        createdAt: req.at,
      });
      return { id, runId };
    }
    this.close(row, paired, { id: paired.id, endedAt: req.at, outcome, exitCode, output });
    return paired;
  }

  timeout(row: MonitorRow, run: OpenRun, at: number): void {
    this.close(row, run, { id: run.id, endedAt: new Date(at), outcome: "timed_out", exitCode: null, output: null });
  }

  private close(row: MonitorRow, run: OpenRun, end: RunEnd): void {
    const pending = this.inserts.get(run.id);
    if (pending) this.inserts.set(run.id, { ...pending, ...end, output: end.output ?? pending.output });
    else this.ends.set(run.id, end);
    this.durations.push({
      projectId: row.project_id,
      runRecordId: run.id,
      monitorSlug: row.slug,
      outcome: end.outcome,
      durationMs: end.endedAt.getTime() - run.startedAt,
      endedAt: end.endedAt,
    });
  }

  inserted(): RunWrite[] {
    return [...this.inserts.values()];
  }

  ended(): RunEnd[] {
    return [...this.ends.values()];
  }

  async write(c: PoolClient): Promise<void> {
    await insertRuns(c, [...this.inserts.values()]);
    await endRuns(c, [...this.ends.values()]);
  }
}

/**
 * One heartbeat or run signal applied to its monitor (the decisions of both write paths, in arrival
 * order): `before` and `open` are the monitor's state and running runs before it. Each signal first
 * times out the runs due by its arrival (applyRunTimeouts), then a start adds a running run, an end
 * closes the run pairRun() finds (or is a run of its own, without a start). Run rows go to `runs`,
 * incident changes to `list`; returns the state after it, its running runs and the heartbeat row.
 */
function applySignal(
  row: MonitorRow,
  before: MonitorState,
  open: OpenRun[],
  req: HeartbeatRequest,
  runs: RunChanges,
  list: Effect[],
  now: Date,
): { next: MonitorState; open: OpenRun[]; statusChanged: boolean; heartbeat: HeartbeatRow | null } {
  const at = req.at.getTime();
  const opened = (s: MonitorState, when: number, description?: string) =>
    list.push({ kind: "open", at: new Date(when), monitor: withState(row, s, now), description });
  // Runs due to time out by this signal's arrival: failures at their own timeouts, first.
  const t = applyRunTimeouts(before, open, at);
  for (const x of t.timeouts) {
    runs.timeout(row, x.run, x.at);
    if (x.tookDown)
      opened(
        t.next,
        x.at,
        runIncidentDescription(x.run, { kind: "timed_out", maxRuntimeMs: before.maxRuntimeMs ?? 0 }),
      );
  }
  before = t.next;
  open = t.open;
  let next: MonitorState;
  let statusChanged: boolean;
  let heartbeat: HeartbeatRow | null = null;
  const output = req.output === undefined ? null : outputTail(req.output);
  if (req.kind === "start") {
    // Not a heartbeat: no status, no deadline base moves; a deadline missed before it still counts.
    const v = evaluateDeadline(before, at);
    let m = v.overdue ? markDown(before) : before;
    if (v.overdue) opened(m, v.since);
    m = applySettings(m, {
      expectedIntervalMs: req.expectedIntervalMs,
      gracePeriodMs: req.gracePeriodMs,
      schedule: req.schedule,
    });
    const run: OpenRun = { id: newId("run"), runId: req.runId ?? null, startedAt: at };
    next = applyRunStart(m, open, run);
    open = [...open, run];
    runs.start(row, run, output, req.at);
    // As a heartbeat's: against what the monitor really was (down after a missed deadline or a timeout).
    statusChanged = false;
  } else {
    const i = pairRun(open, req.runId ?? null);
    const paired = i === -1 ? null : open[i];
    if (paired) open = open.filter((_, j) => j !== i);
    const out = applyHeartbeat(
      { ...before, runningSince: runningSinceOf(open) },
      {
        at,
        status: req.status,
        expectedIntervalMs: req.expectedIntervalMs,
        gracePeriodMs: req.gracePeriodMs,
        schedule: req.schedule,
        startedAt: paired?.startedAt ?? null,
      },
    );
    next = out.next;
    statusChanged = out.statusChanged;
    const isRun =
      req.kind === "end" || paired !== null || req.runId !== undefined || output !== null || !!next.schedule;
    const failed = req.status === "down";
    let runRef: { id: string; runId: string | null } | null = null;
    if (isRun) runRef = runs.end(row, paired, req, output, failed);
    if (out.openIncidentAt !== null) {
      const byRun = runRef !== null && failed && out.openIncidentAt === at;
      opened(
        out.next,
        out.openIncidentAt,
        byRun ? runIncidentDescription(runRef!, { kind: "failed", exitCode: req.exitCode ?? null }) : undefined,
      );
    }
    if (out.resolveIncidentAt !== null)
      list.push({ kind: "resolve", at: new Date(out.resolveIncidentAt), monitor: withState(row, next, now) });
    heartbeat = heartbeatRow(req, row.id);
  }
  return { next, open, statusChanged, heartbeat };
}

function heartbeatRow(req: HeartbeatRequest, monitorId: string): HeartbeatRow {
  return {
    id: newId("hb"),
    monitorId,
    at: req.at,
    status: req.status,
    latencyMs: req.latencyMs ?? null,
    metadata: JSON.stringify(req.metadata),
  };
}

/** A run signal (decisions.md "Cron jobs and ping keys"): the plain heartbeat (a success, or a failure with status down), start, fail, exit/:code. */
export type RunSignal = "heartbeat" | "start" | "fail" | { exit: number };

/**
 * Records a heartbeat or run signal of a project's monitor (by slug) from its body as JSON values
 * (`id, status, latencyMs, metadata, expectedIntervalMs, gracePeriodMs, schedule, runId, output`;
 * `status` on the plain heartbeat only): validates it (400 naming the field), then writes it through
 * the writer, answering as the heartbeat route. The REST/gRPC routes call it; a ping URL route can too.
 */
export async function recordRunSignal(
  writer: HeartbeatWriter,
  opts: { at: Date; minDeadlineMs: number },
  projectId: string,
  slug: string,
  signal: RunSignal,
  body: Record<string, unknown>,
): Promise<HeartbeatAnswer> {
  let input: Omit<z.infer<typeof rq.heartbeatSchema>, "status"> & { status?: HeartbeatStatus };
  let exitCode: number | undefined;
  rq.assertSignalFields(body, signal === "heartbeat");
  // The path's slug is validated as the route's `monitorSlug` (a 400 names that field).
  const path = { monitorSlug: slug };
  if (signal === "heartbeat") input = validate(rq.heartbeatSchema, { ...body, ...path });
  else if (typeof signal === "object") {
    const v = validate(rq.exitRunSchema, { ...body, ...path, code: signal.exit });
    exitCode = v.code;
    input = v;
  } else input = validate(rq.runSignalSchema, { ...body, ...path });
  rq.assertDeadlineFloor(input, opts.minDeadlineMs);
  const { id: clientId, status, monitorSlug, ...fields } = input;
  return writer.submit({
    ...fields,
    slug: monitorSlug,
    projectId,
    at: opts.at,
    clientId,
    kind: signal === "heartbeat" ? "heartbeat" : signal === "start" ? "start" : "end",
    status:
      signal === "heartbeat"
        ? (status ?? "up")
        : runOutcome(
            exitCode !== undefined
              ? { kind: "exit", code: exitCode }
              : { kind: signal === "fail" ? "fail" : "success" },
          ),
    exitCode,
  });
}
