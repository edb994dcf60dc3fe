import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RunSchema } from "../../gen/vigil/v1/uptime_pb.js";
import { Coalescer } from "../shared/coalesce.js";
import { cursorFormat } from "../shared/cursor.js";
import { parseTimestampMs } from "../shared/time.js";
import type { Queryable } from "../storage/db.js";
import type { OpenRun } from "./model.js";
import type { RunRow } from "./store.js";

// Runs of cron jobs (decisions.md "Cron jobs and ping keys"): the SQL of the monitor_runs table
// (migration 9004), the output's tail, the run list's pages and messages. The decisions (pairing,
// timeouts, failure tolerance) are model.ts's; heartbeats.ts and detect.ts apply them under the
// monitor's row lock, or (heartbeats.ts's fast path) in one statement with a compare-and-set on the
// monitor's version, so each run is written by exactly one writer.

/** The most output kept per run: its last 10,000 bytes (UTF-8, never cutting a character). */
const MAX_OUTPUT_BYTES = 10_000;

export function outputTail(text: string): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= MAX_OUTPUT_BYTES) return text;
  let start = bytes.length - MAX_OUTPUT_BYTES;
  while (start < bytes.length && (bytes[start] & 0xc0) === 0x80) start++; // a continuation byte
  return bytes.subarray(start).toString("utf8");
}

/** A run written by a signal or a timeout; `ended_at` null while running. */
export interface RunWrite {
  id: string;
  monitorId: string;
  runId: string | null;
  startedAt: Date | null;
  endedAt: Date | null;
  outcome: RunRow["outcome"];
  exitCode: number | null;
  output: string | null;
  createdAt: Date;
}

/** An end (or a timeout) of a run stored running. `output` null keeps the start's. */
export interface RunEnd {
  id: string;
  endedAt: Date;
  outcome: Exclude<RunRow["outcome"], "running">;
  exitCode: number | null;
  output: string | null;
}

/** The running runs of the monitors (under their row locks), per monitor id. */
export async function openRuns(q: Queryable, monitorIds: string[]): Promise<Map<string, OpenRun[]>> {
  const out = new Map<string, OpenRun[]>();
  if (!monitorIds.length) return out;
  const r = await q.query<{ id: string; monitor_id: string; run_id: string | null; started_at: Date }>(
    "SELECT id, monitor_id, run_id, started_at FROM monitor_runs WHERE monitor_id = ANY($1::text[]) AND outcome = 'running'",
    [monitorIds],
  );
  for (const row of r.rows) {
    const list = out.get(row.monitor_id) ?? [];
    list.push({ id: row.id, runId: row.run_id, startedAt: row.started_at.getTime() });
    out.set(row.monitor_id, list);
  }
  return out;
}

export async function insertRuns(q: Queryable, runs: RunWrite[]): Promise<void> {
  if (!runs.length) return;
  await q.query(
    `INSERT INTO monitor_runs (id, monitor_id, run_id, started_at, ended_at, outcome, exit_code, output, created_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::int[], $8::text[], $9::timestamptz[])`,
    [
      runs.map((r) => r.id),
      runs.map((r) => r.monitorId),
      runs.map((r) => r.runId),
      runs.map((r) => r.startedAt),
      runs.map((r) => r.endedAt),
      runs.map((r) => r.outcome),
      runs.map((r) => r.exitCode),
      runs.map((r) => r.output),
      runs.map((r) => r.createdAt),
    ],
  );
}

/** Ends runs stored running (only those still running: a run ends once). */
export async function endRuns(q: Queryable, ends: RunEnd[]): Promise<void> {
  if (!ends.length) return;
  await q.query(
    `UPDATE monitor_runs r SET ended_at = u.ended_at, outcome = u.outcome, exit_code = u.exit_code,
            output = COALESCE(u.output, r.output)
       FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::int[], $5::text[]) AS u(id, ended_at, outcome, exit_code, output)
      WHERE r.id = u.id AND r.outcome = 'running'`,
    [
      ends.map((e) => e.id),
      ends.map((e) => e.endedAt),
      ends.map((e) => e.outcome),
      ends.map((e) => e.exitCode),
      ends.map((e) => e.output),
    ],
  );
}

// The run list: newest first by (created_at, id); the cursor is the last run's, tag run1.
const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ID = /^run_[0-9A-Za-z]{1,64}$/;
const runCursor = cursorFormat<{ at: string; id: string }>("run1", {
  parts: 2,
  write: (p) => [p.at, p.id],
  read: ([at, id]) => (AT.test(at) && parseTimestampMs(at) !== undefined && ID.test(id) ? { at, id } : undefined),
});

export async function listRunsPage(
  q: Queryable,
  monitorId: string,
  page: { limit: number; cursor?: string },
): Promise<{ rows: RunRow[]; nextCursor?: string; hasMore: boolean }> {
  const after = page.cursor ? runCursor.read(page.cursor) : undefined;
  const r = await q.query<RunRow & { cursor_at: string }>(
    `SELECT r.*, to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
       FROM monitor_runs r
      WHERE r.monitor_id = $1 AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2::timestamptz, $3::text))
      ORDER BY r.created_at DESC, r.id DESC LIMIT $4`,
    [monitorId, after?.at ?? null, after?.id ?? null, page.limit + 1],
  );
  const hasMore = r.rows.length > page.limit;
  const rows = r.rows.slice(0, page.limit);
  const last = rows[rows.length - 1];
  return {
    rows: rows.map(({ cursor_at: _c, ...row }) => row as RunRow),
    hasMore,
    nextCursor: hasMore && last ? runCursor.encode({ at: last.cursor_at, id: last.id }) : undefined,
  };
}

export function runMessage(r: RunRow): MessageInitShape<typeof RunSchema> {
  const duration = r.started_at && r.ended_at ? r.ended_at.getTime() - r.started_at.getTime() : undefined;
  return {
    id: r.id,
    runId: r.run_id ?? undefined,
    startedAt: r.started_at?.toISOString(),
    endedAt: r.ended_at?.toISOString(),
    durationMs: duration === undefined ? undefined : BigInt(duration),
    outcome: r.outcome,
    exitCode: r.exit_code ?? undefined,
    output: r.output ?? undefined,
  };
}

/** The metric each ended run's duration is recorded as (a measurement, tagged monitor and outcome). */
const RUN_DURATION_METRIC = "vigil.run.duration_ms";

/** A run's duration, handed to the metrics feature's write path after the commit (server/features.ts). */
export interface RunDuration {
  projectId: string;
  /** The run record's id: the metric point's client id is made from it (recorded once). */
  runRecordId: string;
  monitorSlug: string;
  outcome: Exclude<RunRow["outcome"], "running">;
  durationMs: number;
  endedAt: Date;
}

/** Where ended runs' durations go after the commit; `drain` settles every write handed over so far. */
export interface RunDurationSink {
  record(points: RunDuration[]): Promise<void>;
  /** Writes what is queued now and resolves once nothing is in flight (the uptime feature's stop). */
  drain(): Promise<void>;
}

/**
 * The sink writing each duration as a measurement `vigil.run.duration_ms` (unit ms), tagged
 * `monitor` (the slug) and `outcome`, at the run's end, with a client id made from the run record's
 * id (so a point is recorded once), grouped per project. Durations handed over while a write runs
 * go together in the next one (one at a time): each heartbeat writer flush that ends runs hands
 * over its own few, and one ingest per flush cost more than the heartbeats' own statement.
 */
export function runDurationsTo(
  record: (
    projectId: string,
    points: {
      name: string;
      value: number;
      unit: string | null;
      timestamp: Date;
      tags: Record<string, string>;
      id: string;
    }[],
  ) => Promise<void>,
): RunDurationSink {
  const queue = new Coalescer<RunDuration>({
    wait: "turn",
    maxBatch: MAX_DURATIONS_AT_ONCE,
    // Each project's write on its own: one that fails (its project deleted meanwhile) rejects its
    // own durations only, not those of the other projects in the batch.
    flush: async (durations) => {
      const byProject = new Map<string, RunDuration[]>();
      for (const d of durations) {
        const list = byProject.get(d.projectId);
        if (list) list.push(d);
        else byProject.set(d.projectId, [d]);
      }
      const failed = new Map<string, Error>();
      for (const [projectId, list] of byProject)
        await record(
          projectId,
          list.map((d) => ({
            name: RUN_DURATION_METRIC,
            value: d.durationMs,
            unit: "ms",
            timestamp: d.endedAt,
            tags: { monitor: d.monitorSlug, outcome: d.outcome },
            id: uuidOf(d.runRecordId),
          })),
        ).catch((err: unknown) => failed.set(projectId, err instanceof Error ? err : new Error(String(err))));
      return durations.map((d) => failed.get(d.projectId));
    },
  });
  return {
    async record(durations) {
      await Promise.all(durations.map((d) => queue.submit(d)));
    },
    drain: () => queue.stop(),
  };
}

/** Durations written in one go, at most. */
const MAX_DURATIONS_AT_ONCE = 1000;

/** A UUID (version 8, name-based) from a run record's id. */
function uuidOf(id: string): string {
  const h = createHash("sha256").update(`vigil.run:${id}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
