import { badRequest } from "../shared/errors.js";
import { COLUMN_ALIASES, objectColumn, type EventColumn, type ObjectColumn } from "../events/record.js";

// Field paths of the query model. A path passes a strict grammar and resolves to either an event
// column (aliases) or a JSON path inside data/context/tags. JSON path segments are later bound as a
// text[] parameter (`data #> $n`); nothing from the request is ever spliced into SQL.

type ColumnName = EventColumn;
type JsonColumn = ObjectColumn;

export type Field =
  | { kind: "column"; column: ColumnName; valueType: "text" | "time"; name: string }
  | { kind: "json"; column: JsonColumn; path: string[]; name: string };

// The aliases are the event record's (record.ts: decisions.md's list, plus `type` and `timestamp`).
const ALIASES = COLUMN_ALIASES;

/** One path segment: letters, digits and `_ - $ @ :` (no quotes, spaces, backslashes, semicolons). */
export const SEGMENT = /^[A-Za-z0-9_$@:-]{1,128}$/;
const MAX_SEGMENTS = 16;
const MAX_FIELD_LENGTH = 512;

/** Why a field name is refused, or null when it passes the grammar. */
export function fieldProblem(name: unknown): string | null {
  if (typeof name !== "string") return "must be a string";
  if (name.length === 0) return "must not be empty";
  if (name.length > MAX_FIELD_LENGTH) return `must be at most ${MAX_FIELD_LENGTH} characters`;
  const segs = name.split(".");
  if (segs.length > MAX_SEGMENTS) return `must have at most ${MAX_SEGMENTS} segments`;
  for (const s of segs) {
    if (s.length === 0) return "must not have empty segments";
    if (!SEGMENT.test(s)) return "segments may only contain letters, digits and _ - $ @ :";
  }
  return null;
}

/**
 * Resolves a field name (decisions.md: aliases, `timestamp`, `type`, `data.*`, `context.*`,
 * `tags.*`; any other path, single- or multi-segment, resolves against `data`).
 * A bare `data`/`context`/`tags` is a single-segment name and so addresses `data.<name>`.
 */
export function resolveField(name: unknown, where = "field"): Field {
  const problem = fieldProblem(name);
  if (problem) throw badRequest(`${where}: ${problem}`, [{ field: where, message: problem }]);
  const n = name as string;
  const alias = ALIASES.get(n);
  if (alias) return { kind: "column", column: alias.column, valueType: alias.valueType, name: n };
  const segs = n.split(".");
  const object = segs.length > 1 ? objectColumn(segs[0]) : undefined;
  if (object !== undefined) return { kind: "json", column: object, path: segs.slice(1), name: n };
  return { kind: "json", column: "data", path: segs, name: n };
}

/** The top-level `data` key a field addresses, when it addresses one (slot candidates). */
export function topLevelDataKey(f: Field): string | null {
  return f.kind === "json" && f.column === "data" && f.path.length === 1 ? f.path[0] : null;
}
