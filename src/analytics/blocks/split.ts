import type { Queryable } from "../../storage/db.js";
import type { Ctx } from "../compile.js";
import { topLevelDataKey, type Field } from "../fields.js";
import { filterFields, type Node } from "../filters.js";
import { rawScan } from "../plan.js";
import { Params, type SlotMap } from "../sql.js";
import { decompose, type Window } from "../time.js";
import { blockColumnName, filterMask, type Mask } from "./eval.js";
import type { Block } from "./format.js";
import type { BlockStore } from "./store.js";
import { HOUR_MS } from "../../shared/time.js";

// Splitting a window for the block path: its whole hours that have a usable block (with the
// filter's row mask), and the ranges read with SQL (partial edge hours, hours without a usable
// block). Null when the block path does not apply.

export interface BlockEnv {
  db: Queryable;
  store: BlockStore;
  slots: SlotMap;
  /** Told whether each query took the block path. */
  record?: (used: boolean) => void;
}

/** The block path is taken only when the SQL part reads at most this many events. */
const MAX_RAW_EVENTS = 100_000;
const MAX_RAW_RANGES = 16;

export interface Part {
  blocks: { hour: number; block: Block; mask: Mask }[];
  /** Half-open ms ranges read with SQL. */
  raw: { from: number; to: number }[];
}

/**
 * Splits the window into blocks (with their filter masks) and SQL ranges. `usable(block)` lets
 * an operation refuse a block (a value it needs is held by rows of the other JSON type).
 */
export async function split(
  env: BlockEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  fields: Field[],
  usable: (b: Block) => boolean,
  extra: string[] = [],
): Promise<Part | null> {
  const part = await splitWindow(env, projectId, w, filter, fields, usable, extra);
  env.record?.(part !== null);
  return part;
}

async function splitWindow(
  env: BlockEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  fields: Field[],
  usable: (b: Block) => boolean,
  extra: string[],
): Promise<Part | null> {
  const all = [...filterFields(filter), ...fields];
  const keys = new Set<string>();
  const names = new Set<string>(extra);
  for (const f of all) {
    const c = blockColumnName(f);
    if (c === null) return null;
    names.add(c);
    const key = topLevelDataKey(f);
    if (key !== null) {
      if (!env.slots.n.has(key) && !env.slots.s.has(key)) return null;
      keys.add(key);
    }
  }
  const pieces = decompose(w, "hour");
  const hourPieces = pieces.filter((p) => p.grain === "hour");
  const raw: { from: number; to: number }[] = pieces
    .filter((p) => p.grain !== "hour")
    .map((p) => ({ from: p.from, to: p.to }));
  if (hourPieces.length === 0) return null;
  const from = hourPieces[0].from;
  const to = hourPieces[hourPieces.length - 1].to;
  const states = await env.store.hours(env.db, projectId, from, to, [...keys]);
  let rawEvents = 0;
  const candidates = states.filter((s) => s.usable);
  for (const s of states) if (!s.usable) rawEvents += s.events;
  if (rawEvents > MAX_RAW_EVENTS) return null;
  // A count without filter needs no column, only the block's row count: `type` stands in.
  if (names.size === 0) names.add("type");
  const loaded = await env.store.load(env.db, projectId, candidates, [...names]);
  const blocks: Part["blocks"] = [];
  for (const s of states) {
    const block = s.usable ? loaded.get(s.hour) : undefined;
    const mask = block && usable(block) ? filterMask(block, filter) : null;
    if (block && mask) blocks.push({ hour: s.hour, block, mask });
    else {
      if (s.usable) rawEvents += s.events;
      raw.push({ from: s.hour, to: s.hour + HOUR_MS });
    }
  }
  if (rawEvents > MAX_RAW_EVENTS) return null;
  raw.sort((a, b) => a.from - b.from);
  const merged: { from: number; to: number }[] = [];
  for (const r of raw) {
    const last = merged[merged.length - 1];
    if (last && last.to === r.from) last.to = r.to;
    else merged.push({ ...r });
  }
  if (merged.length > MAX_RAW_RANGES) return null;
  return { blocks, raw: merged };
}

/** SQL rows of the raw ranges: `SELECT <select> FROM events e WHERE <window, filter, range>` per range. */
export function rawSource(
  projectId: string,
  w: Window,
  filter: Node | null,
  slots: SlotMap,
  ranges: { from: number; to: number }[],
  select: (ctx: Ctx) => string,
): { sql: string; params: Params } | null {
  if (ranges.length === 0) return null;
  const params = new Params();
  const s = rawScan(projectId, w, filter, slots, params);
  const cols = select(s.ctx);
  const parts = ranges.map(
    (r) =>
      `SELECT ${cols} FROM events e WHERE ${s.where} AND e.ts >= ${params.add(new Date(r.from))} AND e.ts < ${params.add(new Date(r.to))}`,
  );
  return { sql: parts.join(" UNION ALL "), params };
}
