import { tx, type Db } from "../storage/db.js";
import type { Logger } from "pino";
import type { BackgroundTasks, TaskRecorder } from "../shared/background.js";
import { Coalescer } from "../shared/coalesce.js";
import { startPeriodic, type Periodic } from "../shared/periodic.js";
import type { Telemetry } from "../shared/telemetry.js";
import type { DerivedRecords, Projection, StoredEvent } from "./pipeline.js";

// Derived records (the pipeline's `projections`, pipeline.ts: user hours, users and groups,
// analytics rollups) are maintained from stored events AFTER acceptance, so that concurrent
// ingest transactions never wait on each other's hot rows:
// - the ingest transaction stores the events and, per project, ONE row of `ingest_deltas` holding
//   each projection's aggregated delta of that group (delta(): pure);
// - the Projector applies rows and deletes them in the same transaction (exactly once; a crash
//   before the commit leaves the rows for the next attempt), merging many ingest groups into one
//   upsert per derived row (apply());
// - a reader of derived records first settles its project (settle()): it applies that project's
//   pending rows itself, waiting for a projector that holds some, so an answer never misses an
//   event that was acknowledged before the read began.

interface DeltaRow {
  id: string;
  project_id: string;
  deltas: Record<string, unknown>;
  created_at: Date;
}

const BATCH_ROWS = 200;

export interface ProjectorOptions {
  db: Db;
  log: Logger;
  telemetry: Telemetry;
  /** Records the passes ("derived records projector") and runs the poll ("derived records poll"). */
  tasks: BackgroundTasks;
  /** The projections, in the order they apply (wired in server/features.ts). */
  projections: Projection[];
  delayMs: number;
  pollMs: number;
}

export class Projector implements DerivedRecords {
  readonly projections: Projection[];
  private readonly db: Db;
  private readonly log: Logger;
  private readonly telemetry: Telemetry;
  private readonly opts: { delayMs: number; pollMs: number };
  private readonly tasks: BackgroundTasks;
  private readonly task: TaskRecorder;
  private poll: Periodic | undefined;
  /** Background passes (shared/coalesce.ts): one at a time, each `delayMs` after the kick or the pass before. */
  private readonly passes: Coalescer<void>;
  private stopped = false;

  constructor(o: ProjectorOptions) {
    this.db = o.db;
    this.log = o.log;
    this.telemetry = o.telemetry;
    this.projections = o.projections;
    this.opts = { delayMs: o.delayMs, pollMs: o.pollMs };
    this.tasks = o.tasks;
    this.task = o.tasks.record("derived records projector", o.pollMs);
    this.passes = new Coalescer<void>({
      wait: o.delayMs,
      waitEachBatch: true,
      flush: () =>
        this.task
          .run(() => this.drain())
          .catch((err) => this.log.warn({ err }, "derived records: projection failed; retrying on the next kick")),
    });
  }

  /** The `ingest_deltas` rows for a group of stored events: [projectId, JSON] per project. */
  rowsFor(events: StoredEvent[]): [string, string][] {
    if (!this.projections.length) return [];
    const byProject = new Map<string, StoredEvent[]>();
    for (const e of events) {
      const list = byProject.get(e.projectId);
      if (list) list.push(e);
      else byProject.set(e.projectId, [e]);
    }
    const rows: [string, string][] = [];
    for (const [projectId, list] of byProject) {
      const out: Record<string, unknown> = {};
      let any = false;
      for (const p of this.projections) {
        const d = p.delta(list);
        if (d !== null) {
          out[p.name] = d;
          any = true;
        }
      }
      if (any) rows.push([projectId, JSON.stringify(out)]);
    }
    return rows;
  }

  /** Background draining: after local commits (kick) and every pollMs (other nodes' leftovers). */
  start(): void {
    this.stopped = false;
    this.poll = startPeriodic(this.tasks, "derived records poll", this.opts.pollMs, async () => this.kick());
    this.kick();
  }

  /** Rows were committed: drain soon (coalesced). */
  kick(): void {
    if (this.stopped) return;
    void this.passes.submit();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.poll?.stop();
    await this.passes.stop(); // a pass waiting for its delay runs now
    await this.drain().catch((err) =>
      this.log.warn({ err }, "derived records: final projection failed; the next start applies them"),
    );
  }

  /** Applies every row no other projector holds, a batch per transaction. */
  async drain(): Promise<void> {
    for (;;) {
      const n = await this.inTx(
        "SELECT id, project_id, deltas, created_at FROM ingest_deltas ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
        [BATCH_ROWS],
      );
      if (n < BATCH_ROWS) return;
    }
  }

  /** Applies the project's pending rows (waiting for any projector holding some) before a read. */
  async settle(projectId: string): Promise<void> {
    if (!this.projections.length) return;
    const pending = await this.db.query({
      name: "derived_pending",
      text: "SELECT 1 FROM ingest_deltas WHERE project_id = $1 LIMIT 1",
      values: [projectId],
    });
    if (!pending.rowCount) return;
    await this.inTx(
      "SELECT id, project_id, deltas, created_at FROM ingest_deltas WHERE project_id = $1 ORDER BY id FOR UPDATE",
      [projectId],
    );
  }

  /** Locks rows with `select`, applies them per project in id order, deletes them, commits. */
  private inTx(select: string, values: unknown[]): Promise<number> {
    return tx(this.db, async (c) => {
      const rows = (await c.query<DeltaRow>(select, values)).rows;
      if (rows.length) {
        // A deleted project's pending deltas are dropped: applying them would fail the users' and
        // groups' foreign key, and with it this whole pass, again on every later one. KEY SHARE
        // holds off a deletion of the live ones until this transaction ends.
        const ids = [...new Set(rows.map((r) => r.project_id))].sort();
        const live = new Set(
          (
            await c.query<{ id: string }>(
              "SELECT id FROM projects WHERE id = ANY($1::text[]) ORDER BY id FOR KEY SHARE",
              [ids],
            )
          ).rows.map((r) => r.id),
        );
        const byProject = new Map<string, DeltaRow[]>();
        for (const r of rows) {
          if (!live.has(r.project_id)) continue;
          const list = byProject.get(r.project_id);
          if (list) list.push(r);
          else byProject.set(r.project_id, [r]);
        }
        for (const [projectId, list] of [...byProject].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
          for (const p of this.projections) {
            const deltas = list.map((r) => r.deltas[p.name]).filter((d) => d !== undefined && d !== null);
            if (deltas.length) await p.apply(c, projectId, deltas);
          }
        }
        await c.query("DELETE FROM ingest_deltas WHERE id = ANY($1::bigint[])", [rows.map((r) => r.id)]);
        // Lag of derived records behind acceptance (the oldest row applied; wall clock of the database).
        this.telemetry.schedulerLag.observe(
          { kind: "derived_records" },
          Math.max(0, Date.now() - rows[0].created_at.getTime()) / 1000,
        );
      }
      return rows.length;
    });
  }
}
