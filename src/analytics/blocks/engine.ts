import { assertNever } from "../../shared/never.js";
import type { Queryable } from "../../storage/db.js";
import { isNumeric } from "../aggregations.js";
import { jsonValueSql, numberSql, type Ctx } from "../compile.js";
import { topLevelDataKey, type Field } from "../fields.js";
import type { Node } from "../filters.js";
import type { BlockAggregation, BlockQueries } from "../column-blocks.js";
import { Params } from "../sql.js";
import { truncate, type Interval, type Window } from "../time.js";
import { blockColumnName, type Mask } from "./eval.js";
import type { Block, Column } from "./format.js";
import { percentileCont } from "./percentile.js";
import { rawSource, split, type BlockEnv } from "./split.js";

// The block path of the analytics queries: whole hours of the window are answered from column
// blocks in this process, the rest (the window's partial edge hours, hours without a usable
// block) with SQL over events, and the two merged. Every function returns null when the block
// path does not apply (a field blocks do not carry, too little of the window in blocks); the
// caller then runs its plain SQL.

export type { BlockEnv } from "./split.js";

/** The engine bound to one request's connection, slots and block cache (column-blocks.ts's contract). */
export function blockQueries(env: BlockEnv): BlockQueries {
  return {
    count: (projectId, w, filter) => blockCount(env, projectId, w, filter),
    bucketCounts: (projectId, w, filter, interval) => blockBucketCounts(env, projectId, w, filter, interval),
    aggregate: (projectId, w, filter, aggs) => blockAggregate(env, projectId, w, filter, aggs),
    groupCounts: (projectId, w, filter, fields, keySql) => blockGroupCounts(env, projectId, w, filter, fields, keySql),
    orderGroups: (counts, width, limit, dropNull) => orderGroups(env.db, counts, width, limit, dropNull),
  };
}
export { percentileCont } from "./percentile.js";

const colOf = (b: Block, f: Field): Column => b.columns.get(blockColumnName(f)!)!;
/** Rows a mask selects. */
const selected = (mask: Mask): number => {
  let n = 0;
  for (let i = 0; i < mask.length; i++) n += mask[i];
  return n;
};
/** Whether row i of the column holds a value (code 0 and NaN are NULL). */
const present = (c: Column, i: number): boolean => (c.kind === "s" ? c.codes[i] !== 0 : c.values[i] === c.values[i]);
const plainOk = (fields: Field[]) => (b: Block) => fields.every((f) => colOf(b, f).other === 0);

async function blockCount(env: BlockEnv, projectId: string, w: Window, filter: Node | null): Promise<number | null> {
  const part = await split(env, projectId, w, filter, [], () => true);
  if (!part) return null;
  let n = 0;
  for (const { mask } of part.blocks) n += selected(mask);
  const src = rawSource(projectId, w, filter, env.slots, part.raw, () => "1 AS one");
  if (src)
    n += Number(
      (await env.db.query<{ c: string }>(`SELECT count(*)::text AS c FROM (${src.sql}) x`, src.params.values)).rows[0]
        .c,
    );
  return n;
}

/** Counts per interval bucket (not for `minute`: a block is one hour). */
async function blockBucketCounts(
  env: BlockEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  interval: Interval,
): Promise<Map<number, number> | null> {
  if (interval === "minute") return null;
  const part = await split(env, projectId, w, filter, [], () => true);
  if (!part) return null;
  const counts = new Map<number, number>();
  for (const { hour, mask } of part.blocks) {
    const b = truncate(hour, interval);
    counts.set(b, (counts.get(b) ?? 0) + selected(mask));
  }
  const src = rawSource(projectId, w, filter, env.slots, part.raw, () => "e.ts");
  if (src) {
    const unit = src.params.add(interval);
    const r = await env.db.query<{ b: Date; c: string }>(
      `SELECT date_trunc(${unit}::text, ts, 'UTC') AS b, count(*)::text AS c FROM (${src.sql}) x GROUP BY 1`,
      src.params.values,
    );
    for (const x of r.rows) counts.set(x.b.getTime(), (counts.get(x.b.getTime()) ?? 0) + Number(x.c));
  }
  return counts;
}

/** Canonical key of a JSON value (strings and numbers as JSON text; null stays null). */
const keyOf = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

/** A column's values as ids per row (0 = NULL) and the JSON-text key of each id. */
function idColumn(c: Column): { ids: ArrayLike<number>; keys: (string | null)[] } {
  if (c.kind === "s") return { ids: c.codes, keys: [null, ...c.dict.map((s) => JSON.stringify(s))] };
  const index = new Map<number, number>();
  const keys: (string | null)[] = [null];
  const ids = new Uint32Array(c.values.length);
  c.values.forEach((v, i) => {
    if (v !== v) return;
    let id = index.get(v);
    if (id === undefined) {
      id = keys.push(JSON.stringify(v)) - 1;
      index.set(v, id);
    }
    ids[i] = id;
  });
  return { ids, keys };
}

/** Aggregations over blocks + SQL edges; null when any of them cannot use blocks. */
async function blockAggregate(
  env: BlockEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  aggs: BlockAggregation[],
): Promise<(number | null)[] | null> {
  const fields = aggs.map((a) => a.field).filter((f): f is Field => f !== null);
  // Numeric operations read numbers only, so rows of another type never matter to them; counts and
  // distinct values need every value of the field.
  const exact = aggs
    .filter((a) => a.field && !(isNumeric(a.operation) && colKind(env, a.field) === "n"))
    .map((a) => a.field!);
  for (const a of aggs) if (isNumeric(a.operation) && (!a.field || colKind(env, a.field) !== "n")) return null;
  const part = await split(
    env,
    projectId,
    w,
    filter,
    fields,
    plainOk(exact),
    aggs.some((a) => !a.field) ? ["user_id"] : [],
  );
  if (!part) return null;
  // The raw rows: one column per aggregation (its value), filtered by SQL.
  const src = rawSource(projectId, w, filter, env.slots, part.raw, (ctx) =>
    [
      "1 AS one",
      ...aggs.map((a, i) => {
        if (!a.field) return `e.user_id AS v${i}`;
        if (isNumeric(a.operation)) return `${numberSql(ctx, a.field)} AS v${i}`;
        return `${a.field.kind === "column" ? `e.${a.field.column}` : jsonValueSql(ctx, a.field)} AS v${i}`;
      }),
    ].join(", "),
  );
  const raw = src
    ? ((await env.db.query({ text: src.sql, values: src.params.values, rowMode: "array" })).rows as unknown[][])
    : [];
  // The numbers of a numeric field (raw rows, then the blocks' selected rows), gathered once per
  // field however many operations read them.
  const numbers = new Map<string, Float64Array>();
  const numbersOf = (f: Field, ai: number): Float64Array => {
    const key = blockColumnName(f)!;
    let values = numbers.get(key);
    if (values) return values;
    let size = 0;
    for (const r of raw) if (r[ai + 1] !== null) size++;
    for (const { block, mask } of part.blocks) {
      const vs = (colOf(block, f) as Extract<Column, { kind: "n" }>).values;
      for (let i = 0; i < mask.length; i++) if (mask[i] && vs[i] === vs[i]) size++;
    }
    values = new Float64Array(size);
    let at = 0;
    for (const r of raw) if (r[ai + 1] !== null) values[at++] = Number(r[ai + 1]);
    for (const { block, mask } of part.blocks) {
      const vs = (colOf(block, f) as Extract<Column, { kind: "n" }>).values;
      for (let i = 0; i < mask.length; i++) if (mask[i] && vs[i] === vs[i]) values[at++] = vs[i];
    }
    numbers.set(key, values);
    return values;
  };
  // Every operation (aggregations.ts lists them); a missing one is a compile error (assertNever).
  return aggs.map((a, ai) => {
    const f = a.field;
    const op = a.operation;
    const rawVals = () => raw.map((r) => r[ai + 1]);
    const countUnique = (): number => {
      // Distinct keys: a string as itself, any other JSON value as NUL + its JSON text (PostgreSQL
      // text and jsonb strings never contain NUL, so the two cannot collide).
      const seen = new Set<string>();
      const distinctKey = (v: unknown) => (typeof v === "string" ? v : "\u0000" + JSON.stringify(v));
      for (const v of rawVals()) if (v !== null) seen.add(distinctKey(v));
      for (const { block, mask } of part.blocks) {
        const c = f ? colOf(block, f) : block.columns.get("user_id")!;
        if (c.kind === "s") {
          const hit = new Uint8Array(c.dict.length + 1);
          const codes = c.codes;
          for (let i = 0; i < mask.length; i++) if (mask[i]) hit[codes[i]] = 1;
          for (let d = 1; d < hit.length; d++) if (hit[d]) seen.add(c.dict[d - 1]);
        } else
          for (let i = 0; i < mask.length; i++)
            if (mask[i] && c.values[i] === c.values[i]) seen.add(distinctKey(c.values[i]));
      }
      return seen.size;
    };
    switch (op.kind) {
      case "count": {
        if (!f) {
          let n = raw.length;
          for (const { mask } of part.blocks) n += selected(mask);
          return n;
        }
        let n = rawVals().filter((v) => v !== null).length;
        for (const { block, mask } of part.blocks) {
          const c = colOf(block, f);
          for (let i = 0; i < mask.length; i++) if (mask[i] && present(c, i)) n++;
        }
        return n;
      }
      case "count_unique":
        return countUnique();
      case "sum":
        return numbersOf(f!, ai).reduce((s, v) => s + v, 0);
      case "avg":
      case "min":
      case "max":
      case "stddev":
      case "percentile": {
        const values = numbersOf(f!, ai);
        if (op.kind === "stddev") return sampleStddev(values);
        if (values.length === 0) return null;
        // Selection reorders its input: a copy keeps the shared numbers in gathering order.
        if (op.kind === "percentile") return percentileCont(values.slice(), op.fraction);
        if (op.kind === "avg") return values.reduce((s, v) => s + v, 0) / values.length;
        if (op.kind === "min") return values.reduce((m, v) => (v < m ? v : m), Infinity);
        return values.reduce((m, v) => (v > m ? v : m), -Infinity);
      }
      default:
        return assertNever(op, "aggregation");
    }
  });
}

/** The sample standard deviation (as PostgreSQL's stddev_samp: two passes; null below two values). */
function sampleStddev(values: Float64Array): number | null {
  const n = values.length;
  if (n < 2) return null;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += values[i];
  const mean = sum / n;
  let sq = 0;
  for (let i = 0; i < n; i++) sq += (values[i] - mean) ** 2;
  return Math.sqrt(sq / (n - 1));
}

function colKind(env: BlockEnv, f: Field): "s" | "n" | null {
  if (f.kind === "column") return "s";
  const key = topLevelDataKey(f);
  if (key === null) return null;
  return env.slots.n.has(key) ? "n" : env.slots.s.has(key) ? "s" : null;
}

/**
 * Counts per combination of the fields' values, as canonical JSON-text keys joined by \u0000
 * (`\u0001` for NULL); null when blocks do not apply.
 */
async function blockGroupCounts(
  env: BlockEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  fields: Field[],
  keySql: (ctx: Ctx, f: Field) => string,
): Promise<Map<string, number> | null> {
  const part = await split(env, projectId, w, filter, fields, plainOk(fields));
  if (!part) return null;
  const NULL = "\u0001";
  const counts = new Map<string, number>();
  const add = (k: string, n: number) => counts.set(k, (counts.get(k) ?? 0) + n);
  for (const { block, mask } of part.blocks) {
    // Each field's values as small ids per row (0 = NULL); combinations counted by a composite id.
    const cols = fields.map((f) => idColumn(colOf(block, f)));
    const strides: number[] = [];
    let size = 1;
    for (const c of cols) {
      strides.push(size);
      size *= c.keys.length;
    }
    const dense = size <= 1 << 22;
    const per = dense ? new Float64Array(size) : null;
    const sparse = dense ? null : new Map<number, number>();
    for (let i = 0; i < mask.length; i++) {
      if (!mask[i]) continue;
      let id = 0;
      for (let j = 0; j < cols.length; j++) id += cols[j].ids[i] * strides[j];
      if (per) per[id]++;
      else sparse!.set(id, (sparse!.get(id) ?? 0) + 1);
    }
    const emit = (id: number, n: number) =>
      add(cols.map((c, j) => c.keys[Math.floor(id / strides[j]) % c.keys.length] ?? NULL).join("\u0000"), n);
    if (per)
      for (let id = 0; id < size; id++) {
        if (per[id]) emit(id, per[id]);
      }
    else for (const [id, n] of sparse!) emit(id, n);
  }
  const src = rawSource(projectId, w, filter, env.slots, part.raw, (ctx) =>
    fields.map((f, i) => `${keySql(ctx, f)} AS g${i}`).join(", "),
  );
  if (src) {
    const by = fields.map((_, i) => `g${i}`).join(", ");
    const r = await env.db.query({
      text: `SELECT ${by}, count(*)::float8 AS c FROM (${src.sql}) x GROUP BY ${by}`,
      values: src.params.values,
      rowMode: "array",
    });
    for (const row of r.rows as unknown[][])
      add(fields.map((_, i) => keyOf(row[i]) ?? NULL).join("\u0000"), Number(row[fields.length]));
  }
  return counts;
}

/** The top groups in the JSON path's order (count desc, then keys as jsonb ascending, NULLs last). */
async function orderGroups(
  db: Queryable,
  counts: Map<string, number>,
  width: number,
  limit: number,
  dropNull: boolean,
): Promise<{ keys: unknown[]; count: number }[]> {
  const cols: (string | null)[][] = Array.from({ length: width }, () => []);
  const cs: number[] = [];
  for (const [k, c] of counts) {
    const parts = k.split("\u0000").map((x) => (x === "\u0001" ? null : x));
    if (dropNull && parts.some((x) => x === null)) continue;
    parts.forEach((x, i) => cols[i].push(x));
    cs.push(c);
  }
  const params = new Params();
  const arrays = cols.map((c) => `${params.add(c)}::jsonb[]`);
  const names = cols.map((_, i) => `g${i}`);
  const r = await db.query({
    text: `SELECT ${names.join(", ")}, c FROM unnest(${arrays.join(", ")}, ${params.add(cs)}::float8[]) AS x(${names.join(", ")}, c)
           ORDER BY c DESC, ${names.map((n) => `${n} ASC NULLS LAST`).join(", ")} LIMIT ${params.add(limit)}`,
    values: params.values,
    rowMode: "array",
  });
  return (r.rows as unknown[][]).map((row) => ({ keys: row.slice(0, width), count: Number(row[width]) }));
}
