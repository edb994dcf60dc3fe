import { ScalarType, type DescField } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { TIMESTAMP_SHAPE } from "../shared/time.js";
import { nonNull } from "./rules.js";
import type { Schema } from "./schema.js";

// The rules of a request field as protovalidate options (`buf.validate.field`), so the descriptors
// gRPC clients hold carry what gen/openapi.json and the proto comments state. Generated from the same
// JSON Schema of the handler's zod rule (src/openapi/rules.ts) by `npm run generate`, written into
// the field's declaration by src/openapi/proto-rules.ts; test/clients/proto-validate.test.ts holds
// @bufbuild/protovalidate's verdicts to the document's.
//
// What the descriptors say, keyword by keyword:
// - required, enum (`in`), bounds, lengths (both count code points, as JSON Schema does), items,
//   unique items, pattern (rewritten for RE2, protovalidate's engine);
// - `format: date-time` as TIMESTAMP_SHAPE (the calendar and the year range stay the server's, as
//   `format` leaves them to a validator); `email` and `uuid` by the pattern the rule carries;
//   `format: uri` is not stated (the server parses with the WHATWG URL parser, RFC 3986 validators
//   differ from it both ways): the rule's scheme-and-host pattern and length are;
// - a JSON value (google.protobuf.Value, Struct, ListValue): only whether it is required;
// - proto3 cannot tell an absent field without presence (implicit) from its zero value. Such a
//   field's zero value is refused only where the rule refuses that value itself (`""` of a non-empty
//   string); otherwise the rules skip it (`IGNORE_IF_ZERO_VALUE`), as the server reads it as absent.

type Options = string[];

/**
 * JavaScript's `\s`, spelled for RE2 (whose `\s` is ASCII only), without brackets: the ASCII
 * spaces, Unicode's space separators (Zs: U+0020, U+00A0, U+1680, U+2000-200A, U+202F, U+205F,
 * U+3000), the line and paragraph separators and the byte order mark.
 */
const JS_SPACE = "\\t\\n\\x{b}\\f\\r\\p{Zs}\\x{2028}\\x{2029}\\x{feff}";

/**
 * An ECMAScript pattern of the rules as RE2 reads it (same matches): `\uXXXX` becomes `\x{XXXX}` and
 * `\s` its JavaScript set; what RE2 lacks or reads otherwise (lookaround, `.`, `\S`, `\b`) is refused,
 * so a rule written with it fails `npm run generate` instead of meaning something else.
 */
function re2Pattern(js: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < js.length; i++) {
    const c = js[i];
    if (c === "\\") {
      const n = js[i + 1];
      if (n === "u") {
        const hex = js.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new Error(`pattern ${js}: \\u needs four hex digits`);
        out += `\\x{${hex.toLowerCase().replace(/^0+(?=.)/, "")}}`;
        i += 5;
      } else if (n === "s") {
        out += inClass ? JS_SPACE : `[${JS_SPACE}]`;
        i++;
      } else if (/^[dDwWtnrf]$/.test(n) || /^[^A-Za-z0-9]$/.test(n)) {
        out += c + n;
        i++;
      } else throw new Error(`pattern ${js}: \\${n} reads differently in RE2`);
      continue;
    }
    if (!inClass && c === "(" && js[i + 1] === "?" && js[i + 2] !== ":")
      throw new Error(`pattern ${js}: RE2 has no lookaround`);
    if (!inClass && c === ".") throw new Error(`pattern ${js}: "." excludes other line ends in RE2`);
    if (c === "[" && !inClass) inClass = true;
    else if (c === "]" && inClass) inClass = false;
    out += c;
  }
  return out;
}

const text = (v: unknown): string => {
  if (typeof v === "string") return JSON.stringify(v); // ASCII after re2Pattern; JSON's escapes are proto's
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  throw new Error(`no proto text for ${JSON.stringify(v)}`);
};
const literal = (fields: [string, unknown][]): string =>
  `{${fields
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => (Array.isArray(v) ? `${k}: [${v.map(text).join(", ")}]` : `${k}: ${v}`))
    .join(", ")}}`;

/** Integer branches (`anyOf [{const 0}, {minimum 1, maximum 1000}]`) as [lo, hi] spans, merged where they touch. */
function integerSpans(alts: Schema[]): [number, number][] {
  const spans = alts
    .map((a) => (a.const !== undefined ? [a.const, a.const] : [a.minimum ?? -Infinity, a.maximum ?? Infinity]))
    .map(([lo, hi]) => [Number(lo), Number(hi)] as [number, number])
    .sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const s of spans)
    if (out.length && s[0] <= out[out.length - 1][1] + 1)
      out[out.length - 1][1] = Math.max(out[out.length - 1][1], s[1]);
    else out.push(s);
  return out;
}

/** A rule that is a union of integer spans, as a CEL rule (standard rules state one range). */
function spansRule(kind: string, spans: [number, number][]): string {
  const num = (v: number) =>
    kind === "double" || kind === "float" ? `${v}.0`.replace(/\.(\d+)\.0$/, ".$1") : String(v);
  const expr = spans
    .map(([lo, hi]) => (lo === hi ? `this == ${num(lo)}` : `(this >= ${num(lo)} && this <= ${num(hi)})`))
    .join(" || ");
  const said = spans.map(([lo, hi]) => (lo === hi ? `${lo}` : `${lo} to ${hi}`)).join(" or ");
  return `{id: "vigil.range", message: ${text(`must be ${said}`)}, expression: ${text(expr)}}`;
}

const SCALAR_RULES: Partial<Record<ScalarType, string>> = {
  [ScalarType.STRING]: "string",
  [ScalarType.INT32]: "int32",
  [ScalarType.INT64]: "int64",
  [ScalarType.UINT32]: "uint32",
  [ScalarType.UINT64]: "uint64",
  [ScalarType.DOUBLE]: "double",
  [ScalarType.FLOAT]: "float",
  [ScalarType.BOOL]: "bool",
};

/** Whether a value meets the rule's keywords on it as this generator states them (the zero-value question). */
function meets(rule: Schema, v: string | number): boolean {
  if (Array.isArray(rule.anyOf)) return (rule.anyOf as Schema[]).some((b) => meets(b, v));
  if (rule.const !== undefined && rule.const !== v) return false;
  if (Array.isArray(rule.enum) && !(rule.enum as unknown[]).includes(v)) return false;
  if (typeof v === "string") {
    const n = [...v].length;
    if (typeof rule.minLength === "number" && n < rule.minLength) return false;
    if (typeof rule.pattern === "string" && !new RegExp(rule.pattern, "u").test(v)) return false;
    if (rule.format === "date-time" && !new RegExp(TIMESTAMP_SHAPE).test(v)) return false;
    return true;
  }
  if (typeof rule.minimum === "number" && v < rule.minimum) return false;
  if (typeof rule.maximum === "number" && v > rule.maximum) return false;
  if (typeof rule.exclusiveMinimum === "number" && v <= rule.exclusiveMinimum) return false;
  if (typeof rule.exclusiveMaximum === "number" && v >= rule.exclusiveMaximum) return false;
  return true;
}

/** One scalar's standard rules (`{min_len: 1, ...}`) or a CEL rule; undefined when the rule states none protovalidate can. */
function scalarRules(kind: string, given: Schema, where: string): string | { cel: string } | undefined {
  const r = nonNull(given);
  if (Array.isArray(r.anyOf)) {
    const spans = integerSpans(r.anyOf as Schema[]);
    if (spans.length > 1) return { cel: spansRule(kind, spans) };
    return scalarRules(
      kind,
      { ...r, anyOf: undefined, type: "integer", minimum: spans[0][0], maximum: spans[0][1] },
      where,
    );
  }
  if (kind === "string") {
    let pattern = typeof r.pattern === "string" ? r.pattern : undefined;
    if (r.format === "date-time") {
      if (pattern !== undefined) throw new Error(`${where}: a date-time with a pattern of its own`);
      pattern = TIMESTAMP_SHAPE;
    } else if ((r.format === "email" || r.format === "uuid") && pattern === undefined)
      throw new Error(`${where}: format ${r.format} without the pattern that states it`);
    // An enum says it all (src/openapi/rules.ts drops the pattern beside it too).
    if (Array.isArray(r.enum)) pattern = undefined;
    const fields: [string, unknown][] = [
      ["min_len", r.minLength],
      ["max_len", r.maxLength],
      ["pattern", pattern === undefined ? undefined : text(re2Pattern(pattern))],
      ["in", r.enum],
    ];
    return fields.some(([, v]) => v !== undefined) ? literal(fields) : undefined;
  }
  if (kind === "bool") return undefined;
  if (r.type === "integer" && (kind === "double" || kind === "float"))
    throw new Error(`${where}: an integer rule over a ${kind} field`);
  // A bound the field's type already sets (an int32 up to 2^53 - 1) is the type's to say.
  const [lo, hi] = RANGE[kind] ?? [-Infinity, Infinity];
  const fields: [string, unknown][] = [
    ["gte", typeof r.minimum === "number" && r.minimum > lo ? r.minimum : undefined],
    ["lte", typeof r.maximum === "number" && r.maximum < hi ? r.maximum : undefined],
    ["gt", r.exclusiveMinimum],
    ["lt", r.exclusiveMaximum],
    ["in", r.enum],
    ["const", r.const],
  ];
  return fields.some(([, v]) => v !== undefined)
    ? literal(fields.map(([k, v]) => [k, typeof v === "number" ? text(v) : v]))
    : undefined;
}

const RANGE: Record<string, [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  int64: [-(2 ** 63), 2 ** 63 - 1],
  uint64: [0, 2 ** 64 - 1],
};

/**
 * The `(buf.validate.field)` options of one request field, from its rule's JSON Schema and whether
 * the rule requires it; `[]` when the rule states nothing the descriptors can.
 */
export function validateOptions(f: DescField, given: Schema, required: boolean): Options {
  const where = `${f.parent.typeName}.${f.name}`;
  const opt = (path: string, value: string) => `(buf.validate.field).${path} = ${value}`;
  if (f.fieldKind === "message" || f.fieldKind === "map") return required ? [opt("required", "true")] : [];
  if (f.fieldKind === "enum") throw new Error(`${where}: enum fields are not used in requests`);
  if (f.fieldKind === "list") {
    const r = nonNull(given);
    const item =
      f.listKind === "scalar" && r.items && typeof r.items === "object"
        ? scalarRules(SCALAR_RULES[f.scalar]!, r.items as Schema, `${where}[]`)
        : undefined;
    if (typeof item === "object") throw new Error(`${where}: a CEL rule on items is not supported`);
    const fields: [string, unknown][] = [
      ["min_items", r.minItems],
      ["max_items", r.maxItems],
      ["unique", r.uniqueItems === true ? "true" : undefined],
      ["items", item === undefined ? undefined : `{${SCALAR_RULES[f.scalar!]}: ${item}}`],
    ];
    const rules = fields.some(([, v]) => v !== undefined) ? literal(fields) : undefined;
    const emptyMeets = typeof r.minItems !== "number" || r.minItems <= 0;
    return presence(rules && opt("repeated", rules), required, emptyMeets);
  }
  const kind = SCALAR_RULES[f.scalar];
  if (kind === undefined) throw new Error(`${where}: no rules for scalar ${ScalarType[f.scalar]}`);
  const stated = scalarRules(kind, given, where);
  const rules =
    stated === undefined ? undefined : typeof stated === "string" ? opt(kind, stated) : opt("cel", stated.cel);
  if (f.presence !== FeatureSet_FieldPresence.IMPLICIT) {
    const out = required ? [opt("required", "true")] : [];
    return rules ? [...out, rules] : out;
  }
  return presence(rules, required, meets(nonNull(given), kind === "string" ? "" : 0));
}

/** A field without presence: its zero value is refused only where the rule refuses that value. */
function presence(rules: string | undefined, required: boolean, zeroMeets: boolean): Options {
  if (zeroMeets) return rules ? [rules] : [];
  if (required) return ["(buf.validate.field).required = true", ...(rules ? [rules] : [])];
  return rules ? ["(buf.validate.field).ignore = IGNORE_IF_ZERO_VALUE", rules] : [];
}
