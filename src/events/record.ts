import type { JsonObject } from "@bufbuild/protobuf";
import type { Event } from "../../gen/vigil/v1/events_pb.js";
import { assertNever } from "../shared/never.js";

// THE event record: one table, in the Event message's order (the order of the REST JSON, the
// NDJSON export's keys, a webhook payload's `data`). Everything that stores or reads an event is
// derived from it: the INSERT/COPY columns and their encoding (write.ts), the SELECT lists and the
// rows they read (store.ts, analytics/events.ts: rows come back keyed by field, already records),
// the Event message and its JSON (the event list, GetEvent, events/query, both exports, the user
// export), the webhook payload's `data` (built in SQL at send time, webhooks/store.ts), the filter
// aliases (analytics/fields.ts) and the CSV export's columns (analytics/export-format.ts).
// docs/architecture.md, "Add a field to events".

/** How a field is stored, held in memory and written: the closed set of the record's value kinds. */
export type FieldKind = "uuid" | "text" | "optionalText" | "time" | "object";

export interface RecordField {
  /** The field's name in the Event message and its JSON (lowerCamel). */
  field: string;
  /** The `events` column (1000_events.sql and later migrations). */
  column: string;
  kind: FieldKind;
  /** Names a filter may use for the column (decisions.md: field aliases); none for a JSON object. */
  aliases: readonly string[];
  /** One of the CSV export's default columns. */
  csvDefault: boolean;
  /** Written as the commit time of the write (one value per statement), not from each event. */
  commitTime?: true;
}

export const EVENT_RECORD = [
  { field: "id", column: "id", kind: "uuid", aliases: [], csvDefault: true },
  { field: "projectId", column: "project_id", kind: "text", aliases: ["projectId"], csvDefault: false },
  { field: "type", column: "type", kind: "text", aliases: ["event", "type"], csvDefault: true },
  { field: "timestamp", column: "ts", kind: "time", aliases: ["timestamp"], csvDefault: true },
  { field: "userId", column: "user_id", kind: "optionalText", aliases: ["userId"], csvDefault: true },
  { field: "groupId", column: "group_id", kind: "optionalText", aliases: ["groupId"], csvDefault: true },
  { field: "sourceId", column: "source_id", kind: "optionalText", aliases: ["sourceId"], csvDefault: true },
  { field: "data", column: "data", kind: "object", aliases: [], csvDefault: false },
  { field: "context", column: "context", kind: "object", aliases: [], csvDefault: false },
  { field: "tags", column: "tags", kind: "object", aliases: [], csvDefault: false },
  {
    field: "createdAt",
    column: "created_at",
    kind: "time",
    aliases: ["createdAt"],
    csvDefault: false,
    commitTime: true,
  },
] as const satisfies readonly RecordField[];

type Fields = (typeof EVENT_RECORD)[number];
type KindOf<F extends Fields["field"]> = Extract<Fields, { field: F }>["kind"];

/** A value as a record holds it (and as pg reads its column: uuid and text as strings, timestamptz as a Date, jsonb parsed). */
type Held<K extends FieldKind> = K extends "uuid" | "text"
  ? string
  : K extends "optionalText"
    ? string | null
    : K extends "time"
      ? Date
      : Record<string, unknown>;
/** A value in the Event message (protobuf-es: an unset optional field is undefined). */
type InMessage<K extends FieldKind> = K extends "uuid" | "text" | "time"
  ? string
  : K extends "optionalText"
    ? string | undefined
    : JsonObject;
/** A value in the REST JSON of the Event message (an unset optional field is null). */
type InJson<K extends FieldKind> = K extends "optionalText" ? string | null : InMessage<K>;

type EventFieldName = Fields["field"];
export type EventColumn = Fields["column"];
/** The stored event: what the SELECT lists read and the write statements store. */
export type EventRecord = { -readonly [F in EventFieldName]: Held<KindOf<F>> };
/** The Event message's fields (the REST JSON of GetEvent, the event list, events/query). */
export type EventMessage = { -readonly [F in EventFieldName]: InMessage<KindOf<F>> };
/** The event as REST writes it: NDJSON's line, CSV's source, a webhook payload's `data`. */
export type EventJson = { -readonly [F in EventFieldName]: InJson<KindOf<F>> };

// The table IS the Event message (proto/vigil/v1/events.proto): a field on one side only, or of
// another type, fails to compile here.
type MessageFields = Omit<Event, "$typeName" | "$unknown">;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameFields: Same<keyof MessageFields, EventFieldName> extends true
  ? true
  : "EVENT_RECORD and the Event message (events.proto) must have the same fields" = true;
type Defined<T> = { [K in keyof T]-?: Exclude<T[K], undefined> };
const sameTypes: Same<Defined<MessageFields>, Defined<EventMessage>> extends true
  ? true
  : "each field of EVENT_RECORD must have its kind's type in the Event message" = true;
type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];
const sameNullable: Same<
  Exclude<OptionalKeys<MessageFields>, ObjectField>,
  Extract<Fields, { kind: "optionalText" }>["field"]
> extends true
  ? true
  : "the Event message's optional scalars must be the optionalText fields of EVENT_RECORD" = true;
void [sameFields, sameTypes, sameNullable];

/** A kind's column type. */
export function sqlType(kind: FieldKind): string {
  switch (kind) {
    case "uuid":
      return "uuid";
    case "text":
    case "optionalText":
      return "text";
    case "time":
      return "timestamptz";
    case "object":
      return "jsonb";
    default:
      return assertNever(kind, "event field kind");
  }
}

/** A kind's value as the REST JSON writes it, in SQL (for the webhook payload built at send time). */
function jsonSql(kind: FieldKind, column: string): string {
  switch (kind) {
    case "uuid":
    case "text":
    case "optionalText":
    case "object":
      return column;
    case "time":
      // toISOString()'s form: milliseconds, Z.
      return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
    default:
      return assertNever(kind, "event field kind");
  }
}

const FIELDS: readonly RecordField[] = EVENT_RECORD;

/** Every field's name, in the message's order. */
export const EVENT_FIELD_NAMES: readonly EventFieldName[] = EVENT_RECORD.map((f) => f.field);
/** Every column, in the table's order, with its SQL type. */
export const EVENT_COLUMNS: readonly { column: EventColumn; sqlType: string }[] = EVENT_RECORD.map((f) => ({
  column: f.column,
  sqlType: sqlType(f.kind),
}));

/**
 * The SELECT list of a record: `<alias>.<column> AS "<field>"` for every field, so that the row read
 * is an EventRecord as it is (no mapping). `alias` is the events table's alias in the query.
 */
export function recordSelect(alias: string): string {
  return FIELDS.map((f) => `${alias}.${f.column} AS "${f.field}"`).join(", ");
}

/** The plain column list (`<alias>.<column>`), for an inner query that a recordSelect reads from. */
export function columnList(alias: string): string {
  return FIELDS.map((f) => `${alias}.${f.column}`).join(", ");
}

/**
 * The REST JSON of the event `alias` (a row of `events`) as a jsonb expression: a webhook payload's
 * `data`, read at send time. The same object as toEventJson writes (test/webhooks/payload.test.ts).
 */
export function eventJsonSql(alias: string): string {
  return `jsonb_build_object(${FIELDS.map((f) => `'${f.field}', ${jsonSql(f.kind, `${alias}.${f.column}`)}`).join(", ")})`;
}

// The message and its JSON, precomputed per field: a code per kind, read in a loop.
const MSG_PLAIN = 0;
const MSG_OPTIONAL = 1;
const MSG_TIME = 2;
function messageCode(kind: FieldKind): number {
  switch (kind) {
    case "uuid":
    case "text":
    case "object":
      return MSG_PLAIN;
    case "optionalText":
      return MSG_OPTIONAL;
    case "time":
      return MSG_TIME;
    default:
      return assertNever(kind, "event field kind");
  }
}
const NAMES: readonly string[] = EVENT_FIELD_NAMES;
const CODES = FIELDS.map((f) => messageCode(f.kind));

/** A record's values by field name, for the loops over the table. */
export function fieldsOf(r: EventRecord): Record<string, unknown> {
  return r;
}

function convert(r: EventRecord, unset: null | undefined): Record<string, unknown> {
  const held = fieldsOf(r);
  const out: Record<string, unknown> = {};
  for (let i = 0; i < NAMES.length; i++) {
    const v = held[NAMES[i]];
    const code = CODES[i];
    out[NAMES[i]] = code === MSG_TIME ? (v as Date).toISOString() : code === MSG_OPTIONAL ? (v ?? unset) : v;
  }
  return out;
}

/** The Event message of a stored event. */
export function toEventMessage(r: EventRecord): EventMessage {
  return convert(r, undefined) as EventMessage;
}

/** The event as the REST JSON of its message (unset optional fields `null`, the message's key order). */
export function toEventJson(r: EventRecord): EventJson {
  return convert(r, null) as EventJson;
}

/** A filter alias: the column it names and how its values compare (analytics/fields.ts). */
export interface ColumnAlias {
  column: EventColumn;
  valueType: "text" | "time";
}

function aliasType(kind: FieldKind): "text" | "time" | null {
  switch (kind) {
    case "uuid":
    case "text":
    case "optionalText":
      return "text";
    case "time":
      return "time";
    case "object":
      return null;
    default:
      return assertNever(kind, "event field kind");
  }
}

/** Every filter alias of the table (a Map: a field named `constructor` is no member of it). */
export const COLUMN_ALIASES: ReadonlyMap<string, ColumnAlias> = new Map(
  EVENT_RECORD.flatMap((f) => {
    const valueType = aliasType(f.kind);
    return valueType === null ? [] : f.aliases.map((a): [string, ColumnAlias] => [a, { column: f.column, valueType }]);
  }),
);

/** The JSON object fields (data, context, tags): addressed by paths in filters and CSV columns. */
export type ObjectField = Extract<Fields, { kind: "object" }>["field"];
export const OBJECT_FIELDS: readonly ObjectField[] = EVENT_RECORD.flatMap((f) =>
  f.kind === "object" ? [f.field] : [],
);
export const isObjectField = (v: string): v is ObjectField => (OBJECT_FIELDS as readonly string[]).includes(v);
/** The column of a JSON object field (a filter's `data.a.b` reads `data`), undefined for any other name. */
export type ObjectColumn = Extract<Fields, { kind: "object" }>["column"];
const OBJECT_COLUMN = new Map<string, ObjectColumn>(
  EVENT_RECORD.flatMap((f): [string, ObjectColumn][] => (f.kind === "object" ? [[f.field, f.column]] : [])),
);
export const objectColumn = (field: string): ObjectColumn | undefined => OBJECT_COLUMN.get(field);

/** The fields written as one CSV cell each (every field but the JSON objects), and the default ones. */
export type ScalarField = Exclude<EventFieldName, ObjectField>;
export const SCALAR_FIELDS: readonly ScalarField[] = EVENT_RECORD.flatMap((f) =>
  f.kind === "object" ? [] : [f.field],
);
export const CSV_DEFAULT_FIELDS: readonly ScalarField[] = EVENT_RECORD.flatMap((f) =>
  f.kind !== "object" && f.csvDefault ? [f.field] : [],
);
