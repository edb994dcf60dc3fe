import type { DescMessage } from "@bufbuild/protobuf";
import { ScalarType, isMessage, toJson } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";

// Message -> REST JSON, the spec's way rather than proto3 JSON's:
// - unset `optional` scalars and unset message fields are `null` (not omitted),
// - 64-bit integers are plain JSON numbers (not strings),
// - Struct fields are plain JSON in protobuf-es and pass through; Value / ListValue messages are
//   written as the JSON they hold,
// - every field is emitted, defaults included.

const JSON_WKT = new Set(["google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"]);

function scalarOut(type: ScalarType, v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (type === ScalarType.BYTES && v instanceof Uint8Array) return Buffer.from(v).toString("base64");
  if (typeof v === "number" && !Number.isFinite(v)) return null;
  return v;
}

function valueOut(kind: "scalar" | "enum" | "message", v: unknown, msg?: DescMessage, scalar?: ScalarType): unknown {
  if (v === undefined || v === null) return null;
  if (kind === "scalar") return scalarOut(scalar ?? ScalarType.STRING, v);
  if (kind === "enum") return v;
  if (msg && JSON_WKT.has(msg.typeName)) {
    if (isMessage(v, ValueSchema)) return toJson(ValueSchema, v);
    if (isMessage(v, ListValueSchema)) return toJson(ListValueSchema, v);
    return v;
  }
  if (msg) return messageToRestJson(msg, v as Record<string, unknown>);
  return v;
}

export function messageToRestJson(schema: DescMessage, message: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of schema.fields) {
    const v = field.oneof ? undefined : message[field.localName];
    switch (field.fieldKind) {
      case "scalar":
        out[field.jsonName] = v === undefined ? null : scalarOut(field.scalar, v);
        break;
      case "enum":
        out[field.jsonName] = v ?? null;
        break;
      case "message":
        out[field.jsonName] = valueOut("message", v, field.message);
        break;
      case "list": {
        const arr = (v as unknown[] | undefined) ?? [];
        out[field.jsonName] = arr.map((e) =>
          field.listKind === "message"
            ? valueOut("message", e, field.message)
            : valueOut(field.listKind, e, undefined, field.listKind === "scalar" ? field.scalar : undefined),
        );
        break;
      }
      case "map": {
        const obj = (v as Record<string, unknown> | undefined) ?? {};
        const m: Record<string, unknown> = {};
        for (const [k, e] of Object.entries(obj)) {
          m[k] =
            field.mapKind === "message"
              ? valueOut("message", e, field.message)
              : valueOut(field.mapKind, e, undefined, field.mapKind === "scalar" ? field.scalar : undefined);
        }
        out[field.jsonName] = m;
        break;
      }
    }
  }
  for (const oneof of schema.oneofs) {
    const sel = message[oneof.localName] as { case?: string; value?: unknown } | undefined;
    if (!sel?.case) continue;
    const field = oneof.fields.find((f) => f.localName === sel.case);
    if (!field) continue;
    out[field.jsonName] =
      field.fieldKind === "message"
        ? valueOut("message", sel.value, field.message)
        : field.fieldKind === "scalar"
          ? scalarOut(field.scalar, sel.value)
          : sel.value;
  }
  return out;
}
