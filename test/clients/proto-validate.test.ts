import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { create, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence, StructSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { createValidator } from "@bufbuild/protovalidate";
import fc from "fast-check";
import { probeRpcs } from "../../src/openapi/access.js";
import { eachFieldRule, type FieldRule } from "../../src/openapi/proto-rules.js";
import type { ServiceBinding } from "../../src/shared/feature.js";
import { parseTimestamp, TIMESTAMP_SHAPE } from "../../src/shared/time.js";

// The descriptors gRPC clients hold carry the rules gen/openapi.json states (issue #30): for every
// request field a handler's rule constrains, values around each of its bounds, lengths, enums and
// patterns go through @bufbuild/protovalidate with the generated `buf.validate` options, and its
// verdict is compared with the rule's JSON Schema, evaluated here keyword by keyword (the document
// the schemathesis run holds to the server). The only differences allowed are the two the generator
// states (src/openapi/proto-validate.ts): a date-time the calendar or the year range refuses, and a
// URL the WHATWG parser refuses; in both the descriptors accept. The descriptors never refuse what
// the document accepts.

type Schema = Record<string, unknown>;
type Value = string | number | bigint | boolean | unknown[] | typeof UNSET | typeof ZERO;
const UNSET = Symbol("unset");
const ZERO = Symbol("zero value");

let bindings: ServiceBinding[];
before(async () => {
  ({ bindings } = await probeRpcs());
});

/** The rule's branch a value must meet (a nullable rule's non-null one); anyOf of several stays. */
function nonNull(s: Schema): Schema {
  if (!Array.isArray(s.anyOf)) return s;
  const alts = (s.anyOf as Schema[]).filter((x) => x.type !== "null");
  const { anyOf: _, ...rest } = s;
  return alts.length === 1 ? { ...alts[0], ...rest } : { ...rest, anyOf: alts };
}

/** JSON Schema, keyword by keyword, over what a request field can hold. */
function accepts(s: Schema, given: unknown): boolean {
  const v = typeof given === "bigint" ? Number(given) : given; // an int64 is a JSON number
  if (Array.isArray(s.anyOf)) return (s.anyOf as Schema[]).some((b) => accepts(b, v));
  if (s.const !== undefined && v !== s.const) return false;
  if (Array.isArray(s.enum) && !(s.enum as unknown[]).includes(v)) return false;
  if (typeof v === "string") {
    const n = [...v].length;
    if (typeof s.minLength === "number" && n < s.minLength) return false;
    if (typeof s.maxLength === "number" && n > s.maxLength) return false;
    if (typeof s.pattern === "string" && !new RegExp(s.pattern, "u").test(v)) return false;
    if (s.format === "date-time" && parseTimestamp(v) === undefined) return false;
    if (s.format === "uri" && !URL.canParse(v)) return false;
  }
  if (typeof v === "number") {
    const x = v;
    if (s.type === "integer" && !Number.isInteger(x)) return false;
    if (typeof s.minimum === "number" && x < s.minimum) return false;
    if (typeof s.maximum === "number" && x > s.maximum) return false;
    if (typeof s.exclusiveMinimum === "number" && x <= s.exclusiveMinimum) return false;
    if (typeof s.exclusiveMaximum === "number" && x >= s.exclusiveMaximum) return false;
  }
  if (Array.isArray(v)) {
    if (typeof s.minItems === "number" && v.length < s.minItems) return false;
    if (typeof s.maxItems === "number" && v.length > s.maxItems) return false;
    if (s.uniqueItems === true && new Set(v).size !== v.length) return false;
    const items = s.items as Schema | undefined;
    if (items && !items.properties && !v.every((x) => accepts(items, x))) return false;
  }
  return true;
}

/** Where the descriptors may accept what the document refuses (the two stated differences). */
function looser(s: Schema, v: unknown): boolean {
  const r = nonNull(s);
  if (typeof v !== "string") return false;
  if (r.format === "date-time") return new RegExp(TIMESTAMP_SHAPE).test(v) && parseTimestamp(v) === undefined;
  if (r.format === "uri") return !URL.canParse(v) && accepts({ ...r, format: undefined }, v);
  return false;
}

const FIXED = [
  ["", "a", "ab", "abc", " ", " a ", "a b", "$page", "$x", "x$", "\u0000", "a\u0000", "\u00a0", "\u3000a", "\ta"],
  ["\u1680a", "a\u2007", "\u202f", "\u205f", "\u2028", "\u2029", "\ufeff", "\u180e", "\u0085", "\u000b"],
  ["a\u0001", "a\u007f", "é", "😀", "A-b_c.d", "a--b", "-ab", "ab-", "ABC", "a".repeat(64), "a".repeat(65)],
  [
    "0190a0a0-1234-7abc-8def-0123456789ab",
    "0190A0A0-1234-7ABC-8DEF-0123456789AB",
    "0190a0a0-1234-7abc-8def-0123456789a",
  ],
  ["a@b.co", "A.B+c@x-y.io", "a@b", "@b.co", "a..b@c.io", `${"x".repeat(250)}@b.co`],
  ["http://x", "https://a.b/c?d#e", "HTTP://X", "ftp://x", "http:///x", "http://", "http://a b", "http://[::1"],
  ["2024-05-06T10:00:00Z", "2024-05-06t10:00:00.123456789+05:30", "2024-02-30T00:00:00Z", "2024-05-06 10:00:00Z"],
  ["2024-13-01T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59-00:01", "24h", "7d", "0d", "100000d"],
].flat();

/** Strings around the rule: its bounds, enum, pattern (matching and not), and fixed awkward ones. */
function strings(r: Schema, seed: number): string[] {
  const out = [...FIXED];
  for (const l of [r.minLength, r.maxLength])
    if (typeof l === "number")
      for (const n of [l - 1, l, l + 1].filter((n) => n >= 0)) out.push("a".repeat(n), "😀".repeat(n), "é".repeat(n));
  if (Array.isArray(r.enum)) for (const e of r.enum as string[]) out.push(e, e.toUpperCase(), ` ${e}`, `${e}x`);
  if (typeof r.pattern === "string") {
    const matching = fc.sample(fc.stringMatching(new RegExp(r.pattern)), { numRuns: 40, seed });
    out.push(...matching, ...matching.map((m) => `${m}\u0000`), ...matching.map((m) => ` ${m}`));
  }
  out.push(...fc.sample(fc.string({ unit: "grapheme", maxLength: 12 }), { numRuns: 30, seed }));
  return [...new Set(out)].filter((s) => s.isWellFormed());
}

function numbers(r: Schema, scalar: ScalarType): (number | bigint)[] {
  const base = [0, 1, -1, 2, 100, 1000, 2 ** 31 - 1, -(2 ** 31)];
  const alts = Array.isArray(r.anyOf) ? (r.anyOf as Schema[]) : [r];
  for (const a of alts)
    for (const b of [a.minimum, a.maximum, a.exclusiveMinimum, a.exclusiveMaximum, a.const])
      if (typeof b === "number") base.push(b - 1, b, b + 1);
  const int32 = scalar === ScalarType.INT32;
  const double = scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT;
  const vals = double ? [...base, 0.5, ...base.map((b) => b + 0.25)] : base;
  return [...new Set(vals)]
    .filter((v) => !int32 || (v >= -(2 ** 31) && v <= 2 ** 31 - 1))
    .filter((v) => double || Number.isSafeInteger(v))
    .map((v) => (scalar === ScalarType.INT64 || scalar === ScalarType.UINT64 ? BigInt(v) : v));
}

/** The values tried for one field: unset or its zero value, then values of its kind around the rule. */
function candidates(f: DescField, rule: Schema, seed: number): Value[] {
  const r = nonNull(rule);
  const absent: Value = f.fieldKind === "message" || f.presence !== FeatureSet_FieldPresence.IMPLICIT ? UNSET : ZERO;
  if (f.fieldKind === "message") return [UNSET, true];
  if (f.fieldKind === "list") {
    const items = (r.items ?? {}) as Schema;
    const pool = f.listKind === "scalar" && f.scalar === ScalarType.STRING ? strings(items, seed) : ["x"];
    const good = pool.find((s) => accepts(items, s)) ?? "x";
    const bad = pool.filter((s) => !accepts(items, s)).slice(0, 20);
    const lens = [0, 1, 2, r.minItems, r.maxItems].flatMap((n) => (typeof n === "number" ? [n - 1, n, n + 1] : []));
    const lists: unknown[][] = [...new Set(lens.filter((n) => n >= 0 && n <= 1100))].map((n) =>
      Array.from({ length: n }, (_, i) => (f.listKind === "scalar" ? `${good}${i === 0 ? "" : ""}` : i)),
    );
    if (f.listKind === "scalar") {
      lists.push(...bad.map((b) => [good, b]), [good, good]);
      lists.push(...pool.slice(0, 60).map((s) => [s]));
    }
    return [ZERO, ...lists];
  }
  if (f.scalar === ScalarType.STRING) return [absent, ...strings(r, seed)];
  if (f.scalar === ScalarType.BOOL) return [absent, true, false];
  return [absent, ...numbers(r, f.scalar!)];
}

/** The message with only `f` set to `v` (message lists: `v` empty messages or null JSON values). */
function messageWith(msg: DescMessage, f: DescField, v: Value) {
  if (v === UNSET || v === ZERO) return create(msg);
  let value: unknown = v;
  if (f.fieldKind === "message")
    value =
      f.message.typeName === "google.protobuf.Value"
        ? create(ValueSchema, { kind: { case: "nullValue", value: 0 } })
        : f.message.typeName === "google.protobuf.Struct"
          ? create(StructSchema)
          : create(f.message);
  if (f.fieldKind === "list" && f.listKind === "message")
    value = (v as unknown[]).map(() =>
      f.message.typeName === "google.protobuf.Value"
        ? create(ValueSchema, { kind: { case: "nullValue", value: 0 } })
        : create(f.message),
    );
  return create(msg, { [f.localName]: value } as never);
}

/** What the document says of `v`: unset is refused only when required; a zero value as the generator states. */
function documentAccepts(f: DescField, rule: Schema, required: boolean, v: Value): boolean {
  if (v === UNSET) return !required;
  if (f.fieldKind === "message") return true; // a JSON value's content is not in the descriptors
  const implicitZero =
    f.fieldKind === "scalar" &&
    f.presence === FeatureSet_FieldPresence.IMPLICIT &&
    (v === "" || v === 0 || v === 0n || v === false);
  if (v === ZERO || implicitZero || (Array.isArray(v) && v.length === 0)) {
    // proto3 cannot tell it from absent (src/openapi/proto-validate.ts)
    const zero =
      f.fieldKind === "list" ? [] : f.scalar === ScalarType.STRING ? "" : f.scalar === ScalarType.BOOL ? false : 0;
    return accepts(nonNull(rule), zero) || !required;
  }
  if (f.fieldKind === "list" && f.listKind !== "scalar") return accepts({ ...nonNull(rule), items: undefined }, v);
  return accepts(nonNull(rule), v);
}

const show = (v: Value) =>
  v === UNSET
    ? "unset"
    : v === ZERO
      ? "zero value"
      : JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x));

describe("protovalidate options in the descriptors (gRPC clients' copy of the rules)", () => {
  it("give the document's verdict on values around every rule of every request field", (t) => {
    const validator = createValidator();
    const mismatches: string[] = [];
    const allowed = new Map<string, number>();
    let checked = 0;
    const fields = new Set<string>();
    eachFieldRule(bindings, ({ msg, field, rule, required, rpc }: FieldRule) => {
      fields.add(`${msg.typeName}.${field.name}`);
      for (const v of candidates(field, rule, checked)) {
        const result = validator.validate(msg, messageWith(msg, field, v));
        if (result.kind === "error") throw new Error(`${rpc} ${msg.typeName}.${field.name}: ${result.error.message}`);
        const refused =
          result.kind === "invalid" &&
          result.error.violations.some(
            (x) =>
              x.field[0]?.kind === "field" &&
              x.field[0].number === field.number &&
              // the field itself or an item of it; a nested message's own fields are checked as their own
              (x.field.length === 1 || (x.field.length === 2 && x.field[1].kind === "list_sub")),
          );
        const want = documentAccepts(field, rule, required, v);
        checked++;
        if (refused === !want) continue;
        const where = `${rpc} ${msg.typeName}.${field.name} = ${show(v)}`;
        if (!refused && looser(rule, v))
          allowed.set(String(nonNull(rule).format), (allowed.get(String(nonNull(rule).format)) ?? 0) + 1);
        else
          mismatches.push(
            `${where}: descriptors ${refused ? "refuse" : "accept"}, document ${want ? "accepts" : "refuses"}`,
          );
      }
    });
    t.diagnostic(`${fields.size} fields, ${checked} values, looser as stated: ${JSON.stringify([...allowed])}`);
    assert.deepEqual(mismatches.slice(0, 20), [], `${mismatches.length} differences`);
    assert.ok(fields.size > 250, `${fields.size} fields`);
    assert.ok(checked > 20_000, `${checked} values`);
    // The stated differences occur (so the check above saw such values) and nothing else does.
    assert.deepEqual([...allowed.keys()].sort(), ["date-time", "uri"]);
  });
});
