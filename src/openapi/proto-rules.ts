import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fromBinary, type DescMessage } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema, type DescriptorProto } from "@bufbuild/protobuf/wkt";
import type { ServiceBinding } from "../shared/feature.js";
import { ALSO_REFUSED, BATCH_ITEM } from "../shared/validate.js";
import { ruleSchema } from "./rules.js";
import type { Schema } from "./schema.js";

// The proto comments state the rules the server enforces, generated from the same zod rules the
// handlers validate with (bind's `rules`) and that gen/openapi.json states as keywords
// (src/openapi/rules.ts): each request field a rule constrains gets `// Rule: ...` lines above its
// declaration, rewritten by `npm run generate` (before `buf generate`, so gen/'s JSDoc carries them
// too) and checked by test/clients/openapi-rules.test.ts. The lines are generated: edit the zod rule,
// not the comment. The OpenAPI descriptions leave them out (the keywords say the same).

/** The mark of a generated line; comments.ts drops these lines from the OpenAPI descriptions. */
export const RULE_MARK = "Rule:";
const RULE_LINE = /^\s*\/\/ Rule: /;

const s = (v: unknown): string => JSON.stringify(v);

/** What one field's rule says, in words: the lines of its comment (without the mark). */
function describeRule(given: Schema, required: boolean): string[] {
  const alts = Array.isArray(given.anyOf) ? (given.anyOf as Schema[]).filter((x) => x.type !== "null") : [];
  const nullable = Array.isArray(given.anyOf) && alts.length < (given.anyOf as Schema[]).length;
  const r: Schema = alts.length === 1 ? { ...alts[0], ...given, anyOf: undefined } : given;
  const out: string[] = [];
  const what: string[] = [];
  if (required) what.push("required");
  else if (nullable) what.push("optional, null allowed");
  if (r.type === "integer") what.push("an integer");
  if (Array.isArray(r.enum)) what.push(`one of ${(r.enum as unknown[]).map(s).join(", ")}`);
  const range = (lo: unknown, hi: unknown, unit: string) => {
    if (lo !== undefined && hi !== undefined) what.push(`${s(lo)} to ${s(hi)} ${unit}`.trim());
    else if (lo !== undefined) what.push(`at least ${s(lo)} ${unit}`.trim());
    else if (hi !== undefined) what.push(`at most ${s(hi)} ${unit}`.trim());
  };
  range(r.minimum, r.maximum, "");
  if (r.exclusiveMinimum !== undefined) what.push(`greater than ${s(r.exclusiveMinimum)}`);
  if (r.exclusiveMaximum !== undefined) what.push(`less than ${s(r.exclusiveMaximum)}`);
  range(r.minLength, r.maxLength, "characters");
  range(r.minItems, r.maxItems, "items");
  if (r.uniqueItems === true) what.push("no duplicates");
  if (typeof r.format === "string") what.push(`format ${r.format}`);
  if (r.default !== undefined) what.push(`default ${s(r.default)}`);
  if (what.length) out.push(what.join("; ") + ".");
  if (typeof r.pattern === "string") out.push(`matches ${r.pattern}`);
  const items = r.items as Schema | undefined;
  if (items && typeof items === "object" && !items[BATCH_ITEM] && !items.properties) {
    const each = describeRule(items, false);
    if (each.length) out.push(`each item: ${each.join(" ")}`);
  }
  const also = r[ALSO_REFUSED];
  if (Array.isArray(also)) for (const a of also) out.push(`also refused: ${String(a)}.`);
  return out;
}

/** Per proto field (full name, `vigil.v1.Msg.field`), the rule lines of every RPC whose rule constrains it. */
export function ruleNotes(bindings: ServiceBinding[]): Map<string, string[]> {
  const notes = new Map<string, Map<string, string[]>>();
  const note = (field: string, rpc: string, lines: string[]) => {
    if (!lines.length) return;
    if (!notes.has(field)) notes.set(field, new Map());
    notes.get(field)!.set(rpc, lines);
  };
  const visit = (msg: DescMessage, rule: Schema, rpc: string, depth: number) => {
    const props = (rule.properties ?? {}) as Record<string, Schema>;
    const required = new Set((rule.required ?? []) as string[]);
    for (const f of msg.fields) {
      const fr = props[f.jsonName];
      if (!fr) continue;
      note(`${msg.typeName}.${f.name}`, rpc, describeRule(fr, required.has(f.jsonName)));
      // A message field with rules of its own (a time range's start and end): its fields too.
      const inner = Array.isArray(fr.anyOf) ? (fr.anyOf as Schema[]).find((x) => x.properties) : fr;
      if (f.message && inner?.properties && depth < 3) visit(f.message, inner, rpc, depth + 1);
      const items = fr.items as Schema | undefined;
      if (f.message && items?.properties && depth < 3) visit(f.message, items, rpc, depth + 1);
    }
  };
  for (const b of bindings)
    for (const m of b.desc.methods) {
      const zod = b.rules?.[m.localName];
      if (zod) visit(m.input, ruleSchema(zod), m.name, 0);
    }
  // A message several RPCs read with different rules says which RPC each line is for.
  const out = new Map<string, string[]>();
  for (const [field, byRpc] of notes) {
    const distinct = new Set([...byRpc.values()].map((l) => l.join("\n")));
    out.set(
      field,
      distinct.size === 1
        ? [...byRpc.values()][0]
        : [...byRpc]
            .sort(([a], [b]) => a.localeCompare(b))
            .flatMap(([rpc, lines]) => lines.map((l) => `(${rpc}) ${l}`)),
    );
  }
  return out;
}

/**
 * The proto files as they should read: every generated `// Rule:` line dropped, and the current
 * ones written above each noted field's declaration. Returns the files (path relative to `root`)
 * whose text changes, with their new text.
 */
export function protoRuleFiles(root: string, bufBin: string, notes: Map<string, string[]>): Map<string, string> {
  const image = execFileSync(bufBin, ["build", "-o", "-#format=binpb"], { cwd: root, maxBuffer: 64 << 20 });
  const set = fromBinary(FileDescriptorSetSchema, image);
  const changed = new Map<string, string>();
  for (const file of set.file) {
    if (!file.name.startsWith("vigil/")) continue;
    const spans = new Map(
      (file.sourceCodeInfo?.location ?? []).map((l) => [l.path.join("."), l.span[0]] as [string, number]),
    );
    const insert = new Map<number, string[]>();
    const walk = (msgs: DescriptorProto[], prefix: string, at: number[]) =>
      msgs.forEach((m, i) => {
        const name = `${prefix}.${m.name}`;
        const mp = [...at, i];
        m.field.forEach((f, k) => {
          const lines = notes.get(`${name}.${f.name}`);
          const line = spans.get([...mp, 2, k].join("."));
          if (lines && line !== undefined) insert.set(line, lines);
        });
        walk(m.nestedType, name, [...mp, 3]);
      });
    walk(file.messageType, file.package, [4]);
    const file0 = path.join(root, "proto", file.name);
    const before = readFileSync(file0, "utf8");
    const src = before.split("\n");
    const out: string[] = [];
    src.forEach((text, n) => {
      const lines = insert.get(n);
      if (lines) {
        const indent = /^\s*/.exec(text)![0];
        for (const l of lines) out.push(`${indent}// ${RULE_MARK} ${l}`);
      }
      if (!RULE_LINE.test(text)) out.push(text);
    });
    const after = out.join("\n");
    if (after !== before) changed.set(path.join("proto", file.name), after);
  }
  return changed;
}

/** `tsx src/openapi/proto-rules.ts`: rewrites the proto files' rule lines (`npm run generate` runs it first). */
export function writeProtoRules(root: string, bufBin: string, notes: Map<string, string[]>): string[] {
  const files = protoRuleFiles(root, bufBin, notes);
  for (const [rel, text] of files) writeFileSync(path.join(root, rel), text);
  return [...files.keys()];
}
