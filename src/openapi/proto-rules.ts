import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fromBinary, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema, type DescriptorProto } from "@bufbuild/protobuf/wkt";
import type { ServiceBinding } from "../shared/feature.js";
import { ALSO_REFUSED, BATCH_ITEM } from "../shared/validate.js";
import { validateOptions } from "./proto-validate.js";
import { nonNull, ruleSchema } from "./rules.js";
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
  const nullable = Array.isArray(given.anyOf) && (given.anyOf as Schema[]).some((x) => x.type === "null");
  const r = nonNull(given);
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

/** One request field a handler's rule constrains, as the walk over the bindings meets it. */
export interface FieldRule {
  msg: DescMessage;
  field: DescField;
  rule: Schema;
  required: boolean;
  rpc: string;
}

/** Each request field a bound zod rule constrains, nested message fields included. */
export function eachFieldRule(bindings: ServiceBinding[], fn: (r: FieldRule) => void): void {
  const visit = (msg: DescMessage, rule: Schema, rpc: string, depth: number) => {
    const props = (rule.properties ?? {}) as Record<string, Schema>;
    const required = new Set((rule.required ?? []) as string[]);
    for (const f of msg.fields) {
      const fr = props[f.jsonName];
      if (!fr) continue;
      fn({ msg, field: f, rule: fr, required: required.has(f.jsonName), rpc });
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
}

/** Per proto field (full name, `vigil.v1.Msg.field`), the rule lines of every RPC whose rule constrains it. */
export function ruleNotes(bindings: ServiceBinding[]): Map<string, string[]> {
  const notes = new Map<string, Map<string, string[]>>();
  eachFieldRule(bindings, ({ msg, field, rule, required, rpc }) => {
    const lines = describeRule(rule, required);
    if (!lines.length) return;
    const name = `${msg.typeName}.${field.name}`;
    if (!notes.has(name)) notes.set(name, new Map());
    notes.get(name)!.set(rpc, lines);
  });
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
 * Per proto field, its `(buf.validate.field)` options (src/openapi/proto-validate.ts). A message
 * several RPCs read with different rules cannot carry both in its descriptor: that fails here.
 */
export function ruleOptions(bindings: ServiceBinding[]): Map<string, string[]> {
  const out = new Map<string, { rpc: string; options: string[] }>();
  eachFieldRule(bindings, ({ msg, field, rule, required, rpc }) => {
    const options = validateOptions(field, rule, required);
    const name = `${msg.typeName}.${field.name}`;
    const seen = out.get(name);
    if (seen && seen.options.join() !== options.join())
      throw new Error(`${name}: ${seen.rpc} and ${rpc} give it different rules; a descriptor holds one`);
    out.set(name, { rpc, options });
  });
  return new Map([...out].filter(([, v]) => v.options.length).map(([k, v]) => [k, v.options]));
}

/** What a field's declaration gets (keyed by its first line): rule lines above it, and its new text up to its last line. */
interface DeclarationEdit {
  lines?: string[];
  last: number;
  text?: string[];
}

/** The import a file with protovalidate options needs. */
const VALIDATE_IMPORT = 'import "buf/validate/validate.proto";';

/** A field declaration's text as the generator writes it: its head, then its options, if any. */
function declaration(indent: string, head: string, options: string[]): string[] {
  if (!options.length) return [`${indent}${head};`];
  return [
    `${indent}${head} [`,
    ...options.map((o, i) => `${indent}  ${o}${i < options.length - 1 ? "," : ""}`),
    `${indent}];`,
  ];
}

/** Adds or drops the validate import as the file's text needs it. */
function withImport(src: string[]): string[] {
  const uses = src.some((l) => l.includes("(buf.validate.field)"));
  const out = src.filter((l) => l !== VALIDATE_IMPORT);
  if (!uses) return out;
  const imports = out.map((l, n) => [l, n] as const).filter(([l]) => l.startsWith("import "));
  const after = imports.find(([l]) => l > VALIDATE_IMPORT);
  if (after) out.splice(after[1], 0, VALIDATE_IMPORT);
  else if (imports.length) out.splice(imports[imports.length - 1][1] + 1, 0, VALIDATE_IMPORT);
  else out.splice(out.findIndex((l) => l.startsWith("package ")) + 1, 0, "", VALIDATE_IMPORT);
  return out;
}

/**
 * The proto files as they should read: every generated `// Rule:` line dropped, the current ones
 * written above each noted field's declaration, and each field's `(buf.validate.field)` options
 * (`options`, src/openapi/proto-validate.ts) as its declaration's only options. Returns the files
 * (path relative to `root`) whose text changes, with their new text.
 */
export function protoRuleFiles(
  root: string,
  bufBin: string,
  notes: Map<string, string[]>,
  options: Map<string, string[]>,
): Map<string, string> {
  const image = execFileSync(bufBin, ["build", "-o", "-#format=binpb"], { cwd: root, maxBuffer: 64 << 20 });
  const set = fromBinary(FileDescriptorSetSchema, image);
  const changed = new Map<string, string>();
  for (const file of set.file) {
    if (!file.name.startsWith("vigil/")) continue;
    const spans = new Map(
      (file.sourceCodeInfo?.location ?? []).map((l) => [l.path.join("."), l.span] as [string, number[]]),
    );
    const file0 = path.join(root, "proto", file.name);
    const before = readFileSync(file0, "utf8");
    const src = before.split("\n");
    const edits = new Map<number, DeclarationEdit>();
    const walk = (msgs: DescriptorProto[], prefix: string, at: number[]) =>
      msgs.forEach((m, i) => {
        const name = `${prefix}.${m.name}`;
        const mp = [...at, i];
        m.field.forEach((f, k) => {
          const full = `${name}.${f.name}`;
          const span = spans.get([...mp, 2, k].join("."));
          if (!span) return;
          const [first, col] = span;
          const last = span.length === 4 ? span[2] : first;
          const end = span.length === 4 ? span[3] : span[2];
          const decl =
            first === last
              ? src[first].slice(col, end)
              : [src[first].slice(col), ...src.slice(first + 1, last), src[last].slice(0, end)].join("\n");
          const opts = options.get(full) ?? [];
          const edit: DeclarationEdit = { lines: notes.get(full), last: first };
          if (opts.length || decl.includes("(buf.validate.field)")) {
            const head = /^[^[;]*/.exec(decl)![0].trimEnd();
            // Options are the generator's alone: one `(buf.validate.field)` per line, nothing else.
            const own = (/\[([\s\S]*)\]/.exec(decl)?.[1] ?? "").split("\n");
            if (own.some((l) => l.trim() && !l.trim().startsWith("(buf.validate.field)")))
              throw new Error(`${full}: options other than buf.validate's beside a rule; not supported`);
            edit.last = last;
            const text = declaration(/^\s*/.exec(src[first])![0], head, opts);
            text[text.length - 1] += src[last].slice(end);
            edit.text = text;
          }
          if (edit.lines || edit.text) edits.set(first, edit);
        });
        walk(m.nestedType, name, [...mp, 3]);
      });
    walk(file.messageType, file.package, [4]);
    const out: string[] = [];
    for (let n = 0; n < src.length; n++) {
      const text = src[n];
      const edit = edits.get(n);
      if (edit?.lines) {
        const indent = /^\s*/.exec(text)![0];
        for (const l of edit.lines) out.push(`${indent}// ${RULE_MARK} ${l}`);
      }
      if (edit?.text) {
        out.push(...edit.text);
        n = edit.last;
      } else if (!RULE_LINE.test(text)) out.push(text);
    }
    const after = withImport(out).join("\n");
    if (after !== before) changed.set(path.join("proto", file.name), after);
  }
  return changed;
}

/** `tsx src/openapi/proto-rules.ts`: rewrites the proto files' rule lines and options (`npm run generate` runs it first). */
export function writeProtoRules(
  root: string,
  bufBin: string,
  notes: Map<string, string[]>,
  options: Map<string, string[]>,
): string[] {
  const files = protoRuleFiles(root, bufBin, notes, options);
  for (const [rel, text] of files) writeFileSync(path.join(root, rel), text);
  return [...files.keys()];
}
