import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { badRequest } from "./errors.js";
import { jsonProblem as jsonValueProblem, problemField } from "./json.js";
import { textProblem } from "./text.js";

// One edge check over every decoded request message, whatever the protocol (REST, Connect, gRPC,
// gRPC-web): every string (fields, map keys and values, free-form JSON in Struct/Value, at any
// depth) must be storable text, and every floating-point number finite (JSON's 1e400 parses as
// Infinity; protobuf doubles can carry NaN and Infinity). A failure is a 400 naming the field by
// its JSON path, before any handler runs.

interface Problem {
  field: string;
  message: string;
}

const STRUCT = "google.protobuf.Struct";
/** JSON carried as messages (inside a Value): their own field names never appear in a path. */
const TRANSPARENT = new Set(["google.protobuf.Value", "google.protobuf.ListValue", STRUCT]);
const isMessage = (v: unknown): boolean => typeof (v as { $typeName?: unknown } | null)?.$typeName === "string";
const MAX_DEPTH = 128;

const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

/** Free-form JSON (Struct contents) goes through the one JSON-value check of src/shared/json.ts. */
function checkJson(v: unknown, path: string): Problem | undefined {
  const p = jsonValueProblem(v);
  return p ? { field: problemField(path, p), message: p.message } : undefined;
}

function checkScalar(type: ScalarType, v: unknown, path: string): Problem | undefined {
  if (type === ScalarType.STRING) {
    const why = textProblem(v as string);
    return why ? { field: path, message: why } : undefined;
  }
  if ((type === ScalarType.DOUBLE || type === ScalarType.FLOAT) && !Number.isFinite(v as number))
    return { field: path, message: "must be a finite number" };
  return undefined;
}

/** One value of a field, or one element of a list or map field, by its kind. */
function checkElement(
  kind: "scalar" | "enum" | "message",
  f: { scalar?: ScalarType; message?: DescMessage },
  v: unknown,
  path: string,
  depth: number,
): Problem | undefined {
  if (kind === "scalar") return checkScalar(f.scalar!, v, path);
  if (kind === "message")
    // A Struct field holds JSON (protobuf-es unboxes it); a Struct inside a Value stays a message.
    return f.message!.typeName === STRUCT && !isMessage(v)
      ? checkJson(v, path)
      : checkMessageAt(f.message!, v as Record<string, unknown>, path, depth + 1);
  return undefined;
}

function checkValue(f: DescField, v: unknown, path: string, depth: number): Problem | undefined {
  switch (f.fieldKind) {
    case "list": {
      const list = v as unknown[];
      for (let i = 0; i < list.length; i++) {
        const p = checkElement(f.listKind, f, list[i], `${path}[${i}]`, depth);
        if (p) return p;
      }
      return undefined;
    }
    case "map": {
      const map = v as Record<string, unknown>;
      for (const k of Object.keys(map)) {
        const why = textProblem(k);
        if (why) return { field: path, message: `key ${why}` };
        const p = checkElement(f.mapKind, f, map[k], join(path, k), depth);
        if (p) return p;
      }
      return undefined;
    }
    default:
      return checkElement(f.fieldKind, f, v, path, depth);
  }
}

function checkMessageAt(
  desc: DescMessage,
  msg: Record<string, unknown> | undefined,
  path: string,
  depth: number,
): Problem | undefined {
  if (!msg) return undefined;
  if (depth > MAX_DEPTH) return { field: path || "(body)", message: "nested too deeply" };
  for (const f of desc.fields) {
    let v: unknown;
    if (f.oneof) {
      const o = msg[f.oneof.localName] as { case?: string; value?: unknown } | undefined;
      if (o?.case !== f.localName) continue;
      v = o.value;
    } else v = msg[f.localName];
    if (v === undefined || v === null) continue;
    if (depth === 0 && isBatchList(f)) continue;
    // google.protobuf.Value's fields are named for what they hold; the path names the user's field.
    const at = TRANSPARENT.has(desc.typeName) ? path : join(path, f.jsonName);
    const p = checkValue(f, v, at, depth);
    if (p) return p;
  }
  return undefined;
}

/**
 * A `repeated google.protobuf.Value` at the top of a request is a batch (events, metrics): its items
 * are loosely typed so that the handler checks each one and answers a bad item as a per-index
 * error, never failing the whole batch. They are left to the handler.
 */
function isBatchList(f: DescField): boolean {
  return f.fieldKind === "list" && f.listKind === "message" && f.message.typeName === "google.protobuf.Value";
}

/** The first problem in a decoded message, or undefined. */
function messageProblem(desc: DescMessage, msg: unknown): Problem | undefined {
  return checkMessageAt(desc, msg as Record<string, unknown>, "", 0);
}

/** Throws the 400 for the first problem in a decoded message. */
export function assertStorableMessage(desc: DescMessage, msg: unknown): void {
  const p = messageProblem(desc, msg);
  if (p) refuse(p);
}

/**
 * The same check, and the same 400, for a REST body a handler reads as parsed JSON instead of a
 * decoded message (ServiceBinding.restJsonBody): its fields are JSON-named, so the paths agree.
 */
export function assertStorableJson(json: unknown): void {
  const p = checkJson(json, "");
  if (p) refuse(p);
}

function refuse(p: Problem): never {
  throw badRequest(`invalid value for field '${p.field}': ${p.message}`, [
    { field: p.field || "(body)", message: p.message },
  ]);
}
