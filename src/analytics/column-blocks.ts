import type { Periodic } from "../shared/periodic.js";
import type { Operation } from "./aggregations.js";
import type { Queryable } from "../storage/db.js";
import type { Ctx } from "./compile.js";
import type { Field } from "./fields.js";
import type { Node } from "./filters.js";
import type { SlotMap } from "./sql.js";
import type { Interval, Window } from "./time.js";

// The contract between the analytics queries (queries.ts) and the column blocks (blocks/): the
// blocks answer whole hours of a window in this process and implement this interface; the queries
// call it and run their plain SQL when it answers null (the block path does not apply: a field
// blocks do not carry, too little of the window in blocks). The analytics feature is handed the
// blocks where the features are wired (server/features.ts), so this folder never imports blocks/.

export interface BlockAggregation {
  operation: Operation;
  field: Field | null;
}

/** Block queries bound to one request's connection and slots. */
export interface BlockQueries {
  count(projectId: string, w: Window, filter: Node | null): Promise<number | null>;
  bucketCounts(
    projectId: string,
    w: Window,
    filter: Node | null,
    interval: Interval,
  ): Promise<Map<number, number> | null>;
  aggregate(
    projectId: string,
    w: Window,
    filter: Node | null,
    aggs: BlockAggregation[],
  ): Promise<(number | null)[] | null>;
  groupCounts(
    projectId: string,
    w: Window,
    filter: Node | null,
    fields: Field[],
    keySql: (ctx: Ctx, f: Field) => string,
  ): Promise<Map<string, number> | null>;
  /** The top `limit` groups of counted keys (JSON texts of `width` values), ordered as the SQL path orders them. */
  orderGroups(
    counts: Map<string, number>,
    width: number,
    limit: number,
    dropNull: boolean,
  ): Promise<{ keys: unknown[]; count: number }[]>;
}

/** The column blocks of the process: a cache of decoded blocks and the builder's background pass. */
export interface ColumnBlocks {
  /** `record` is told whether each query took the block path. */
  queries(db: Queryable, slots: SlotMap, record: (used: boolean) => void): BlockQueries;
  /** Starts the builder's periodic pass (ANALYTICS_BLOCK_INTERVAL_MS; none when 0). */
  startBuilder(): Periodic | undefined;
}
