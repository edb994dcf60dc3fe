import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { textPattern } from "../shared/text.js";

// Proto messages -> JSON Schema (2020-12, as OpenAPI 3.1 uses), following the REST JSON the
// transcoder reads (src/transcoding/decode.ts) and writes (src/transcoding/json.ts):
// - output: every field is present (defaults included); an unset `optional` scalar and an unset
//   message are `null`; 64-bit integers are JSON numbers; Struct/Value/ListValue are plain JSON;
// - input: proto3 JSON decoded strictly; nothing is required by the decoder (handlers validate),
//   an `optional` field may be `null`, a key that is no field is refused (`additionalProperties`).

export type Schema = Record<string, unknown>;
export type Mode = "output" | "input";

export interface SchemaContext {
  /** components.schemas, filled as messages are reached. */
  schemas: Record<string, Schema>;
  /** Comments of a proto element by full name (`pkg.Msg`, `pkg.Msg.field`). */
  describe(fullName: string): string | undefined;
}

const JSON_WKT: Record<string, Schema> = {
  "google.protobuf.Struct": { type: "object", additionalProperties: true, description: "Any JSON object." },
  "google.protobuf.Value": { description: "Any JSON value." },
  "google.protobuf.ListValue": { type: "array", items: {}, description: "Any JSON array." },
};

/** Component name of a message in a mode: `Account`, `AccountInput`; other packages keep their full name. */
function componentName(msg: DescMessage, mode: Mode): string {
  const base = msg.typeName.startsWith("vigil.v1.") ? msg.typeName.slice("vigil.v1.".length) : msg.typeName;
  return mode === "input" ? `${base}Input` : base;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/**
 * Every string a request sends passes the storable-input check (src/shared/message-check.ts): no
 * NUL (nor lone surrogates, which JSON Schema cannot name). Stated on input strings without a
 * pattern of their own.
 */
const STORABLE_TEXT = textPattern(false, false);

/** An input string's schema: STORABLE_TEXT unless it has a pattern, format or enum already. */
export function storable(s: Schema): Schema {
  const t = s.type;
  const isString = t === "string" || (Array.isArray(t) && t.includes("string"));
  if (!isString || s.pattern !== undefined || s.enum !== undefined || s.contentEncoding !== undefined) return s;
  return { ...s, pattern: STORABLE_TEXT };
}

export function scalarSchema(type: ScalarType): Schema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    // The ranges the decoder refuses beyond (a JSON client may not know what `format` implies).
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32", minimum: -(2 ** 31), maximum: 2 ** 31 - 1 };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0, maximum: 2 ** 32 - 1 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      // Written as a plain JSON number (not proto3 JSON's string): exact up to 2^53.
      return { type: "integer", format: "int64", minimum: -MAX_SAFE, maximum: MAX_SAFE };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "integer", format: "int64", minimum: 0, maximum: MAX_SAFE };
  }
}

function nullable(s: Schema): Schema {
  if (typeof s.type === "string") return { ...s, type: [s.type, "null"] };
  if (s.$ref) return { anyOf: [{ $ref: s.$ref }, { type: "null" }] };
  if (s.type === undefined) return s; // any JSON value already admits null
  return { anyOf: [s, { type: "null" }] };
}

/** A reference to a message's component (the component is built on first use). */
export function messageRef(msg: DescMessage, mode: Mode, ctx: SchemaContext): Schema {
  const wkt = JSON_WKT[msg.typeName];
  // A request's object keys pass the storable-text check too (src/shared/json.ts).
  if (wkt && wkt.type === "object" && mode === "input") return { ...wkt, propertyNames: { pattern: STORABLE_TEXT } };
  if (wkt) return { ...wkt };
  const name = componentName(msg, mode);
  if (!(name in ctx.schemas)) {
    ctx.schemas[name] = {}; // placeholder: recursive messages refer to it
    ctx.schemas[name] = messageSchema(msg, mode, ctx);
  }
  return { $ref: `#/components/schemas/${name}` };
}

function elementSchema(
  field: DescField,
  kind: "scalar" | "enum" | "message",
  mode: Mode,
  ctx: SchemaContext,
  scalar?: ScalarType,
  msg?: DescMessage,
): Schema {
  if (kind === "scalar") {
    const s = scalarSchema(scalar ?? ScalarType.STRING);
    return mode === "input" ? storable(s) : s;
  }
  // Enums are avoided in Vigil's protos (architecture.md); the writer emits their number.
  if (kind === "enum") return { type: "integer", description: `enum ${field.enum?.typeName ?? ""}` };
  return messageRef(msg!, mode, ctx);
}

/** The schema of one field, in the given mode. */
export function fieldSchema(field: DescField, mode: Mode, ctx: SchemaContext): Schema {
  let s: Schema;
  switch (field.fieldKind) {
    case "scalar":
      s = scalarSchema(field.scalar);
      if (mode === "input") s = storable(s);
      // Output: unset optional scalars are null. Input: null means unset, for every field (proto3
      // JSON reads null as the field's default).
      if (mode === "input" || field.presence !== FeatureSet_FieldPresence.IMPLICIT || field.oneof) s = nullable(s);
      break;
    case "enum":
      s = elementSchema(field, "enum", mode, ctx);
      if (mode === "input" || field.presence !== FeatureSet_FieldPresence.IMPLICIT || field.oneof) s = nullable(s);
      break;
    case "message":
      // An unset message is written as null (and may be sent as null).
      s = nullable(messageRef(field.message, mode, ctx));
      break;
    case "list":
      s = {
        type: "array",
        items: elementSchema(
          field,
          field.listKind,
          mode,
          ctx,
          field.listKind === "scalar" ? field.scalar : undefined,
          field.listKind === "message" ? field.message : undefined,
        ),
      };
      // Input: null is the empty list (proto3 JSON reads null as a field's default); never written.
      if (mode === "input") s.type = ["array", "null"];
      break;
    case "map":
      s = {
        type: "object",
        additionalProperties: elementSchema(
          field,
          field.mapKind,
          mode,
          ctx,
          field.mapKind === "scalar" ? field.scalar : undefined,
          field.mapKind === "message" ? field.message : undefined,
        ),
      };
      if (mode === "input") s.type = ["object", "null"];
      break;
  }
  const description = ctx.describe(`${field.parent.typeName}.${field.name}`);
  if (description) s = { ...s, description }; // 3.1: keywords beside $ref apply too
  return s;
}

/**
 * A message's object schema. Output: every field is required (the writer emits all of them) and
 * nothing else appears. Input: nothing else is accepted; `omit` leaves out fields taken from the path.
 */
export function messageSchema(
  msg: DescMessage,
  mode: Mode,
  ctx: SchemaContext,
  omit: ReadonlySet<string> = new Set(),
): Schema {
  const properties: Record<string, Schema> = {};
  for (const f of msg.fields) {
    if (omit.has(f.name)) continue;
    properties[f.jsonName] = fieldSchema(f, mode, ctx);
  }
  const s: Schema = { type: "object", properties };
  if (mode === "output") s.required = Object.keys(properties);
  // Output: nothing else is written. Input: any other key (a path field too) is a 400 naming it.
  s.additionalProperties = false;
  const description = ctx.describe(msg.typeName);
  if (description) s.description = description;
  return s;
}
