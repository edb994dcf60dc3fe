import { z } from "zod";
import { ALSO_REFUSED, BATCH_ITEM } from "../shared/validate.js";
import type { Schema } from "./schema.js";

// The rules a handler enforces with zod (`bind(..., { rules })`, src/shared/feature.ts), stated in
// the document: the zod schema is turned into JSON Schema (z.toJSONSchema, the request's side of
// transforms) and its keywords are laid over the proto-derived schema of each field (the proto says
// the JSON type and nullability, zod says what is required and the bounds, enums, patterns and
// formats). Refinements zod cannot express (cross-field rules, a trimmed value's length) stay in
// prose (the proto comments) and in the 400s.

/** The keywords of a rule that constrain a value (`default`: what the server assumes when it is absent). */
const KEYWORDS = [
  "enum",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minItems",
  "maxItems",
  "uniqueItems",
  "default",
] as const;

/** A zod schema as JSON Schema, as a request may send it (`io: "input"`); no `$schema`. */
export function ruleSchema(rule: z.ZodType): Schema {
  const { $schema: _, ...s } = z.toJSONSchema(rule, { io: "input", unrepresentable: "any" }) as Schema;
  return s;
}

const types = (s: Schema): string[] =>
  Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === "string" ? [s.type] : [];

/**
 * A nullable rule's (`.nullable()`: anyOf [x, null]) non-null branch, its own keywords kept beside
 * it; several non-null branches stay an `anyOf` of them. Null stays the proto's to say.
 */
export function nonNull(rule: Schema): Schema {
  if (!Array.isArray(rule.anyOf)) return rule;
  const alts = (rule.anyOf as Schema[]).filter((s) => s.type !== "null");
  const { anyOf: _, ...rest } = rule;
  return alts.length === 1 ? { ...alts[0], ...rest } : { ...rest, anyOf: alts };
}

/** A `#/components/schemas/X` reference's schema. */
export type Resolve = (ref: string) => Schema;

/** One field's proto-derived schema with the rule's keywords on it; `required`: null is refused too. */
export function ruleOnField(base: Schema, given: Schema, required: boolean, resolve?: Resolve): Schema {
  const rule = nonNull(given);
  if (base.type === undefined && !base.$ref && !base.anyOf) {
    // Any JSON value (a google.protobuf.Value item): the rule says what it must be, null included
    // when the rule takes it and the field is not required.
    const { default: _, ...r } = required ? rule : given;
    return { ...r, ...(base.description ? { description: base.description } : {}) };
  }
  const ref = (base.$ref ?? (base.anyOf as Schema[] | undefined)?.find((s) => s.$ref)?.$ref) as string | undefined;
  if (ref && resolve && rule.properties) {
    // A message with rules of its own (metrics' `time`): its component, inlined with them.
    const { anyOf: _a, $ref: _r, ...rest } = base;
    const inner = applyRule(resolve(ref), rule, resolve);
    return required ? { ...inner, ...rest } : { anyOf: [inner, { type: "null" }], ...rest };
  }
  if (base.$ref || base.anyOf) {
    // A message field: only its presence is the rule's to say here.
    if (!required || !base.anyOf) return base;
    const { anyOf, ...rest } = base;
    const kept = (anyOf as Schema[]).filter((s) => s.type !== "null");
    return kept.length === 1 ? { ...rest, ...kept[0] } : { ...rest, anyOf: kept };
  }
  const out: Schema = { ...base };
  let t = types(base);
  if (required) t = t.filter((x) => x !== "null");
  // zod's integer over a proto double: the server refuses fractions.
  if (types(rule).includes("integer") && t.includes("number")) t = t.map((x) => (x === "number" ? "integer" : x));
  if (t.length) out.type = t.length === 1 ? t[0] : t;
  for (const k of KEYWORDS) if (rule[k] !== undefined) out[k] = rule[k];
  if (Array.isArray(out.enum) && rule.pattern === undefined) delete out.pattern; // the enum says it all
  if (Array.isArray(out.enum) && t.includes("null")) out.enum = [...(out.enum as unknown[]), null];
  if (rule.items && base.items && typeof rule.items === "object") {
    const items = rule.items as Schema;
    // A batch's items (batchItem): any JSON value, described; else the item's own rules (messages too).
    out.items = items[BATCH_ITEM]
      ? { description: items.description }
      : ruleOnField(base.items as Schema, items, true, resolve);
  }
  // A format that is not JSON Schema's own (int32...) from the proto, replaced by zod's when it has one.
  if (out.format === undefined && base.format !== undefined) out.format = base.format;
  return out;
}

/** An input object schema (`properties` by JSON name) with a method's rule laid over it. */
export function applyRule(target: Schema, rule: Schema, resolve?: Resolve): Schema {
  const props = { ...(target.properties as Record<string, Schema>) };
  const ruleProps = (rule.properties ?? {}) as Record<string, Schema>;
  const required = new Set((rule.required ?? []) as string[]);
  for (const [name, r] of Object.entries(ruleProps)) {
    if (props[name]) props[name] = ruleOnField(props[name], r, required.has(name), resolve);
  }
  const req = [...required].filter((n) => n in props);
  return { ...target, properties: props, ...(req.length ? { required: req } : {}) };
}

/**
 * What a rule says JSON Schema cannot (`alsoRefused`, src/shared/validate.ts), wherever in the rule
 * it is: the operation lists these as `x-vigil-also-refused` and in its description.
 */
export function alsoRefusedOf(rule: Schema): string[] {
  const out = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object")
      for (const [k, x] of Object.entries(v)) {
        if (k === ALSO_REFUSED && Array.isArray(x)) for (const r of x) out.add(String(r));
        else walk(x);
      }
  };
  walk(rule);
  return [...out];
}
