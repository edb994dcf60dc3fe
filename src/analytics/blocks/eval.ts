import type { Field } from "../fields.js";
import { topLevelDataKey } from "../fields.js";
import type { Condition, Node, Scalar } from "../filters.js";
import { assertNever } from "../../shared/never.js";
import type { Block, Column } from "./format.js";

// Filters over a column block (pure), with exactly the semantics of compile.ts: a condition is
// evaluated once per dictionary entry and then mapped over the rows, so a block is filtered at a
// few nanoseconds per row. Anything a block cannot decide exactly (string time comparisons, fields
// it does not carry, values held by rows of the other JSON type) is `null`: the caller then reads
// that hour with SQL instead.
//
// SQL's NULL needs no third value here: negations are complements of a condition that is never
// NULL (`NOT COALESCE(c, FALSE)`), and AND/OR are monotone, so treating NULL as false gives the
// same rows.

export type Mask = Uint8Array;

/** The block column of a field, or null when blocks never carry it. */
export function blockColumnName(f: Field): string | null {
  if (f.kind === "column") return f.column === "type" || f.column === "user_id" ? f.column : null;
  const key = topLevelDataKey(f);
  return key === null ? null : `data.${key}`;
}

const fill = (n: number, v: 0 | 1): Mask => new Uint8Array(n).fill(v);

/** Rows whose column value satisfies `test` (evaluated per dictionary entry / per number). */
function columnMask(c: Column, rows: number, test: { s?: (v: string) => boolean; n?: (v: number) => boolean }): Mask {
  const out = new Uint8Array(rows);
  if (c.kind === "s") {
    if (!test.s) return out;
    const hit = new Uint8Array(c.dict.length + 1);
    for (let i = 0; i < c.dict.length; i++) hit[i + 1] = test.s(c.dict[i]) ? 1 : 0;
    const codes = c.codes;
    for (let i = 0; i < rows; i++) out[i] = hit[codes[i]];
  } else {
    if (!test.n) return out;
    const vs = c.values;
    const t = test.n;
    for (let i = 0; i < rows; i++) {
      const v = vs[i];
      out[i] = v === v && t(v) ? 1 : 0; // NaN is NULL
    }
  }
  return out;
}

const isColumn = (f: Field) => f.kind === "column";

function condition(b: Block, c: Condition): Mask | null {
  const name = blockColumnName(c.field);
  const col = name ? b.columns.get(name) : undefined;
  if (!col) return null;
  const rows = b.rows;
  const kindOf = (v: Scalar): "s" | "n" | "b" => (typeof v === "string" ? "s" : typeof v === "number" ? "n" : "b");
  // Values of another JSON type than the column's can only match the rows the block does not hold.
  const foreign = (vs: Scalar[]): boolean => vs.some((v) => kindOf(v) !== col.kind);
  const undecidable = (vs: Scalar[]) => !isColumn(c.field) && foreign(vs) && col.other > 0;
  const not = (m: Mask | null): Mask | null => {
    if (!m) return null;
    for (let i = 0; i < m.length; i++) m[i] ^= 1;
    return m;
  };
  const equalsIn = (vs: Scalar[]): Mask | null => {
    if (undecidable(vs)) return null;
    const strings = new Set(vs.filter((v): v is string => typeof v === "string"));
    const numbers = new Set(vs.filter((v): v is number => typeof v === "number"));
    return columnMask(col, rows, { s: (v) => strings.has(v), n: (v) => numbers.has(v) });
  };
  // Every operator (filters.ts lists them); a missing one is a compile error (assertNever).
  switch (c.op) {
    case "equals":
      return equalsIn([c.value]);
    case "not_equals":
      return not(equalsIn([c.value]));
    case "in":
      return equalsIn(c.value);
    case "not_in":
      return not(equalsIn(c.value));
    case "contains":
    case "not_contains":
    case "starts_with":
    case "not_starts_with":
    case "ends_with":
    case "not_ends_with": {
      // Text of a JSON string only: numbers never match; strings held by `other` rows might. A
      // negation is the complement of its positive (docs/analytics.md).
      const negated = c.op === "not_contains" || c.op === "not_starts_with" || c.op === "not_ends_with";
      if (col.kind === "n") return col.other > 0 ? null : fill(rows, negated ? 1 : 0);
      const v = c.value;
      const test =
        c.op === "starts_with" || c.op === "not_starts_with"
          ? (s: string) => s.startsWith(v)
          : c.op === "ends_with" || c.op === "not_ends_with"
            ? (s: string) => s.endsWith(v)
            : (s: string) => s.includes(v);
      const m = columnMask(col, rows, { s: test });
      return negated ? not(m) : m;
    }
    case "exists":
    case "not_exists": {
      if (col.other > 0) return null;
      const m = columnMask(col, rows, { s: () => true, n: () => true });
      return c.op === "exists" ? m : not(m);
    }
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      // Numbers compare numbers; a string value compares times (not in blocks).
      const v = c.value;
      if (typeof v !== "number") return null;
      if (isColumn(c.field)) return fill(rows, 0);
      if (col.kind === "s") return col.other > 0 ? null : fill(rows, 0);
      const cmp =
        c.op === "gt"
          ? (x: number) => x > v
          : c.op === "gte"
            ? (x: number) => x >= v
            : c.op === "lt"
              ? (x: number) => x < v
              : (x: number) => x <= v;
      return columnMask(col, rows, { n: cmp });
    }
    default:
      return assertNever(c, "operator");
  }
}

/** Rows of the block that pass the filter (all rows without one); null when not decidable. */
export function filterMask(b: Block, n: Node | null): Mask | null {
  if (!n) return fill(b.rows, 1);
  if (n.kind === "cond") return condition(b, n);
  if (n.children.length === 0) return fill(b.rows, 1);
  let acc: Mask | null = null;
  for (const child of n.children) {
    const m = filterMask(b, child);
    if (!m) return null;
    if (!acc) acc = m;
    else if (n.kind === "and") for (let i = 0; i < acc.length; i++) acc[i] &= m[i];
    else for (let i = 0; i < acc.length; i++) acc[i] |= m[i];
  }
  return acc;
}
