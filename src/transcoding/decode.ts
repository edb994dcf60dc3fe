import type { DescField, DescMessage, JsonValue, Message } from "@bufbuild/protobuf";
import { ScalarType, fromJson } from "@bufbuild/protobuf";
import { badRequest } from "../shared/errors.js";
import { isJsonObject, shownKey } from "../shared/json.js";
import type { Route } from "./routes.js";

// REST request -> request message: path variables, query parameters and the JSON body are merged
// into one proto3-JSON object and decoded strictly: a wrong type is a 400 naming the field, and so
// is a key that is no field of the message, at any depth (decisions.md: a client must never lose
// data silently, e.g. Segment's `properties` sent to /v1/events). gRPC, gRPC-web and Connect
// decode with protobuf's own rules and never come here.

function fieldByName(schema: DescMessage, name: string): DescField | undefined {
  return schema.fields.find((f) => f.jsonName === name || f.name === name);
}

/** Free-form JSON (any keys): Struct, Value, ListValue. Other well-known types are not objects in JSON. */
const isFreeForm = (m: DescMessage) => m.typeName.startsWith("google.protobuf.");
/** Deeper than this, fromJson's own recursion limit answers (a 400 too); the walk never overflows. */
const MAX_DEPTH = 100;

/**
 * The first key of `json` (a message's JSON object) that names no field of `schema` (neither its
 * JSON name nor its proto name), looking into nested messages, lists and maps of messages, as a
 * path (`time.foo`, `aggregations[1].bar`); undefined when every key is a field.
 */
function unknownKey(
  schema: DescMessage,
  json: Record<string, unknown>,
  path: string,
  depth: number,
): string | undefined {
  if (depth > MAX_DEPTH) return undefined;
  const at = (key: string) => (path ? `${path}.${shownKey(key)}` : shownKey(key));
  for (const key of Object.keys(json)) {
    const f = fieldByName(schema, key);
    if (!f) return at(key);
    const v = json[key];
    if (f.fieldKind === "message" && !isFreeForm(f.message) && isJsonObject(v)) {
      const u = unknownKey(f.message, v, at(f.jsonName), depth + 1);
      if (u) return u;
    } else if (f.fieldKind === "list" && f.listKind === "message" && !isFreeForm(f.message) && Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const e: unknown = v[i];
        const u = isJsonObject(e) ? unknownKey(f.message, e, `${at(f.jsonName)}[${i}]`, depth + 1) : undefined;
        if (u) return u;
      }
    } else if (f.fieldKind === "map" && f.mapKind === "message" && !isFreeForm(f.message) && isJsonObject(v)) {
      for (const [k, e] of Object.entries(v)) {
        const u = isJsonObject(e) ? unknownKey(f.message, e, `${at(f.jsonName)}.${shownKey(k)}`, depth + 1) : undefined;
        if (u) return u;
      }
    }
  }
  return undefined;
}

function unknownField(field: string): never {
  throw badRequest(`unknown field '${field}': the request body has no such field`, [
    { field, message: "unknown field" },
  ]);
}

function coerceQueryValue(field: DescField, raw: string): JsonValue {
  const scalar =
    field.fieldKind === "scalar"
      ? field.scalar
      : field.fieldKind === "list" && field.listKind === "scalar"
        ? field.scalar
        : undefined;
  if (scalar === ScalarType.BOOL) return raw === "true" ? true : raw === "false" ? false : raw;
  if (scalar !== undefined && scalar !== ScalarType.STRING && scalar !== ScalarType.BYTES) {
    return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(raw) ? Number(raw) : raw;
  }
  return raw;
}

function describeDecodeError(schema: DescMessage, err: unknown): never {
  const text = err instanceof Error ? err.message : String(err);
  const m = /cannot decode (?:field|message) ([\w.]+?)(?:\.(\w+))? from JSON/.exec(text);
  let field = m?.[2];
  if (field) {
    const f = schema.fields.find((x) => x.name === field);
    field = f?.jsonName ?? field;
  }
  throw badRequest(
    field ? `invalid value for field '${field}'` : "request body does not match the expected shape",
    field ? [{ field, message: "wrong type or format" }] : undefined,
  );
}

/** The decoded message, and the JSON array of the route's pass-through field when the body had one. */
export interface Decoded {
  message: Message;
  jsonList?: JsonValue[];
}

/**
 * `jsonList` is a `repeated google.protobuf.Value` field to pass through: an array there is left out
 * of the decoding and returned as is (its proto3 JSON form is the JSON itself). Anything else in
 * that field is decoded normally, so it fails exactly as it would otherwise.
 * `keepBody` (a `body: "*"` route whose handler reads the parsed body itself, ServiceBinding.restJsonBody):
 * the body is checked as always (an object, no unknown keys, nothing the path gives) but not decoded;
 * the message holds only what the path gives.
 */
export function decodeRequest(
  route: Route,
  params: Record<string, string>,
  query: URLSearchParams,
  body: unknown,
  jsonList?: DescField,
  keepBody = false,
): Decoded {
  const schema = route.method.input;
  let json: Record<string, JsonValue> = {};
  if (route.body === "*") {
    // No body at all is `{}`; a JSON `null` is a body that is no object, refused like `[]` or `5`.
    if (body !== undefined) {
      if (typeof body !== "object" || body === null || Array.isArray(body))
        throw badRequest("request body must be a JSON object");
      const given = body as Record<string, JsonValue>;
      // A field bound to the path is not the body's to give: the path would silently win.
      for (const key of Object.keys(given)) {
        const f = fieldByName(schema, key);
        if (f && route.segments.some((s) => "variable" in s && s.variable === f.name))
          throw badRequest(`field '${key}' is given by the path (${route.template}), not the body`, [
            { field: key, message: "given by the path, not the body" },
          ]);
      }
      const unknown = unknownKey(schema, given, "", 0);
      if (unknown !== undefined) unknownField(unknown);
      if (!keepBody) json = { ...given };
    }
  } else if (route.body) {
    const f = fieldByName(schema, route.body);
    if (f && body !== undefined) {
      // The body is that one field: its keys are checked as the client wrote them (top level).
      if (f.fieldKind === "message" && !isFreeForm(f.message) && isJsonObject(body)) {
        const unknown = unknownKey(f.message, body, "", 0);
        if (unknown !== undefined) unknownField(unknown);
      }
      json[f.jsonName] = body as JsonValue;
    }
  }
  // A route whose body is the whole message takes its fields from the JSON body only: query
  // parameters filling body fields let a cross-site form (or a URL with a password in it) write.
  if (route.body === "*") {
    for (const key of query.keys()) {
      throw badRequest(`query parameter '${key}' is not accepted here: send fields in the JSON body`, [
        { field: key, message: "not accepted as a query parameter" },
      ]);
    }
  }
  for (const key of new Set(query.keys())) {
    const f = fieldByName(schema, key);
    if (!f) continue;
    const values = query.getAll(key);
    json[f.jsonName] =
      f.fieldKind === "list"
        ? values.map((v) => coerceQueryValue(f, v))
        : coerceQueryValue(f, values[values.length - 1]);
  }
  for (const [name, value] of Object.entries(params)) {
    const f = fieldByName(schema, name);
    if (f) json[f.jsonName] = value;
  }
  // protobuf-es names the message type, not the field, when a Struct or message field gets a
  // non-object. (Other well-known types have non-object JSON forms and are left to fromJson.)
  for (const f of schema.fields) {
    if (f.fieldKind !== "message") continue;
    const v = json[f.jsonName] ?? json[f.name];
    // A ListValue's JSON form is an array (null: not given), named here for the same reason.
    if (f.message.typeName === "google.protobuf.ListValue" && v !== undefined && v !== null && !Array.isArray(v))
      throw badRequest(`invalid value for field '${f.jsonName}'`, [
        { field: f.jsonName, message: "must be a JSON array" },
      ]);
    if (f.message.typeName.startsWith("google.protobuf.") && f.message.typeName !== "google.protobuf.Struct") continue;
    if (v !== undefined && v !== null && (typeof v !== "object" || Array.isArray(v))) {
      throw badRequest(`invalid value for field '${f.jsonName}'`, [
        { field: f.jsonName, message: "must be a JSON object" },
      ]);
    }
  }
  let list: JsonValue[] | undefined;
  if (jsonList !== undefined) {
    const key = json[jsonList.jsonName] !== undefined ? jsonList.jsonName : jsonList.name;
    if (Array.isArray(json[key])) {
      list = json[key];
      delete json[key];
    }
  }
  try {
    return { message: fromJson(schema, json), jsonList: list };
  } catch (err) {
    describeDecodeError(schema, err);
  }
}
