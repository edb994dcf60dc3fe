import type { Queryable } from "../storage/db.js";
import type { MonitorState } from "./model.js";
import { HOUR_MS } from "../shared/time.js";
import type { RunEnd, RunWrite } from "./runs.js";

// The one statement that writes a group of heartbeats: the monitors' new state, the raw heartbeats
// and the hourly rollups. Two forms share it:
// - locked (inside the transaction that locked the monitors): every monitor is written;
// - compare-and-set (autocommit, no lock taken first): a monitor is written only when its version is
//   still the one its state was computed from; the heartbeats and rollups of the others are not
//   written either, and the caller sends them down the locked path.
// Both return the (id, version) of the monitors written. The compare-and-set form may also insert and
// end run rows (monitor_runs), for the monitors it writes only.

export interface HeartbeatRow {
  id: string;
  monitorId: string;
  at: Date;
  status: string;
  latencyMs: number | null;
  metadata: string;
}

export interface MonitorWrite {
  id: string;
  /** The version the new state was computed from (compare-and-set form only). */
  version: number;
  next: MonitorState;
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

/** A heartbeat's client id claimed by the compare-and-set statement (events/claims.ts). */
export interface HeartbeatClaim {
  projectId: string;
  clientId: string;
  monitorId: string;
}

const sql = (cas: boolean, claims = false, runs = false) => `WITH m AS (
  UPDATE monitors m SET status = u.status, expected_interval_ms = u.ei, grace_period_ms = u.gp, last_heartbeat_at = u.lh,
         first_heartbeat_at = u.fh, up_since = u.us, deadline_at = u.dl, schedule_cron = u.sc, schedule_timezone = u.sz,
         consecutive_failures = u.cf, last_success_start_at = u.ls, running_since = u.rs, updated_at = $1
    FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::timestamptz[], $8::timestamptz[], $9::timestamptz[], $10::timestamptz[],
                $26::text[], $27::text[], $28::int[], $29::timestamptz[], $30::timestamptz[])
         AS u(id, version, status, ei, gp, lh, fh, us, dl, sc, sz, cf, ls, rs)
   WHERE m.id = u.id${cas ? " AND m.version = u.version" : ""}
  RETURNING m.id, m.version
), h AS (
  INSERT INTO heartbeats (id, monitor_id, at, status, latency_ms, metadata)
  SELECT h.id, h.monitor_id, h.at, h.status, h.latency_ms, h.metadata::jsonb
    FROM unnest($11::text[], $12::text[], $13::timestamptz[], $14::text[], $15::float8[], $16::text[]) AS h(id, monitor_id, at, status, latency_ms, metadata)
   WHERE h.monitor_id IN (SELECT id FROM m)
), r AS (
  INSERT INTO heartbeat_rollups AS r (monitor_id, hour, total, successful, failed, latency_count, latency_sum, latency_min, latency_max)
  SELECT x.* FROM unnest($17::text[], $18::timestamptz[], $19::bigint[], $20::bigint[], $21::bigint[], $22::bigint[], $23::float8[], $24::float8[], $25::float8[])
         AS x(monitor_id, hour, total, successful, failed, latency_count, latency_sum, latency_min, latency_max)
   WHERE x.monitor_id IN (SELECT id FROM m)
  ON CONFLICT (monitor_id, hour) DO UPDATE SET
    total = r.total + excluded.total, successful = r.successful + excluded.successful, failed = r.failed + excluded.failed,
    latency_count = r.latency_count + excluded.latency_count, latency_sum = r.latency_sum + excluded.latency_sum,
    latency_min = LEAST(r.latency_min, excluded.latency_min), latency_max = GREATEST(r.latency_max, excluded.latency_max)
)${
  claims
    ? `, c AS (
  INSERT INTO ingest_ids (project_id, kind, client_id, created_at)
  SELECT x.p, 'heartbeat', x.c, $1 FROM unnest($31::text[], $32::uuid[], $33::text[]) WITH ORDINALITY AS x(p, c, monitor_id, n)
   WHERE x.monitor_id IN (SELECT id FROM m) ORDER BY n
)`
    : ""
}${
  runs
    ? `, ri AS (
  INSERT INTO monitor_runs (id, monitor_id, run_id, started_at, ended_at, outcome, exit_code, output, created_at)
  SELECT x.* FROM unnest($34::text[], $35::text[], $36::text[], $37::timestamptz[], $38::timestamptz[], $39::text[], $40::int[], $41::text[], $42::timestamptz[])
         AS x(id, monitor_id, run_id, started_at, ended_at, outcome, exit_code, output, created_at)
   WHERE x.monitor_id IN (SELECT id FROM m)
), re AS (
  UPDATE monitor_runs r SET ended_at = u.ended_at, outcome = u.outcome, exit_code = u.exit_code, output = COALESCE(u.output, r.output)
    FROM unnest($43::text[], $44::text[], $45::timestamptz[], $46::text[], $47::int[], $48::text[]) AS u(id, monitor_id, ended_at, outcome, exit_code, output)
   WHERE r.id = u.id AND r.outcome = 'running' AND u.monitor_id IN (SELECT id FROM m)
)`
    : ""
}
SELECT id, version FROM m`;

const LOCKED = sql(false);
const CAS = sql(true);
// The claims (plain inserts, after the monitors' locks, only for the monitors written): one taken
// already fails the whole statement, and its heartbeats go down the locked path.
const CAS_CLAIMS = sql(true, true);
// Runs written with the compare-and-set (heartbeats.ts's fast path for run signals): inserted and
// ended only for the monitors written, whose running runs were known at the version compared.
const CAS_RUNS = sql(true, true, true);

/** The run rows a compare-and-set statement writes (runs.ts's inserts and ends, each with its monitor). */
export interface RunRows {
  inserts: RunWrite[];
  ends: (RunEnd & { monitorId: string })[];
}

/** Writes monitors (in id order, so concurrent statements lock rows in one order), heartbeats and rollups. */
export async function writeHeartbeats(
  c: Queryable,
  cas: boolean,
  monitors: MonitorWrite[],
  heartbeats: HeartbeatRow[],
  now: Date,
  claims: HeartbeatClaim[] = [],
  runs?: RunRows,
): Promise<Map<string, number>> {
  const ms = [...monitors].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const s = ms.map((m) => m.next);
  const d = (v: number | null) => (v === null ? null : new Date(v));
  const roll = rollups(heartbeats);
  const withRuns = cas && runs !== undefined && (runs.inserts.length > 0 || runs.ends.length > 0);
  const withClaims = withRuns || (cas && claims.length > 0);
  const r = await c.query<{ id: string; version: number }>({
    name: withRuns
      ? "uptime_heartbeats_cas_runs"
      : withClaims
        ? "uptime_heartbeats_cas_claims"
        : cas
          ? "uptime_heartbeats_cas"
          : "uptime_heartbeats_locked",
    text: withRuns ? CAS_RUNS : withClaims ? CAS_CLAIMS : cas ? CAS : LOCKED,
    values: [
      now,
      ms.map((m) => m.id),
      ms.map((m) => m.version),
      s.map((x) => x.status),
      s.map((x) => x.expectedIntervalMs),
      s.map((x) => x.gracePeriodMs),
      s.map((x) => d(x.lastHeartbeatAt)),
      s.map((x) => d(x.firstHeartbeatAt)),
      s.map((x) => d(x.upSince)),
      s.map((x) => d(x.deadlineAt)),
      heartbeats.map((h) => h.id),
      heartbeats.map((h) => h.monitorId),
      heartbeats.map((h) => h.at),
      heartbeats.map((h) => h.status),
      heartbeats.map((h) => h.latencyMs),
      heartbeats.map((h) => h.metadata),
      roll.map((a) => a.id),
      roll.map((a) => a.hour),
      roll.map((a) => a.total),
      roll.map((a) => a.ok),
      roll.map((a) => a.failed),
      roll.map((a) => a.n),
      roll.map((a) => a.sum),
      roll.map((a) => a.min),
      roll.map((a) => a.max),
      s.map((x) => x.schedule?.cron ?? null),
      s.map((x) => x.schedule?.timezone ?? null),
      s.map((x) => x.consecutiveFailures ?? 0),
      s.map((x) => d(x.lastSuccessStartAt ?? null)),
      s.map((x) => d(x.runningSince ?? null)),
      ...(withClaims
        ? [claims.map((x) => x.projectId), claims.map((x) => x.clientId), claims.map((x) => x.monitorId)]
        : []),
      ...(withRuns ? runValues(runs) : []),
    ],
  });
  return new Map(r.rows.map((x) => [x.id, x.version]));
}

function runValues({ inserts, ends }: RunRows): unknown[] {
  return [
    inserts.map((r) => r.id),
    inserts.map((r) => r.monitorId),
    inserts.map((r) => r.runId),
    inserts.map((r) => r.startedAt),
    inserts.map((r) => r.endedAt),
    inserts.map((r) => r.outcome),
    inserts.map((r) => r.exitCode),
    inserts.map((r) => r.output),
    inserts.map((r) => r.createdAt),
    ends.map((e) => e.id),
    ends.map((e) => e.monitorId),
    ends.map((e) => e.endedAt),
    ends.map((e) => e.outcome),
    ends.map((e) => e.exitCode),
    ends.map((e) => e.output),
  ];
}

/** Hourly rollups of a group (counts and latency aggregates), in (monitor, hour) order. */
function rollups(heartbeats: HeartbeatRow[]): Rollup[] {
  const acc = new Map<string, Rollup>();
  for (const h of heartbeats) {
    const hour = new Date(Math.floor(h.at.getTime() / HOUR_MS) * HOUR_MS);
    const k = `${h.monitorId}|${hour.getTime()}`;
    const a = acc.get(k) ?? { id: h.monitorId, hour, total: 0, ok: 0, failed: 0, n: 0, sum: 0, min: null, max: null };
    a.total++;
    if (h.status === "up") a.ok++;
    else a.failed++;
    if (h.latencyMs !== null) {
      a.n++;
      a.sum += h.latencyMs;
      a.min = a.min === null ? h.latencyMs : Math.min(a.min, h.latencyMs);
      a.max = a.max === null ? h.latencyMs : Math.max(a.max, h.latencyMs);
    }
    acc.set(k, a);
  }
  return [...acc.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.hour.getTime() - b.hour.getTime()));
}
