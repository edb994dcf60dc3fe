import type { PoolClient } from "pg";
import type { Deps } from "../shared/deps.js";
import { newId } from "../shared/ids.js";
import { tx } from "../storage/db.js";
import { openIncidents, resolveIncidents } from "./incidents.js";
import { applyHeartbeat, needsWake, type HeartbeatStatus, type MonitorState } from "./model.js";
import { stateOf, withState, type MonitorRow } from "./store.js";
import { notifyWake, type DeadlineChange } from "./wake.js";

// The heartbeat write path, with group commit: concurrent heartbeats share one transaction that locks
// their monitors (in id order), creates missing ones, applies applyHeartbeat() to each in arrival
// order, and writes monitors, raw heartbeats, hourly rollups and any incident changes in a handful of
// set-based statements. Steady heartbeats touch no timer and send no notification.

export const DEFAULT_INTERVAL_MS = 60_000;
export const DEFAULT_GRACE_MS = 30_000;
const MAX_BATCH = 1000;
const MAX_INFLIGHT = 3;
const MAX_CACHED_IDS = 200_000;

export interface HeartbeatRequest {
  projectId: string;
  slug: string;
  at: Date;
  status: HeartbeatStatus;
  latencyMs?: number;
  metadata: Record<string, unknown>;
  expectedIntervalMs?: number;
  gracePeriodMs?: number;
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
  private queue: Pending[] = [];
  private inflight = 0;
  private scheduled = false;
  /** (project, slug) -> monitor id, so the lock is a primary-key lookup (verified after locking). */
  private ids = new Map<string, string>();

  constructor(private readonly deps: Deps, private readonly onCommitted: (changes: DeadlineChange[]) => void) {}

  submit(req: HeartbeatRequest): Promise<HeartbeatAnswer> {
    return new Promise((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      this.kick();
    });
  }

  /** Resolves once everything submitted so far is committed. */
  async drain(): Promise<void> {
    while (this.inflight || this.scheduled || this.queue.length) await new Promise((r) => setTimeout(r, 5));
  }

  /** Everything queued goes in the next transaction; up to MAX_INFLIGHT transactions at once. */
  private kick(): void {
    if (this.scheduled || this.inflight >= MAX_INFLIGHT || !this.queue.length) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inflight < MAX_INFLIGHT && this.queue.length) {
        const batch = this.queue.splice(0, MAX_BATCH);
        this.inflight++;
        void this.flush(batch).finally(() => {
          this.inflight--;
          this.kick();
        });
      }
    });
  }

  private async flush(batch: Pending[]): Promise<void> {
    try {
      const { answers, changes } = await tx(this.deps.db, (c) => this.write(c, batch.map((b) => b.req)));
      batch.forEach((b, i) => b.resolve(answers[i]));
      this.onCommitted(changes);
    } catch (err) {
      // One bad item (its project deleted meanwhile, say) must not fail the others: retry alone.
      if (batch.length === 1) batch[0].reject(err);
      else for (const b of batch) await this.writeOne(b);
    }
  }

  private async writeOne(b: Pending): Promise<void> {
    try {
      const { answers, changes } = await tx(this.deps.db, (c) => this.write(c, [b.req]));
      b.resolve(answers[0]);
      this.onCommitted(changes);
    } catch (err) {
      b.reject(err);
    }
  }

  private async write(c: PoolClient, reqs: HeartbeatRequest[]): Promise<{ answers: HeartbeatAnswer[]; changes: DeadlineChange[] }> {
    const now = this.deps.clock();
    const rows = await this.lockMonitors(c, reqs, now);
    const state = new Map<string, MonitorState>();
    const effects = new Map<string, Effect[]>();
    const answers: HeartbeatAnswer[] = [];
    const hbIds: string[] = [];

    for (const req of reqs) {
      const row = rows.get(keyOf(req.projectId, req.slug))!;
      const before = state.get(row.id) ?? stateOf(row);
      const out = applyHeartbeat(before, { at: req.at.getTime(), status: req.status, expectedIntervalMs: req.expectedIntervalMs, gracePeriodMs: req.gracePeriodMs });
      state.set(row.id, out.next);
      const snapshot = withState(row, out.next, now);
      const list = effects.get(row.id) ?? [];
      if (out.openIncidentAt !== null) list.push({ kind: "open", at: new Date(out.openIncidentAt), monitor: snapshot });
      if (out.resolveIncidentAt !== null) list.push({ kind: "resolve", at: new Date(out.resolveIncidentAt), monitor: snapshot });
      if (list.length) effects.set(row.id, list);
      answers.push({ monitor: snapshot, statusChanged: out.statusChanged || (row as Created).created === true });
      hbIds.push(newId("hb"));
    }

    const ids = [...state.keys()];
    const finals = ids.map((id) => state.get(id)!);
    const d = (v: number | null) => (v === null ? null : new Date(v));
    const monitorIds = reqs.map((r) => rows.get(keyOf(r.projectId, r.slug))!.id);
    const roll = rollups(reqs, monitorIds);
    // One round trip: the monitors' new state, the raw heartbeats and the hourly rollups.
    await c.query(
      `WITH m AS (
         UPDATE monitors m SET status = u.status, expected_interval_ms = u.ei, grace_period_ms = u.gp, last_heartbeat_at = u.lh,
                first_heartbeat_at = u.fh, up_since = u.us, deadline_at = u.dl, updated_at = $9
           FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[])
                AS u(id, status, ei, gp, lh, fh, us, dl)
          WHERE m.id = u.id
       ), h AS (
         INSERT INTO heartbeats (id, monitor_id, at, status, latency_ms, metadata)
         SELECT id, monitor_id, at, status, latency_ms, metadata::jsonb
           FROM unnest($10::text[], $11::text[], $12::timestamptz[], $13::text[], $14::float8[], $15::text[]) AS h(id, monitor_id, at, status, latency_ms, metadata)
       )
       INSERT INTO heartbeat_rollups AS r (monitor_id, hour, total, successful, failed, latency_count, latency_sum, latency_min, latency_max)
       SELECT * FROM unnest($16::text[], $17::timestamptz[], $18::bigint[], $19::bigint[], $20::bigint[], $21::bigint[], $22::float8[], $23::float8[], $24::float8[])
       ON CONFLICT (monitor_id, hour) DO UPDATE SET
         total = r.total + excluded.total, successful = r.successful + excluded.successful, failed = r.failed + excluded.failed,
         latency_count = r.latency_count + excluded.latency_count, latency_sum = r.latency_sum + excluded.latency_sum,
         latency_min = LEAST(r.latency_min, excluded.latency_min), latency_max = GREATEST(r.latency_max, excluded.latency_max)`,
      [ids, finals.map((s) => s.status), finals.map((s) => s.expectedIntervalMs), finals.map((s) => s.gracePeriodMs), finals.map((s) => d(s.lastHeartbeatAt)),
        finals.map((s) => d(s.firstHeartbeatAt)), finals.map((s) => d(s.upSince)), finals.map((s) => d(s.deadlineAt)), now,
        hbIds, monitorIds, reqs.map((r) => r.at), reqs.map((r) => r.status), reqs.map((r) => r.latencyMs ?? null), reqs.map((r) => JSON.stringify(r.metadata)),
        roll.map((a) => a.id), roll.map((a) => a.hour), roll.map((a) => a.total), roll.map((a) => a.ok), roll.map((a) => a.failed), roll.map((a) => a.n), roll.map((a) => a.sum), roll.map((a) => a.min), roll.map((a) => a.max)],
    );
    await this.applyEffects(c, effects, now);

    const changes: DeadlineChange[] = [];
    for (const row of new Map([...rows.values()].map((r) => [r.id, r])).values()) {
      const next = state.get(row.id)!;
      const before = (row as Created).created ? null : row.deadline_at?.getTime() ?? null;
      changes.push({ id: row.id, deadlineAt: next.deadlineAt, wake: needsWake(before, next.deadlineAt) });
    }
    await notifyWake(c, changes);
    return { answers, changes };
  }

  /** Locks the addressed monitors in id order; creates the missing ones (name = slug, type heartbeat). */
  private async lockMonitors(c: PoolClient, reqs: HeartbeatRequest[], now: Date): Promise<Map<string, MonitorRow>> {
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
    // Known monitors by primary key (in id order); a cached id whose row moved (deleted, slug
    // changed) falls through to the lookup by slug.
    const cached = [...keys.keys()].map((k) => this.ids.get(k)).filter((id): id is string => id !== undefined);
    if (cached.length) {
      const r = await c.query<MonitorRow>("SELECT * FROM monitors WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", [cached]);
      for (const row of r.rows) if (keys.has(keyOf(row.project_id, row.slug))) found.set(keyOf(row.project_id, row.slug), row);
    }
    const unresolved = [...keys.values()].filter((r) => !found.has(keyOf(r.projectId, r.slug)));
    if (unresolved.length) for (const row of await select(unresolved)) found.set(keyOf(row.project_id, row.slug), row);
    const missing = unresolved.filter((r) => !found.has(keyOf(r.projectId, r.slug)));
    if (missing.length) {
      const ins = await c.query<MonitorRow>(
        `INSERT INTO monitors (id, project_id, slug, name, type, status, expected_interval_ms, grace_period_ms, created_at, updated_at)
         SELECT id, project_id, slug, slug, 'heartbeat', 'unknown', ei, gp, $6, $6
           FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS n(id, project_id, slug, ei, gp)
         ON CONFLICT (project_id, slug) DO NOTHING RETURNING *`,
        [missing.map(() => newId("mon")), missing.map((r) => r.projectId), missing.map((r) => r.slug),
          missing.map((r) => r.expectedIntervalMs ?? DEFAULT_INTERVAL_MS), missing.map((r) => r.gracePeriodMs ?? DEFAULT_GRACE_MS), now],
      );
      for (const row of ins.rows) found.set(keyOf(row.project_id, row.slug), Object.assign(row, { created: true }));
      const raced = missing.filter((r) => !found.has(keyOf(r.projectId, r.slug)));
      if (raced.length) for (const row of await select(raced)) found.set(keyOf(row.project_id, row.slug), row);
    }
    if (this.ids.size > MAX_CACHED_IDS) this.ids.clear();
    for (const [k, row] of found) this.ids.set(k, row.id);
    return found;
  }

  /** Incident changes in rounds: the k-th change of every monitor together, in arrival order per monitor. */
  private async applyEffects(c: PoolClient, effects: Map<string, Effect[]>, now: Date): Promise<void> {
    for (let k = 0; ; k++) {
      const round = [...effects.values()].filter((l) => l.length > k).map((l) => l[k]);
      if (!round.length) return;
      const opens = round.filter((e) => e.kind === "open");
      const resolves = round.filter((e) => e.kind === "resolve");
      await openIncidents(this.deps, c, opens.map((e) => ({ monitor: e.monitor, startedAt: e.at })), now);
      await resolveIncidents(this.deps, c, resolves.map((e) => ({ monitor: e.monitor, endedAt: e.at })), now, { notify: true });
    }
  }
}

type Created = MonitorRow & { created?: boolean };
interface Effect {
  kind: "open" | "resolve";
  at: Date;
  monitor: MonitorRow;
}

interface Rollup {
  id: string;
  hour: Date;
  total: number;
  ok: number;
  failed: number;
  n: number;
  sum: number;
  min: number | null;
  max: number | null;
}

/** Hourly rollups of a batch (counts and latency aggregates), in (monitor, hour) order. */
function rollups(reqs: HeartbeatRequest[], monitorIds: string[]): Rollup[] {
  const acc = new Map<string, Rollup>();
  reqs.forEach((r, i) => {
    const hour = new Date(Math.floor(r.at.getTime() / 3_600_000) * 3_600_000);
    const k = `${monitorIds[i]}|${hour.getTime()}`;
    const a = acc.get(k) ?? { id: monitorIds[i], hour, total: 0, ok: 0, failed: 0, n: 0, sum: 0, min: null, max: null };
    a.total++;
    if (r.status === "up") a.ok++;
    else a.failed++;
    if (r.latencyMs !== undefined) {
      a.n++;
      a.sum += r.latencyMs;
      a.min = a.min === null ? r.latencyMs : Math.min(a.min, r.latencyMs);
      a.max = a.max === null ? r.latencyMs : Math.max(a.max, r.latencyMs);
    }
    acc.set(k, a);
  });
  return [...acc.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.hour.getTime() - b.hour.getTime()));
}
