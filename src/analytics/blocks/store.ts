import type { Queryable } from "../../storage/db.js";
import { blockBytes, decodeBlock, type Block } from "./format.js";

// Reading blocks: which hours of a window have a block that agrees with the rollups, and the
// decoded blocks themselves, kept in a bounded LRU cache (validated against the table on every
// query, so every node may cache independently).

export interface HourState {
  hour: number;
  /** Events in the hour according to the rollups. */
  events: number;
  /** The block, when it agrees with the rollups and carries every key needed. */
  usable: boolean;
  builtAt: number;
}

export class BlockStore {
  private cache = new Map<string, { builtAt: number; block: Block; bytes: number }>();
  private bytes = 0;

  constructor(private readonly budgetBytes: number) {}

  /** Hours in [from, to) that hold events, and whether their block can be used. */
  async hours(db: Queryable, projectId: string, from: number, to: number, keys: string[]): Promise<HourState[]> {
    const r = await db.query<{ h: string; n: number; ok: boolean | null; built: string | null }>(
      `SELECT (extract(epoch FROM r.bucket) * 1000)::bigint::text AS h, r.n,
              (b.rows = r.n AND b.keys @> $4::text[]) AS ok, (extract(epoch FROM b.built_at) * 1000000)::bigint::text AS built
       FROM (SELECT bucket, sum(count)::int AS n FROM analytics_rollups
             WHERE project_id = $1 AND grain = 1 AND bucket >= $2 AND bucket < $3 GROUP BY bucket) r
       LEFT JOIN analytics_blocks b ON b.project_id = $1 AND b.hour = r.bucket
       ORDER BY r.bucket`,
      [projectId, new Date(from), new Date(to), keys],
    );
    return r.rows.map((x) => ({ hour: Number(x.h), events: x.n, usable: x.ok === true, builtAt: x.built === null ? 0 : Number(x.built) }));
  }

  /** The decoded blocks of the given hours (all known usable), from the cache or the table. */
  async load(db: Queryable, projectId: string, hours: HourState[]): Promise<Map<number, Block>> {
    const out = new Map<number, Block>();
    const missing: number[] = [];
    for (const h of hours) {
      const k = `${projectId}|${h.hour}`;
      const hit = this.cache.get(k);
      if (hit && hit.builtAt === h.builtAt) {
        this.cache.delete(k); // LRU: most recently used last
        this.cache.set(k, hit);
        out.set(h.hour, hit.block);
      } else missing.push(h.hour);
    }
    if (missing.length) {
      const r = await db.query<{ h: string; built: string; body: Buffer }>(
        `SELECT (extract(epoch FROM hour) * 1000)::bigint::text AS h, (extract(epoch FROM built_at) * 1000000)::bigint::text AS built, body
         FROM analytics_blocks WHERE project_id = $1 AND hour = ANY($2::timestamptz[])`,
        [projectId, missing.map((h) => new Date(h))],
      );
      const want = new Map(hours.map((h) => [h.hour, h.builtAt]));
      for (const x of r.rows) {
        const hour = Number(x.h);
        // Rebuilt between the two reads: use the older rollup agreement no longer; read the hour raw.
        if (Number(x.built) !== want.get(hour)) continue;
        const block = decodeBlock(x.body);
        out.set(hour, block);
        this.remember(`${projectId}|${hour}`, Number(x.built), block);
      }
    }
    return out;
  }

  private remember(k: string, builtAt: number, block: Block): void {
    const bytes = blockBytes(block);
    if (bytes > this.budgetBytes) return;
    const old = this.cache.get(k);
    if (old) {
      this.bytes -= old.bytes;
      this.cache.delete(k);
    }
    this.cache.set(k, { builtAt, block, bytes });
    this.bytes += bytes;
    for (const [key, v] of this.cache) {
      if (this.bytes <= this.budgetBytes) break;
      this.cache.delete(key);
      this.bytes -= v.bytes;
    }
  }
}
