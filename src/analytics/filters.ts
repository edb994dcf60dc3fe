import { badRequest } from "../shared/errors.js";
import { assertNever } from "../shared/never.js";
import { fieldProblem, resolveField, type Field } from "./fields.js";
import { TIMESTAMP_MESSAGE } from "../shared/time.js";
import { parseInstant } from "./time.js";

// The filter tree of the query model, parsed and validated into an AST (pure). A bare condition is
// depth 0; each `and`/`or` group adds one; five nested groups are accepted, a sixth is a 400. The
// whole tree holds at most `maxNodes` groups and conditions together (empty groups count: each is a
// term of the SQL), checked while walking so that an oversized tree stops the walk at once.

const MAX_DEPTH = 5;
const MAX_CONDITIONS = 200;
const MAX_IN_VALUES = 1000;
const MAX_STRING_VALUE = 10_000;
/** Default of ANALYTICS_MAX_FILTER_NODES. */
const MAX_FILTER_NODES = 300;

/**
 * What an operator's `value` is: `scalar` a string, number or boolean (compared by its JSON type);
 * `text` a string; `list` a non-empty array of scalars; `order` a number or a timestamp; `none` no
 * value. The parser checks a value by its operator's shape.
 */
export type ValueShape = "scalar" | "text" | "list" | "order" | "none";

/**
 * The filter operators (the spec's list, in its order, then Vigil's own) and the shape of each one's value: the one
 * list of them. A new operator is a line here; tsc then names every switch that must say what it
 * means: compile.ts (SQL), blocks/eval.ts (column blocks) and filters-js.ts (one event, webhook
 * filters), each ending in assertNever.
 * docs/architecture.md: "Add an analytics operator".
 */
export const OPERATORS = {
  equals: "scalar",
  not_equals: "scalar",
  contains: "text",
  not_contains: "text",
  starts_with: "text",
  ends_with: "text",
  /** Vigil's own (not in the spec's list): the complements of starts_with and ends_with. */
  not_starts_with: "text",
  not_ends_with: "text",
  in: "list",
  not_in: "list",
  gt: "order",
  gte: "order",
  lt: "order",
  lte: "order",
  exists: "none",
  not_exists: "none",
} as const satisfies Record<string, ValueShape>;
export type Operator = keyof typeof OPERATORS;
export const OPERATOR_NAMES = Object.keys(OPERATORS) as Operator[];
/** The operators whose value has shape S. */
type OperatorOf<S extends ValueShape> = {
  [K in Operator]: (typeof OPERATORS)[K] extends S ? K : never;
}[Operator];

export type Scalar = string | number | boolean;

/** A validated time value as canonical UTC text: PostgreSQL never reads the client's own text. */
const timeText = (v: unknown): string => parseInstant(v)!.text;

/** A condition; its value's type follows from its operator's shape (a switch on `op` narrows it). */
export type Condition = { kind: "cond"; field: Field } & (
  | { op: OperatorOf<"scalar">; value: Scalar }
  | { op: OperatorOf<"text">; value: string }
  | { op: OperatorOf<"list">; value: Scalar[] }
  /** A number, or a timestamp as canonical UTC text. */
  | { op: OperatorOf<"order">; value: number | string }
  | { op: OperatorOf<"none">; value?: undefined }
);
interface Group {
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
    if (v === null || typeof v !== "object")
      return this.fail(path, "must be a condition {field, operator, value} or a group {and: [...]} / {or: [...]}");
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
    if (typeof o.operator !== "string" || !Object.hasOwn(OPERATORS, o.operator)) {
      return this.fail(`${path}.operator`, `must be one of ${OPERATOR_NAMES.join(", ")}`);
    }
    const op = o.operator as Operator;
    const value = o.value;
    const vpath = `${path}.value`;
    const isTime = field.kind === "column" && field.valueType === "time";
    // The casts pair `op` with the value its shape was checked for (the switch is on the shape).
    const shape = OPERATORS[op];
    switch (shape) {
      case "none":
        if (value !== undefined && value !== null) return this.fail(vpath, `${op} takes no value`);
        return { kind: "cond", field, op } as Condition;
      case "list": {
        if (!Array.isArray(value) || value.length === 0) return this.fail(vpath, `${op} takes a non-empty array`);
        if (value.length > MAX_IN_VALUES) return this.fail(vpath, `at most ${MAX_IN_VALUES} values`);
        for (const [i, e] of value.entries()) {
          const p = this.scalarProblem(e, isTime);
          if (p) return this.fail(`${vpath}[${i}]`, p);
        }
        return { kind: "cond", field, op, value: isTime ? value.map(timeText) : (value as Scalar[]) } as Condition;
      }
      case "scalar": {
        const p = this.scalarProblem(value, isTime);
        if (p) return this.fail(vpath, p);
        return { kind: "cond", field, op, value: isTime ? timeText(value) : (value as Scalar) } as Condition;
      }
      case "text":
        if (isTime) return this.fail(`${path}.operator`, `${op} does not apply to ${field.name}; use gt/gte/lt/lte`);
        if (typeof value !== "string") return this.fail(vpath, `${op} takes a string`);
        if (value.length > MAX_STRING_VALUE) return this.fail(vpath, "is too long");
        return { kind: "cond", field, op, value } as Condition;
      case "order":
        // Numbers numerically, ISO timestamps as times.
        if (typeof value === "number" && Number.isFinite(value) && !isTime)
          return { kind: "cond", field, op, value } as Condition;
        if (typeof value === "string" && parseInstant(value))
          return { kind: "cond", field, op, value: timeText(value) } as Condition;
        return this.fail(
          vpath,
          isTime
            ? `${op} on ${field.name} takes an RFC 3339 timestamp with an offset`
            : `${op} takes a number or an RFC 3339 timestamp with an offset`,
        );
      default:
        return assertNever(shape, "value shape");
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
