import type { PoolClient } from "pg";
import type { PreparingStep, SqlGuard, StoredEvent } from "../events/pipeline.js";
import type { Db, Queryable } from "../storage/db.js";
import type { SlotMap } from "./sql.js";

// The per-project property registry: which top-level data keys have a typed slot (n1..n8 / s1..s8).
//
// Correctness protocol (answers identical with or without slots):
// 1. A slot is assigned in state 'backfilling' and the project's registry version is bumped.
// 2. The ingest pipeline's preparing step (`prepare`, wired in server/features.ts) checks the version inside its own transaction (one statement per batch) and
//    reloads the registry when it changed, so every transaction that reads after step 1 fills the slot.
// 3. The assigner waits until every transaction open at step 1 has ended, then backfills the slot
//    on every stored event of the project, then marks it 'active'.
// 4. The planner uses only 'active' slots. Slots are never reassigned.

interface Entry {
  version: number;
  props: { key: string; column: string; kind: "n" | "s" }[];
}

export class Registry {
  private entries = new Map<string, Entry>();
  private active = new Map<string, { at: number; slots: SlotMap }>();

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 2000,
  ) {}

  /** The pipeline's preparing step: sets `slots` of each event from its project's registry. */
  readonly prepare: PreparingStep = {
    name: "analytics: typed property slots",
    run: async (client: PoolClient, events: StoredEvent[]): Promise<void> => {
      if (events.length === 0) return;
      const projects = [...new Set(events.map((e) => e.projectId))];
      const r = await client.query<{ project_id: string; version: string }>(
        "SELECT project_id, version::text FROM analytics_registry_versions WHERE project_id = ANY($1::text[])",
        [projects],
      );
      const stale: string[] = [];
      const versions = new Map(r.rows.map((x) => [x.project_id, Number(x.version)]));
      for (const p of projects) {
        const v = versions.get(p);
        if (v === undefined) this.entries.set(p, { version: -1, props: [] });
        else if (this.entries.get(p)?.version !== v) stale.push(p);
      }
      if (stale.length) {
        const props = await client.query<{ project_id: string; key: string; kind: "n" | "s"; slot: number }>(
          "SELECT project_id, key, kind, slot FROM analytics_properties WHERE project_id = ANY($1::text[])",
          [stale],
        );
        for (const p of stale) {
          const list = props.rows
            .filter((x) => x.project_id === p)
            .map((x) => ({ key: x.key, kind: x.kind, column: `${x.kind}${x.slot}` }));
          this.entries.set(p, { version: versions.get(p)!, props: list });
        }
      }
      this.fill(events);
    },
    /**
     * The same from the cached registries, guarded by their versions: the statement inserts only
     * if no project's version moved, so the protocol above holds as when the version is read in
     * the transaction (a statement that began before a bump is waited for by the assigner).
     */
    cached: (events: StoredEvent[]): SqlGuard | undefined => {
      const projects = [...new Set(events.map((e) => e.projectId))];
      const versions: number[] = [];
      for (const p of projects) {
        const entry = this.entries.get(p);
        if (!entry) return undefined;
        versions.push(entry.version);
      }
      this.fill(events);
      return (param) =>
        `NOT EXISTS (SELECT 1 FROM unnest(${param(projects)}::text[], ${param(versions)}::int8[]) AS x(p, v)
             LEFT JOIN analytics_registry_versions r ON r.project_id = x.p WHERE coalesce(r.version, -1) <> x.v)`;
    },
  };

  /** Sets `slots` of each event from its project's (loaded) registry entry. */
  private fill(events: StoredEvent[]): void {
    for (const e of events) {
      const entry = this.entries.get(e.projectId);
      if (!entry || entry.props.length === 0) continue;
      const slots: Record<string, number | string | null> = {};
      for (const { key, kind, column } of entry.props) slots[column] = slotValue(e.data, key, kind);
      e.slots = slots;
    }
  }

  /** Active slots for the planner (cached briefly; a stale cache only misses a new fast path). */
  async slots(projectId: string, now: number): Promise<SlotMap> {
    const hit = this.active.get(projectId);
    if (hit && now - hit.at < this.ttlMs) return hit.slots;
    const slots = await activeSlots(this.db, projectId);
    this.active.set(projectId, { at: now, slots });
    return slots;
  }
}

/** The slot value of a data key: the JSON value when it has the slot's type, else null. */
function slotValue(data: Record<string, unknown>, key: string, kind: "n" | "s"): number | string | null {
  if (!Object.prototype.hasOwnProperty.call(data, key)) return null;
  const v = data[key];
  if (kind === "n") return typeof v === "number" && Number.isFinite(v) ? v : null;
  return typeof v === "string" ? v : null;
}

export async function activeSlots(db: Queryable, projectId: string): Promise<SlotMap> {
  const r = await db.query<{ key: string; kind: "n" | "s"; slot: number }>(
    "SELECT key, kind, slot FROM analytics_properties WHERE project_id = $1 AND state = 'active'",
    [projectId],
  );
  const out: SlotMap = { n: new Map(), s: new Map() };
  for (const x of r.rows) out[x.kind].set(x.key, `${x.kind}${x.slot}`);
  return out;
}
