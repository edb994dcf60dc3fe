import type { Queryable } from "../../storage/db.js";
import { blockBytes, decodeBlock, type Block } from "./format.js";

// Reading blocks: which hours of a window have a block that agrees with the rollups, and the
// decoded columns a query needs, kept in a bounded LRU cache per column (validated against the
// table on every query, so every node may cache independently).

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
    return r.rows.map((x) => ({
      hour: Number(x.h),
      events: x.n,
      usable: x.ok === true,
      builtAt: x.built === null ? 0 : Number(x.built),
    }));
  }

  /**
   * The given columns of the given hours' blocks (all known usable), from the cache or the table.
   * An hour is missing from the result when its block was rebuilt in between (read it with SQL).
   */
  async load(db: Queryable, projectId: string, hours: HourState[], names: string[]): Promise<Map<number, Block>> {
    const out = new Map<number, Block>();
    const missing = new Set<number>();
    for (const h of hours) {
      const block: Block = { rows: -1, columns: new Map() };
      for (const name of names) {
        const k = `${projectId}|${h.hour}|${name}`;
        const hit = this.cache.get(k);
        if (hit && hit.builtAt === h.builtAt) {
          this.cache.delete(k); // LRU: most recently used last
          this.cache.set(k, hit);
          block.rows = hit.block.rows;
          block.columns.set(name, hit.block.columns.get(name)!);
        } else missing.add(h.hour);
      }
      out.set(h.hour, block);
    }
    if (missing.size) {
      const r = await db.query<{ h: string; built: string; name: string; body: Buffer }>(
        `SELECT (extract(epoch FROM c.hour) * 1000)::bigint::text AS h, (extract(epoch FROM b.built_at) * 1000000)::bigint::text AS built, c.name, c.body
         FROM analytics_block_columns c JOIN analytics_blocks b ON b.project_id = c.project_id AND b.hour = c.hour
         WHERE c.project_id = $1 AND c.hour = ANY($2::timestamptz[]) AND c.name = ANY($3::text[])`,
        [projectId, [...missing].map((h) => new Date(h)), names],
      );
      const want = new Map(hours.map((h) => [h.hour, h.builtAt]));
      for (const x of r.rows) {
        const hour = Number(x.h);
        const block = out.get(hour)!;
        // Rebuilt since the rollups were compared: this hour is read with SQL.
        if (Number(x.built) !== want.get(hour)) continue;
        const decoded = decodeBlock(x.body);
        block.rows = decoded.rows;
        block.columns.set(x.name, decoded.columns.get(x.name)!);
        this.remember(`${projectId}|${hour}|${x.name}`, Number(x.built), decoded);
      }
    }
    for (const [hour, block] of out) if (block.rows < 0 || names.some((n) => !block.columns.has(n))) out.delete(hour);
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
