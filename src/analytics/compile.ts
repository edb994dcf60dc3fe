import type { Field } from "./fields.js";
import { topLevelDataKey } from "./fields.js";
import type { Condition, Node, Scalar } from "./filters.js";
import { assertNever } from "../shared/never.js";
import { slotColumn, type Params, type SlotMap } from "./sql.js";

// Filter AST -> parameterized SQL boolean expression (pure). Columns come from a fixed whitelist,
// JSON paths are bound text[] parameters, values are bound parameters. With `slots`, a condition on
// a top-level data key that has a typed slot of the value's type reads the slot instead of the JSON;
// the slot holds exactly the JSON value of that type (NULL otherwise), so the answer is identical.
// Negations are complements (`NOT COALESCE(x, false)`): a missing field matches not_equals/not_in.

export interface Ctx {
  params: Params;
  /** Table alias of the events relation. */
  alias: string;
  slots: SlotMap;
}

/** The column SQL of an alias field. */
export function columnSql(ctx: Ctx, f: Extract<Field, { kind: "column" }>): string {
  return `${ctx.alias}.${f.column}`;
}

/** jsonb value at a JSON path, JSON null mapped to SQL NULL. */
function jsonSql(ctx: Ctx, f: Extract<Field, { kind: "json" }>): string {
  return `NULLIF(${ctx.alias}.${f.column} #> ${ctx.params.add(f.path)}::text[], 'null'::jsonb)`;
}

export function slotFor(ctx: Ctx, f: Field, kind: "n" | "s"): string | null {
  const key = topLevelDataKey(f);
  if (key === null) return null;
  const c = ctx.slots[kind].get(key);
  return c ? `${ctx.alias}.${slotColumn(c)}` : null;
}

/** Text of a string-valued field (NULL when the value is not a JSON string). */
function textSql(ctx: Ctx, f: Field): string {
  if (f.kind === "column") return columnSql(ctx, f);
  const slot = slotFor(ctx, f, "s");
  if (slot) return slot;
  const j = jsonSql(ctx, f);
  return `(CASE WHEN jsonb_typeof(${j}) = 'string' THEN ${j} #>> '{}' END)`;
}

/** float8 of a number-valued field (NULL when the value is not a JSON number). */
export function numberSql(ctx: Ctx, f: Field): string | null {
  if (f.kind === "column") return null;
  const slot = slotFor(ctx, f, "n");
  if (slot) return slot;
  const j = jsonSql(ctx, f);
  return `(CASE WHEN jsonb_typeof(${j}) = 'number' THEN (${j})::float8 END)`;
}

/** The field's value as jsonb (for grouping/distinct); slots are read first when present. */
export function jsonValueSql(ctx: Ctx, f: Field): string {
  if (f.kind === "column")
    return f.valueType === "time" ? `to_jsonb(${columnSql(ctx, f)})` : `to_jsonb(${columnSql(ctx, f)})`;
  const j = jsonSql(ctx, f);
  const n = slotFor(ctx, f, "n");
  const s = slotFor(ctx, f, "s");
  if (n) return `COALESCE(to_jsonb(${n}), ${j})`;
  if (s) return `COALESCE(to_jsonb(${s}), ${j})`;
  return j;
}

const CMP = { gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

function equalsSql(ctx: Ctx, f: Field, v: Scalar): string {
  const p = ctx.params;
  if (f.kind === "column") {
    if (f.valueType === "time") return `${columnSql(ctx, f)} = ${p.add(v)}::timestamptz`;
    return typeof v === "string" ? `${columnSql(ctx, f)} = ${p.add(v)}::text` : "FALSE";
  }
  if (typeof v === "number") {
    const slot = slotFor(ctx, f, "n");
    if (slot) return `${slot} = ${p.add(v)}::float8`;
  }
  if (typeof v === "string") {
    const slot = slotFor(ctx, f, "s");
    if (slot) return `${slot} = ${p.add(v)}::text`;
  }
  return `${jsonSql(ctx, f)} = ${p.add(JSON.stringify(v))}::jsonb`;
}

function inSql(ctx: Ctx, f: Field, vs: Scalar[]): string {
  const p = ctx.params;
  if (f.kind === "column") {
    if (f.valueType === "time") return `${columnSql(ctx, f)} = ANY(${p.add(vs)}::timestamptz[])`;
    const strings = vs.filter((v): v is string => typeof v === "string");
    return strings.length ? `${columnSql(ctx, f)} = ANY(${p.add(strings)}::text[])` : "FALSE";
  }
  if (vs.every((v) => typeof v === "number")) {
    const slot = slotFor(ctx, f, "n");
    if (slot) return `${slot} = ANY(${p.add(vs)}::float8[])`;
  }
  if (vs.every((v) => typeof v === "string")) {
    const slot = slotFor(ctx, f, "s");
    if (slot) return `${slot} = ANY(${p.add(vs)}::text[])`;
  }
  return `${jsonSql(ctx, f)} = ANY(${p.add(vs.map((v) => JSON.stringify(v)))}::jsonb[])`;
}

function compareSql(ctx: Ctx, f: Field, op: keyof typeof CMP, v: Scalar): string {
  const p = ctx.params;
  const o = CMP[op];
  if (typeof v === "number") {
    const n = numberSql(ctx, f);
    return n ? `${n} ${o} ${p.add(v)}::float8` : "FALSE";
  }
  // An ISO timestamp (validated by the parser): compare as times.
  if (f.kind === "column" && f.valueType === "time") return `${columnSql(ctx, f)} ${o} ${p.add(v)}::timestamptz`;
  return `analytics_try_timestamptz(${textSql(ctx, f)}) ${o} ${p.add(v)}::timestamptz`;
}

const startsWithSql = (ctx: Ctx, f: Field, v: string): string =>
  `starts_with(${textSql(ctx, f)}, ${ctx.params.add(v)}::text)`;

function endsWithSql(ctx: Ctx, f: Field, value: string): string {
  const v = ctx.params.add(value);
  return `right(${textSql(ctx, f)}, char_length(${v}::text)) = ${v}::text`;
}

/** Every operator's SQL (filters.ts lists them); a missing one is a compile error (assertNever). */
function conditionSql(ctx: Ctx, c: Condition): string {
  const f = c.field;
  const p = ctx.params;
  const not = (x: string) => `NOT COALESCE(${x}, FALSE)`;
  switch (c.op) {
    case "equals":
      return equalsSql(ctx, f, c.value);
    case "not_equals":
      return not(equalsSql(ctx, f, c.value));
    case "in":
      return inSql(ctx, f, c.value);
    case "not_in":
      return not(inSql(ctx, f, c.value));
    case "contains":
      return `strpos(${textSql(ctx, f)}, ${p.add(c.value)}::text) > 0`;
    case "not_contains":
      return not(`strpos(${textSql(ctx, f)}, ${p.add(c.value)}::text) > 0`);
    case "starts_with":
      return startsWithSql(ctx, f, c.value);
    case "not_starts_with":
      return not(startsWithSql(ctx, f, c.value));
    case "ends_with":
      return endsWithSql(ctx, f, c.value);
    case "not_ends_with":
      return not(endsWithSql(ctx, f, c.value));
    case "exists":
    case "not_exists": {
      const e = f.kind === "column" ? `${columnSql(ctx, f)} IS NOT NULL` : `${jsonSql(ctx, f)} IS NOT NULL`;
      return c.op === "exists" ? e : `NOT (${e})`;
    }
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      return compareSql(ctx, f, c.op, c.value);
    default:
      return assertNever(c, "operator");
  }
}

/** SQL boolean for a filter tree (TRUE when there is none; an empty group constrains nothing). */
export function filterSql(ctx: Ctx, n: Node | null): string {
  if (!n) return "TRUE";
  if (n.kind === "cond") return `(${conditionSql(ctx, n)})`;
  if (n.children.length === 0) return "TRUE";
  return `(${n.children.map((c) => filterSql(ctx, c)).join(n.kind === "and" ? " AND " : " OR ")})`;
}
