import type { UptimeDeps } from "./deps.js";
import { tx } from "../storage/db.js";
import { openIncidents } from "./incidents.js";
import { applyRunTimeouts, evaluateDeadline, markDown, runIncidentDescription } from "./model.js";
import { endRuns, openRuns, type RunDuration } from "./runs.js";
import { stateOf, stateSets, stateValues, type MonitorRow } from "./store.js";

// The deadline check shared by both runners (embedded scheduler, Temporal activity): re-read the
// monitors, decide with evaluateDeadline(), and apply each "down" with a compare-and-set on the
// (status, deadline_at) that was read, opening the incident at the deadline in the same transaction.
// Two nodes checking the same monitor: one CAS matches, the other finds nothing to do.

export interface CheckResult {
  /** Per monitor id: the next deadline to wake for (epoch ms), or null when none applies (or gone). */
  next: Map<string, number | null>;
  /** Monitors this call took down. */
  opened: string[];
  /** Per monitor id still existing: its status and slug after the check. */
  found: Map<string, { status: MonitorRow["status"]; slug: string }>;
}

export async function checkDeadlines(deps: UptimeDeps, ids: string[], now: Date): Promise<CheckResult> {
  const next = new Map<string, number | null>();
  const opened: string[] = [];
  const found = new Map<string, { status: MonitorRow["status"]; slug: string }>();
  if (!ids.length) return { next, opened, found };
  for (const id of ids) next.set(id, null);
  const rows = (await deps.db.query<MonitorRow>("SELECT * FROM monitors WHERE id = ANY($1::text[])", [ids])).rows;
  for (const row of rows) found.set(row.id, { status: row.status, slug: row.slug });
  const due: { row: MonitorRow; since: number }[] = [];
  const timedOut: string[] = [];
  for (const row of rows) {
    const v = evaluateDeadline(stateOf(row), now.getTime());
    if (v.overdue) due.push({ row, since: v.since });
    else if (v.runTimeout !== null) timedOut.push(row.id);
    else next.set(row.id, v.nextCheckAt);
  }
  // A run timed out (start + maxRuntimeMs passed): under the monitor's row lock (runs.ts, model.ts).
  if (timedOut.length) {
    const t = await applyTimeouts(deps, timedOut, now);
    for (const [id, at] of t.next) next.set(id, at);
    for (const [id, f] of t.found) found.set(id, f);
    opened.push(...t.opened);
  }
  if (!due.length) return { next, opened, found };

  const lost = await tx(deps.db, async (c) => {
    const values = due.map((d) => stateValues(markDown(stateOf(d.row))));
    const col = (i: number) => values.map((v) => v[i]);
    const won = await c.query<MonitorRow>(
      `UPDATE monitors m SET status = u.status, up_since = u.up_since, deadline_at = u.deadline_at, updated_at = $7
         FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[], $6::timestamptz[])
              AS u(id, old_status, old_deadline, status, up_since, deadline_at)
        WHERE m.id = u.id AND m.status = u.old_status AND m.deadline_at = u.old_deadline
        RETURNING m.*`,
      [
        due.map((d) => d.row.id),
        due.map((d) => d.row.status),
        due.map((d) => d.row.deadline_at),
        col(0),
        col(6),
        col(7),
        now,
      ],
    );
    const byId = new Map(won.rows.map((r) => [r.id, r]));
    const items = due
      .filter((d) => byId.has(d.row.id))
      .map((d) => ({ monitor: byId.get(d.row.id)!, startedAt: new Date(d.since) }));
    await openIncidents(deps, c, items, now);
    for (const d of due) {
      if (!byId.has(d.row.id)) continue;
      opened.push(d.row.id);
      found.set(d.row.id, { status: "down", slug: d.row.slug });
      deps.telemetry.schedulerLag.observe({ kind: "monitor_deadline" }, Math.max(0, now.getTime() - d.since) / 1000);
    }
    return due.filter((d) => !byId.has(d.row.id)).map((d) => d.row.id);
  });
  // Lost CAS: the monitor changed meanwhile (a heartbeat, another node): read its deadline again.
  if (lost.length) {
    const again = await deps.db.query<{
      id: string;
      deadline_at: Date | null;
      status: MonitorRow["status"];
      slug: string;
    }>("SELECT id, deadline_at, status, slug FROM monitors WHERE id = ANY($1::text[])", [lost]);
    for (const id of lost) found.delete(id);
    for (const r of again.rows) {
      next.set(r.id, r.deadline_at?.getTime() ?? null);
      found.set(r.id, { status: r.status, slug: r.slug });
    }
  }
  return { next, opened, found };
}

/**
 * Times out the runs due (each a failure at start + maxRuntimeMs: applyRunTimeouts), under the
 * monitors' row locks, so two nodes time a run out once: the second re-reads, finds it ended and
 * nothing due. An incident opened by a timeout names the run. The durations go to the metrics sink
 * after the commit.
 */
async function applyTimeouts(deps: UptimeDeps, ids: string[], now: Date): Promise<CheckResult> {
  const next = new Map<string, number | null>();
  const found = new Map<string, { status: MonitorRow["status"]; slug: string }>();
  const opened: string[] = [];
  const durations: RunDuration[] = [];
  await tx(deps.db, async (c) => {
    const rows = (
      await c.query<MonitorRow>("SELECT * FROM monitors WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", [ids])
    ).rows;
    const running = await openRuns(
      c,
      rows.map((r) => r.id),
    );
    const ends: Parameters<typeof endRuns>[1] = [];
    const incidents: { monitor: MonitorRow; startedAt: Date; description: string }[] = [];
    for (const row of rows) {
      const before = stateOf(row);
      const t = applyRunTimeouts(before, running.get(row.id) ?? [], now.getTime());
      found.set(row.id, { status: t.next.status, slug: row.slug });
      next.set(row.id, t.next.deadlineAt);
      if (!t.timeouts.length && t.next.deadlineAt === before.deadlineAt) continue;
      const max = before.maxRuntimeMs ?? 0;
      const r = await c.query<MonitorRow>(
        `UPDATE monitors SET ${stateSets(3)}, updated_at = $2 WHERE id = $1 RETURNING *`,
        [row.id, now, ...stateValues(t.next)],
      );
      for (const x of t.timeouts) {
        ends.push({ id: x.run.id, endedAt: new Date(x.at), outcome: "timed_out", exitCode: null, output: null });
        durations.push({
          projectId: row.project_id,
          runRecordId: x.run.id,
          monitorSlug: row.slug,
          outcome: "timed_out",
          durationMs: max,
          endedAt: new Date(x.at),
        });
        if (x.tookDown) {
          incidents.push({
            monitor: r.rows[0],
            startedAt: new Date(x.at),
            description: runIncidentDescription(x.run, { kind: "timed_out", maxRuntimeMs: max }),
          });
          opened.push(row.id);
          deps.telemetry.schedulerLag.observe({ kind: "monitor_deadline" }, Math.max(0, now.getTime() - x.at) / 1000);
        }
      }
    }
    await endRuns(c, ends);
    await openIncidents(deps, c, incidents, now);
  });
  if (durations.length && deps.runDurations)
    void deps.runDurations.record(durations).catch((err) => deps.log.warn({ err }, "recording run durations failed"));
  return { next, opened, found };
}
