import type { JsonValue } from "@bufbuild/protobuf";
import type { Value } from "@bufbuild/protobuf/wkt";
import { badRequest } from "./errors.js";

// google.protobuf.Value arrives as a message (protobuf-es does not unbox Value): back to JSON for
// the filter parser. protobuf-es's own toJson throws a plain Error on NaN/Infinity (a 500); a
// double can be either over Connect/gRPC, and REST's JSON.parse turns `1e400` into Infinity. Here
// they are a 400 naming the place. Objects are built with defined keys, so a key such as
// `__proto__` stays a key (the parser then names it as unknown).

export function valueToJson(v: Value | undefined, path = "filters"): JsonValue | undefined {
  if (v === undefined || v.kind.case === undefined) return undefined;
  return convert(v, path);
}

function convert(v: Value, path: string): JsonValue {
  const k = v.kind;
  switch (k.case) {
    case "numberValue":
      if (!Number.isFinite(k.value))
        throw badRequest(`${path}: must be a finite number`, [{ field: path, message: "must be a finite number" }]);
      return k.value;
    case "stringValue":
    case "boolValue":
      return k.value;
    case "listValue":
      return k.value.values.map((x, i) => convert(x, `${path}[${i}]`));
    case "structValue": {
      const o: { [key: string]: JsonValue } = {};
      for (const [key, x] of Object.entries(k.value.fields)) {
        Object.defineProperty(o, key, {
          value: convert(x, `${path}.${key}`),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return o;
    }
    default:
      // nullValue, or a Value with no kind inside a list or struct: JSON null.
      return null;
  }
}
