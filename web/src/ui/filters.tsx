import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import type { ComponentChildren } from "preact";
import { useEffect, useId, useMemo, useState } from "preact/hooks";
import { api } from "../api.js";
import { useAsync } from "./hooks.js";
import { Button } from "./kit.js";
import "./filters.css";

/**
 * The filter builder: edits a filter of the canonical model (docs/analytics.md "Filters") that
 * `events/query` and every analytics RPC take as `filters`. Used by the events and analytics screens.
 *
 *     const [query, set] = useQueryState();
 *     const filter = filterFromQuery(query.filter);          // Filter | undefined, from the URL
 *     <FilterBuilder projectId={project.id} value={filter}
 *                    onChange={(f) => set({ filter: filterToQuery(f) })} />
 *     api.analytics.count({ projectId, filters: filterToValue(filter), time: {...} });
 *
 * - The builder edits a draft; `onChange` gets the canonical filter when the person applies it
 *   (the Apply button or Enter in any input) or clears it (`undefined`: no filter). A new `value`
 *   (Back, a shared link) replaces the draft.
 * - The root is an and/or group; groups nest to the model's depth (5); every operator of the model;
 *   values are typed for their operator (text, number, true/false, timestamp; lists for in/not in).
 *   A number that is not one is refused here; everything else the server judges (show its error).
 * - Field suggestions: the event's own fields, and the project's known `data.*`, `context.*` and
 *   `tags.*` keys and event types (`useFieldSuggestions`; pass `suggestions` to use your own).
 */

// ---------------------------------------------------------------------------------------------
// The canonical model

type FilterScalar = string | number | boolean;
type FilterOperator = keyof typeof OPERATORS;
interface FilterCondition {
  field: string;
  operator: FilterOperator;
  value?: FilterScalar | FilterScalar[];
}
type FilterGroup = { and: FilterNode[] } | { or: FilterNode[] };
export type FilterNode = FilterCondition | FilterGroup;
/** A whole filter: always a group at the root (as the builder writes it). */
export type Filter = FilterGroup;

/** Shape of each operator's value (src/analytics/filters.ts OPERATORS) and its label. */
const OPERATORS = {
  equals: { shape: "scalar", label: "equals" },
  not_equals: { shape: "scalar", label: "does not equal" },
  contains: { shape: "text", label: "contains" },
  not_contains: { shape: "text", label: "does not contain" },
  starts_with: { shape: "text", label: "starts with" },
  not_starts_with: { shape: "text", label: "does not start with" },
  ends_with: { shape: "text", label: "ends with" },
  not_ends_with: { shape: "text", label: "does not end with" },
  in: { shape: "list", label: "is one of" },
  not_in: { shape: "list", label: "is none of" },
  gt: { shape: "order", label: ">" },
  gte: { shape: "order", label: "≥" },
  lt: { shape: "order", label: "<" },
  lte: { shape: "order", label: "≤" },
  exists: { shape: "none", label: "exists" },
  not_exists: { shape: "none", label: "does not exist" },
} as const;
type Shape = (typeof OPERATORS)[FilterOperator]["shape"];
const OPERATOR_NAMES = Object.keys(OPERATORS) as FilterOperator[];

/** Nesting allowed by the model: five groups (the root is the first). */
const MAX_GROUP_DEPTH = 5;

const isGroup = (n: FilterNode): n is FilterGroup =>
  typeof n === "object" && n !== null && !Array.isArray(n) && ("and" in n || "or" in n);

/** The filter as a URL parameter value (undefined: none, so the parameter is removed). */
export function filterToQuery(filter: Filter | undefined): string | undefined {
  return filter ? JSON.stringify(filter) : undefined;
}

/**
 * A filter read back from a URL parameter. Anything that is not JSON gives undefined; a bare
 * condition or an array is wrapped in an `and` group (the server reads an array as one).
 */
export function filterFromQuery(text: string | undefined): Filter | undefined {
  if (!text) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (Array.isArray(v)) return { and: v as FilterNode[] };
  if (typeof v !== "object" || v === null) return undefined;
  return isGroup(v as FilterNode) ? (v as Filter) : { and: [v as FilterNode] };
}

/** The filter as the RPCs' `filters` field (google.protobuf.Value); undefined for none. */
export function filterToValue(filter: Filter | undefined): Value | undefined {
  return filter ? fromJson(ValueSchema, filter as unknown as JsonValue) : undefined;
}

/**
 * A stored `filters` (a webhook's, JSON null or absent for none) as a filter the builder edits, its
 * conditions' keys in the builder's order (PostgreSQL's jsonb gives them in its own), so that an
 * applied filter read back compares equal to the builder's.
 */
export function filterFromValue(value: Value | undefined): Filter | undefined {
  const json = value ? toJson(ValueSchema, value) : null;
  const f = json === null ? undefined : filterFromQuery(JSON.stringify(json));
  return f && (canonical(f) as Filter);
}

function canonical(n: FilterNode): FilterNode {
  if ("and" in n) return { and: n.and.map(canonical) };
  if ("or" in n) return { or: n.or.map(canonical) };
  return n.value === undefined
    ? { field: n.field, operator: n.operator }
    : { field: n.field, operator: n.operator, value: n.value };
}

/** The `filters` of a PATCH: the filter, or JSON null to remove the stored one (absent keeps it). */
export function filterPatchValue(filter: Filter | undefined, had: boolean): Value | undefined {
  if (filter) return filterToValue(filter);
  return had ? fromJson(ValueSchema, null) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Suggestions

/** A field a person may filter on; `kind` is the JSON type seen most (picks the value type). */
interface FieldSuggestion {
  field: string;
  kind?: "string" | "number" | "boolean" | "time" | "object" | "array";
  /** How often it was seen (for ordering), if known. */
  count?: number;
}
export interface Suggestions {
  fields: FieldSuggestion[];
  /** The project's event types, most frequent first (values of `type`). */
  types: string[];
}

/** The event's own fields (docs/analytics.md "Resolution"). */
const BUILTIN_FIELDS: FieldSuggestion[] = [
  { field: "type", kind: "string" },
  { field: "userId", kind: "string" },
  { field: "groupId", kind: "string" },
  { field: "sourceId", kind: "string" },
  { field: "timestamp", kind: "time" },
  { field: "createdAt", kind: "time" },
];

/**
 * Known keys of a project (AnalyticsService.ListFields): its event types of the last 30 days and the
 * fields of its latest events, most frequent first, after the event's own fields.
 */
function useFieldSuggestions(projectId: string): Suggestions {
  const known = useAsync((signal) => api.analytics.listFields({ projectId }, { signal }), [projectId]);
  return useMemo(() => {
    const d = known.data?.data;
    const fields: FieldSuggestion[] = [...BUILTIN_FIELDS];
    for (const f of d?.fields ?? [])
      fields.push({ field: f.field, kind: f.kind as FieldSuggestion["kind"], count: Number(f.count) });
    return { fields, types: (d?.types ?? []).map((t) => t.type) };
  }, [known.data]);
}

// ---------------------------------------------------------------------------------------------
// The draft the builder edits

type ValueKind = "string" | "number" | "boolean" | "time";
interface DraftCond {
  id: number;
  kind: "cond";
  field: string;
  operator: FilterOperator;
  /** The value as typed; a list is comma-separated (`\,` for a comma inside a value). */
  text: string;
  type: ValueKind;
}
interface DraftGroup {
  id: number;
  kind: "and" | "or";
  children: DraftNode[];
}
type DraftNode = DraftCond | DraftGroup;

let nextId = 1;
const newCond = (field = ""): DraftCond => ({
  id: nextId++,
  kind: "cond",
  field,
  operator: "equals",
  text: "",
  type: "string",
});
const newGroup = (kind: "and" | "or" = "and", children: DraftNode[] = []): DraftGroup => ({
  id: nextId++,
  kind,
  children,
});

const scalarText = (v: FilterScalar) => String(v);
const splitList = (text: string): string[] =>
  text
    .split(/(?<!\\),/)
    .map((s) => s.trim().replace(/\\,/g, ","))
    .filter((s) => s !== "");
const joinList = (vs: FilterScalar[]) => vs.map((v) => String(v).replace(/,/g, "\\,")).join(", ");
const kindOf = (v: FilterScalar | undefined, shape: Shape): ValueKind =>
  typeof v === "number" ? "number" : typeof v === "boolean" ? "boolean" : shape === "order" ? "time" : "string";

function toDraft(n: FilterNode): DraftNode {
  if (isGroup(n)) {
    const kind = "and" in n ? "and" : "or";
    const items = "and" in n ? n.and : n.or;
    return newGroup(kind, Array.isArray(items) ? items.map(toDraft) : []);
  }
  const c = n as Partial<FilterCondition>;
  const operator: FilterOperator =
    typeof c.operator === "string" && Object.hasOwn(OPERATORS, c.operator) ? c.operator : "equals";
  const shape = OPERATORS[operator].shape;
  const v = c.value;
  const first = Array.isArray(v) ? v[0] : v;
  return {
    id: nextId++,
    kind: "cond",
    field: typeof c.field === "string" ? c.field : "",
    operator,
    text: Array.isArray(v) ? joinList(v) : v === undefined || v === null ? "" : scalarText(v),
    type: kindOf(first, shape),
  };
}

const fromFilter = (f: Filter | undefined): DraftGroup => {
  const g = f ? toDraft(f) : newGroup();
  return g.kind === "cond" ? newGroup("and", [g]) : g;
};

/** One typed value, or a problem in words. */
function typed(text: string, type: ValueKind): { value: FilterScalar } | { problem: string } {
  if (type === "number") {
    const n = Number(text.trim());
    if (text.trim() === "" || !Number.isFinite(n)) return { problem: `"${text}" is not a number` };
    return { value: n };
  }
  if (type === "boolean") return { value: text === "true" };
  return { value: type === "time" ? text.trim() : text };
}

/** A draft condition's canonical form, or what is wrong with it. */
function toCondition(c: DraftCond): { cond: FilterCondition } | { problem: string } {
  const field = c.field.trim();
  if (!field) return { problem: "Choose a field." };
  const shape = OPERATORS[c.operator].shape;
  if (shape === "none") return { cond: { field, operator: c.operator } };
  if (shape === "list") {
    const parts = c.type === "boolean" ? [c.text || "true"] : splitList(c.text);
    if (!parts.length) return { problem: "Give at least one value (comma-separated)." };
    const values: FilterScalar[] = [];
    for (const p of parts) {
      const t = typed(p, c.type);
      if ("problem" in t) return t;
      values.push(t.value);
    }
    return { cond: { field, operator: c.operator, value: values } };
  }
  const type = shape === "text" ? "string" : c.type;
  const t = typed(type === "boolean" ? c.text || "true" : c.text, type);
  if ("problem" in t) return t;
  return { cond: { field, operator: c.operator, value: t.value } };
}

/** The canonical filter of a draft (empty groups left out), or the problems by condition id. */
function toFilter(g: DraftGroup): { filter: Filter | undefined; problems: Map<number, string> } {
  const problems = new Map<number, string>();
  const walk = (n: DraftNode): FilterNode | undefined => {
    if (n.kind === "cond") {
      const r = toCondition(n);
      if ("problem" in r) {
        problems.set(n.id, r.problem);
        return undefined;
      }
      return r.cond;
    }
    const children = n.children.map(walk).filter((c): c is FilterNode => c !== undefined);
    if (!children.length) return undefined;
    return n.kind === "and" ? { and: children } : { or: children };
  };
  const f = walk(g) as Filter | undefined;
  return { filter: f, problems };
}

/** Value kinds offered for an operator's shape. */
const KINDS: Record<Shape, { value: ValueKind; label: string }[]> = {
  scalar: [
    { value: "string", label: "text" },
    { value: "number", label: "number" },
    { value: "boolean", label: "true/false" },
  ],
  list: [
    { value: "string", label: "text" },
    { value: "number", label: "number" },
  ],
  order: [
    { value: "number", label: "number" },
    { value: "time", label: "time" },
  ],
  text: [],
  none: [],
};

/** The value kind to start with for a field of this kind under this operator shape. */
function defaultKind(kind: FieldSuggestion["kind"], shape: Shape): ValueKind {
  if (shape === "order") return kind === "time" ? "time" : "number";
  if (shape === "list") return kind === "number" ? "number" : "string";
  if (kind === "number" || kind === "boolean") return kind;
  return "string";
}

// ---------------------------------------------------------------------------------------------
// The component

export function FilterBuilder(props: {
  projectId: string;
  /** The applied filter (from the URL); undefined: none. */
  value: Filter | undefined;
  /** Called with the new filter when the person applies or clears it. */
  onChange: (filter: Filter | undefined) => void;
  /** Overrides the suggestions read from the project. */
  suggestions?: Suggestions;
}) {
  const read = useFieldSuggestions(props.projectId);
  const suggestions = props.suggestions ?? read;
  const applied = filterToQuery(props.value) ?? "";
  const [draft, setDraft] = useState<DraftGroup>(() => fromFilter(props.value));
  const [showProblems, setShowProblems] = useState(false);
  // A new applied value (Back, a shared link, Clear) replaces the draft unless it is the draft's own.
  useEffect(() => {
    if ((filterToQuery(toFilter(draft).filter) ?? "") !== applied) setDraft(fromFilter(props.value));
    setShowProblems(false);
  }, [applied]);
  const { filter, problems } = toFilter(draft);
  const dirty = (filterToQuery(filter) ?? "") !== applied || problems.size > 0;
  const listId = useId();
  const typesId = useId();

  const update = (id: number, f: (n: DraftNode) => DraftNode | null) => {
    const walk = (n: DraftNode): DraftNode | null => {
      if (n.id === id) return f(n);
      if (n.kind === "cond") return n;
      return { ...n, children: n.children.map(walk).filter((c): c is DraftNode => c !== null) };
    };
    setDraft((d) => (walk(d) as DraftGroup | null) ?? newGroup());
  };
  const apply = () => {
    if (problems.size) return setShowProblems(true);
    setShowProblems(false);
    props.onChange(filter);
  };
  const kinds = useMemo(() => new Map(suggestions.fields.map((f) => [f.field, f.kind])), [suggestions.fields]);

  return (
    <form
      class="filters"
      aria-label="Filters"
      onSubmit={(e) => {
        e.preventDefault();
        apply();
      }}
    >
      <datalist id={listId}>
        {suggestions.fields.map((f) => (
          <option key={f.field} value={f.field} />
        ))}
      </datalist>
      <datalist id={typesId}>
        {suggestions.types.map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
      <GroupView
        group={draft}
        depth={1}
        root
        ctx={{
          update,
          problems: showProblems ? problems : new Map(),
          listId,
          typesId,
          kinds,
        }}
        extra={
          (dirty || props.value) && (
            <span class="filters-actions">
              <Button type="submit" variant={dirty ? "primary" : "secondary"} disabled={!dirty}>
                Apply filters
              </Button>
              {(props.value || draft.children.length > 0) && (
                <Button
                  onClick={() => {
                    setDraft(newGroup());
                    setShowProblems(false);
                    props.onChange(undefined);
                  }}
                >
                  Clear
                </Button>
              )}
              {dirty && draft.children.length > 0 && <span class="muted">Not applied yet.</span>}
            </span>
          )
        }
      />
    </form>
  );
}

interface Ctx {
  update: (id: number, f: (n: DraftNode) => DraftNode | null) => void;
  problems: Map<number, string>;
  listId: string;
  typesId: string;
  kinds: Map<string, FieldSuggestion["kind"]>;
}

function GroupView({
  group,
  depth,
  root,
  ctx,
  extra,
}: {
  group: DraftGroup;
  depth: number;
  root?: boolean;
  ctx: Ctx;
  /** Shown after the add buttons (the root's Apply and Clear). */
  extra?: ComponentChildren;
}) {
  const set = (f: (g: DraftGroup) => DraftGroup) => ctx.update(group.id, (n) => f(n as DraftGroup));
  const label = root ? "Filters" : `Group at level ${depth}`;
  return (
    <fieldset
      class={`filter-group${root ? " filter-root" : ""}${group.children.length ? "" : " filter-empty"}`}
      data-testid="filter-group"
    >
      <legend class="visually-hidden">{label}</legend>
      <div class="filter-group-head">
        {group.children.length === 0 ? (
          <span class="muted">{root ? "No filters: every event matches." : "Empty group."}</span>
        ) : (
          <label class="filter-join">
            <span>Match</span>
            <select
              aria-label={`${label}: match all or any`}
              value={group.kind}
              onChange={(e) => set((g) => ({ ...g, kind: (e.target as HTMLSelectElement).value as "and" | "or" }))}
            >
              <option value="and">all (and)</option>
              <option value="or">any (or)</option>
            </select>
            <span>of:</span>
          </label>
        )}
        {!root && (
          <Button
            variant="link"
            class="filter-remove"
            aria-label={`Remove ${label.toLowerCase()}`}
            onClick={() => ctx.update(group.id, () => null)}
          >
            Remove group
          </Button>
        )}
      </div>
      {group.children.length > 0 && (
        <ul class="filter-items">
          {group.children.map((c) => (
            <li key={c.id}>
              {c.kind === "cond" ? (
                <ConditionView cond={c} ctx={ctx} />
              ) : (
                <GroupView group={c} depth={depth + 1} ctx={ctx} />
              )}
            </li>
          ))}
        </ul>
      )}
      <div class="filter-add">
        <Button onClick={() => set((g) => ({ ...g, children: [...g.children, newCond()] }))}>+ Condition</Button>
        {depth < MAX_GROUP_DEPTH && (
          <Button
            onClick={() =>
              set((g) => ({
                ...g,
                children: [...g.children, newGroup(g.kind === "and" ? "or" : "and", [newCond()])],
              }))
            }
          >
            + Group
          </Button>
        )}
        {extra}
      </div>
    </fieldset>
  );
}

function ConditionView({ cond, ctx }: { cond: DraftCond; ctx: Ctx }) {
  const set = (f: (c: DraftCond) => DraftCond) => ctx.update(cond.id, (n) => f(n as DraftCond));
  const shape = OPERATORS[cond.operator].shape;
  const problem = ctx.problems.get(cond.id);
  const kinds = KINDS[shape];
  const noteId = `cond-${cond.id}-note`;
  const fieldKind = ctx.kinds.get(cond.field.trim());
  return (
    <div class="filter-cond" data-testid="filter-condition">
      <input
        class="filter-field"
        aria-label="Field"
        placeholder="field, e.g. type or data.plan"
        list={ctx.listId}
        value={cond.field}
        spellcheck={false}
        autoComplete="off"
        onInput={(e) => {
          const field = (e.target as HTMLInputElement).value;
          set((c) => {
            const k = ctx.kinds.get(field.trim());
            // A known field picks its value type until the person picks one.
            return k && c.text === ""
              ? { ...c, field, type: defaultKind(k, OPERATORS[c.operator].shape) }
              : { ...c, field };
          });
        }}
      />
      <select
        aria-label="Operator"
        value={cond.operator}
        onChange={(e) => {
          const operator = (e.target as HTMLSelectElement).value as FilterOperator;
          set((c) => {
            const s = OPERATORS[operator].shape;
            const type = KINDS[s].some((k) => k.value === c.type) ? c.type : defaultKind(fieldKind, s);
            return { ...c, operator, type };
          });
        }}
      >
        {OPERATOR_NAMES.map((op) => (
          <option key={op} value={op}>
            {OPERATORS[op].label}
          </option>
        ))}
      </select>
      {kinds.length > 0 && (
        <select
          aria-label="Value type"
          value={cond.type}
          onChange={(e) => set((c) => ({ ...c, type: (e.target as HTMLSelectElement).value as ValueKind }))}
        >
          {kinds.map((k) => (
            <option key={k.value} value={k.value}>
              {k.label}
            </option>
          ))}
        </select>
      )}
      {shape !== "none" &&
        (cond.type === "boolean" && shape === "scalar" ? (
          <select
            aria-label="Value"
            value={cond.text === "false" ? "false" : "true"}
            onChange={(e) => set((c) => ({ ...c, text: (e.target as HTMLSelectElement).value }))}
          >
            <option value="true">true</option>
            <option value="false">false</option>
          </select>
        ) : (
          <input
            class="filter-value"
            aria-label={shape === "list" ? "Values, comma-separated" : "Value"}
            aria-invalid={problem ? true : undefined}
            aria-describedby={problem ? noteId : undefined}
            placeholder={
              shape === "list"
                ? "a, b, c"
                : cond.type === "time" && shape !== "text"
                  ? "2026-01-31T12:00:00Z"
                  : cond.type === "number" && shape !== "text"
                    ? "0"
                    : "value"
            }
            inputMode={cond.type === "number" && shape !== "text" ? "decimal" : undefined}
            list={cond.field.trim() === "type" || cond.field.trim() === "event" ? ctx.typesId : undefined}
            value={cond.text}
            spellcheck={false}
            autoComplete="off"
            onInput={(e) => {
              const text = (e.target as HTMLInputElement).value;
              set((c) => ({ ...c, text }));
            }}
          />
        ))}
      <Button
        variant="link"
        class="filter-remove"
        aria-label={`Remove condition${cond.field ? ` on ${cond.field}` : ""}`}
        onClick={() => ctx.update(cond.id, () => null)}
      >
        ✕
      </Button>
      {problem && (
        <small id={noteId} class="field-error filter-problem">
          {problem}
        </small>
      )}
    </div>
  );
}
