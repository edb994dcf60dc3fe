import { badRequest } from "../shared/errors.js";
import { fieldProblem, resolveField, type Field } from "./fields.js";
import { TIMESTAMP_MESSAGE } from "../shared/time.js";
import { parseInstant } from "./time.js";

// The filter tree of the query model, parsed and validated into an AST (pure). A bare condition is
// depth 0; each `and`/`or` group adds one; five nested groups are accepted, a sixth is a 400. The
// whole tree holds at most `maxNodes` groups and conditions together (empty groups count: each is a
// term of the SQL), checked while walking so that an oversized tree stops the walk at once.

export const MAX_DEPTH = 5;
export const MAX_CONDITIONS = 200;
export const MAX_IN_VALUES = 1000;
export const MAX_STRING_VALUE = 10_000;
/** Default of ANALYTICS_MAX_FILTER_NODES. */
export const MAX_FILTER_NODES = 300;

export const OPERATORS = [
  "equals", "not_equals", "contains", "not_contains", "starts_with", "ends_with", "in", "not_in",
  "gt", "gte", "lt", "lte", "exists", "not_exists",
] as const;
export type Operator = (typeof OPERATORS)[number];

export type Scalar = string | number | boolean;

/** A validated time value as canonical UTC text: PostgreSQL never reads the client's own text. */
const timeText = (v: unknown): string => parseInstant(v)!.text;

export interface Condition {
  kind: "cond";
  field: Field;
  op: Operator;
  /** equals/not_equals/contains/.../gt..lte: one scalar; in/not_in: a non-empty array; exists: none. */
  value?: Scalar | Scalar[];
}
export interface Group {
  kind: "and" | "or";
  children: Node[];
}
export type Node = Condition | Group;

type Detail = { field: string; message: string };

/** Thrown inside the walk when the tree has more nodes than allowed. */
class TooManyNodes {}

class Parser {
  details: Detail[] = [];
  conditions = 0;
  nodes = 0;

  constructor(private readonly maxNodes: number) {}

  fail(field: string, message: string): null {
    this.details.push({ field, message });
    return null;
  }

  node(v: unknown, path: string, depth: number): Node | null {
    if (++this.nodes > this.maxNodes) throw new TooManyNodes();
    if (Array.isArray(v)) return this.group("and", v, path, depth + 1);
    if (v === null || typeof v !== "object") return this.fail(path, "must be a condition {field, operator, value} or a group {and: [...]} / {or: [...]}");
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && (keys[0] === "and" || keys[0] === "or")) {
      if (!Array.isArray(o[keys[0]])) return this.fail(`${path}.${keys[0]}`, "must be an array");
      return this.group(keys[0] as "and" | "or", o[keys[0]] as unknown[], `${path}.${keys[0]}`, depth + 1);
    }
    if ("and" in o || "or" in o) return this.fail(path, "a group has exactly one key, 'and' or 'or'");
    return this.condition(o, path);
  }

  group(kind: "and" | "or", items: unknown[], path: string, depth: number): Node | null {
    if (depth > MAX_DEPTH) return this.fail(path, `nesting deeper than ${MAX_DEPTH} groups`);
    const children: Node[] = [];
    items.forEach((item, i) => {
      const n = this.node(item, `${path}[${i}]`, depth);
      if (n) children.push(n);
    });
    return { kind, children };
  }

  condition(o: Record<string, unknown>, path: string): Node | null {
    if (++this.conditions > MAX_CONDITIONS) return this.fail(path, `at most ${MAX_CONDITIONS} conditions`);
    const extra = Object.keys(o).filter((k) => k !== "field" && k !== "operator" && k !== "value");
    if (extra.length) return this.fail(path, `unknown keys: ${extra.join(", ")}`);
    const fp = fieldProblem(o.field);
    if (fp) return this.fail(`${path}.field`, fp);
    const field = resolveField(o.field);
    if (typeof o.operator !== "string" || !(OPERATORS as readonly string[]).includes(o.operator)) {
      return this.fail(`${path}.operator`, `must be one of ${OPERATORS.join(", ")}`);
    }
    const op = o.operator as Operator;
    const value = o.value;
    const vpath = `${path}.value`;
    const isTime = field.kind === "column" && field.valueType === "time";
    switch (op) {
      case "exists":
      case "not_exists":
        if (value !== undefined && value !== null) return this.fail(vpath, `${op} takes no value`);
        return { kind: "cond", field, op };
      case "in":
      case "not_in": {
        if (!Array.isArray(value) || value.length === 0) return this.fail(vpath, `${op} takes a non-empty array`);
        if (value.length > MAX_IN_VALUES) return this.fail(vpath, `at most ${MAX_IN_VALUES} values`);
        for (const [i, e] of value.entries()) {
          const p = this.scalarProblem(e, isTime);
          if (p) return this.fail(`${vpath}[${i}]`, p);
        }
        return { kind: "cond", field, op, value: isTime ? value.map(timeText) : (value as Scalar[]) };
      }
      case "equals":
      case "not_equals": {
        const p = this.scalarProblem(value, isTime);
        if (p) return this.fail(vpath, p);
        return { kind: "cond", field, op, value: isTime ? timeText(value) : (value as Scalar) };
      }
      case "contains":
      case "not_contains":
      case "starts_with":
      case "ends_with":
        if (isTime) return this.fail(`${path}.operator`, `${op} does not apply to ${field.name}; use gt/gte/lt/lte`);
        if (typeof value !== "string") return this.fail(vpath, `${op} takes a string`);
        if (value.length > MAX_STRING_VALUE) return this.fail(vpath, "is too long");
        return { kind: "cond", field, op, value };
      default: {
        // gt, gte, lt, lte: numbers numerically, ISO timestamps as times.
        if (typeof value === "number" && Number.isFinite(value) && !isTime) return { kind: "cond", field, op, value };
        if (typeof value === "string" && parseInstant(value)) return { kind: "cond", field, op, value: timeText(value) };
        return this.fail(vpath, isTime ? `${op} on ${field.name} takes an RFC 3339 timestamp with an offset` : `${op} takes a number or an RFC 3339 timestamp with an offset`);
      }
    }
  }

  scalarProblem(v: unknown, isTime: boolean): string | null {
    if (isTime) return typeof v === "string" && parseInstant(v) ? null : TIMESTAMP_MESSAGE;
    if (typeof v === "string") return v.length > MAX_STRING_VALUE ? "is too long" : null;
    if (typeof v === "number") return Number.isFinite(v) ? null : "must be a finite number";
    if (typeof v === "boolean") return null;
    return "must be a string, number or boolean";
  }
}

/**
 * Parses `filters` (absent/null: no filter). Throws a 400 naming every offending part, or naming
 * `filters` when the tree has more than `maxNodes` groups and conditions.
 */
export function parseFilters(v: unknown, maxNodes = MAX_FILTER_NODES): Node | null {
  if (v === undefined || v === null) return null;
  const p = new Parser(maxNodes);
  let n: Node | null;
  try {
    n = p.node(v, "filters", 0);
  } catch (err) {
    if (!(err instanceof TooManyNodes)) throw err;
    const message = `at most ${maxNodes} groups and conditions in all (empty groups count)`;
    throw badRequest(`invalid filters: ${message}`, [{ field: "filters", message }]);
  }
  if (p.details.length) {
    throw badRequest(`invalid filters: ${p.details.map((d) => `${d.field}: ${d.message}`).join("; ")}`, p.details);
  }
  return n;
}

/** Every field a filter touches, in order (plans and the blocks' carried-columns check). */
export function filterFields(n: Node | null, out: Field[] = []): Field[] {
  if (!n) return out;
  if (n.kind === "cond") out.push(n.field);
  else for (const c of n.children) filterFields(c, out);
  return out;
}
