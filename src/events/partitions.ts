import type { PoolClient } from "pg";
import { DAY_MS, WEEK_MS } from "../shared/time.js";

// Weekly partitions of `events` (see 1000_events.sql): events_pYYYYMMDD holds [Monday, next Monday)
// in UTC. The ingest transaction creates a missing one; creators are serialized by a transaction
// advisory lock so that two nodes (or two concurrent flushes) never race on the same name.

const PARTITION_LOCK = 7_482_019_1001;

/** Monday 00:00 UTC of the week holding `ms`. */
export function weekStart(ms: number): number {
  const day = Math.floor(ms / DAY_MS);
  // 1970-01-01 was a Thursday: (day + 3) % 7 is the days since Monday.
  const sinceMonday = (((day + 3) % 7) + 7) % 7;
  return (day - sinceMonday) * DAY_MS;
}

export function partitionName(weekStartMs: number): string {
  const d = new Date(weekStartMs);
  const p = (n: number) => String(n).padStart(2, "0");
  return `events_p${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}`;
}

/** Remembers which partitions exist; only filled after the creating transaction committed. */
export class PartitionCache {
  private readonly known = new Set<number>();

  /** Week starts of `timestamps` not known to exist yet. */
  missing(timestamps: Iterable<number>): number[] {
    const out = new Set<number>();
    for (const ms of timestamps) {
      const w = weekStart(ms);
      if (!this.known.has(w)) out.add(w);
    }
    return [...out].sort((a, b) => a - b);
  }

  remember(weeks: number[]): void {
    for (const w of weeks) this.known.add(w);
  }

  /** Forgets the weeks of `timestamps`: their partition was dropped (retention) since it was remembered. */
  forget(timestamps: Iterable<number>): void {
    for (const ms of timestamps) this.known.delete(weekStart(ms));
  }
}

/** Creates the partitions for `weeks` when missing, inside the caller's transaction. */
export async function ensurePartitions(client: PoolClient, weeks: number[]): Promise<void> {
  if (weeks.length === 0) return;
  const names = weeks.map(partitionName);
  const present = await client.query<{ name: string }>(
    "SELECT relname AS name FROM pg_class WHERE relname = ANY($1::text[]) AND relkind = 'r'",
    [names],
  );
  const have = new Set(present.rows.map((r) => r.name));
  const todo = weeks.filter((_, i) => !have.has(names[i]));
  if (todo.length === 0) return;
  await client.query("SELECT pg_advisory_xact_lock($1)", [PARTITION_LOCK]);
  for (const w of todo) {
    const name = partitionName(w);
    const from = new Date(w).toISOString();
    const to = new Date(w + WEEK_MS).toISOString();
    // Identifiers cannot be parameters; `name` is built from digits only, the bounds are ISO dates.
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF events FOR VALUES FROM ('${from}') TO ('${to}')`,
    );
  }
}
