import { execFileSync } from "node:child_process";
import { createFileRegistry, fromBinary, type AnyDesc } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { getComments } from "@bufbuild/protoplugin";
import { RULE_MARK } from "./proto-rules.js";

// The proto comments, for the OpenAPI descriptions. gen/ embeds descriptors without source info,
// so the comments come from `buf build` (an image with source info) of the same proto/ tree, looked
// up by full name: `vigil.v1.Msg`, `vigil.v1.Msg.field`, `vigil.v1.Service`, `vigil.v1.Service.Rpc`.

export type Describe = (fullName: string) => string | undefined;

function text(desc: Exclude<AnyDesc, { kind: "file" }>): string | undefined {
  // The generated `// Rule:` lines (proto-rules.ts) stay out: the document states them as keywords.
  const c = getComments(desc)
    .leading?.split("\n")
    .filter((l) => !l.trimStart().startsWith(RULE_MARK))
    .join("\n")
    .trim();
  if (!c) return undefined;
  // Proto comments wrap at ~100 columns: join wrapped lines, keep blank lines as paragraphs.
  return c
    .split(/\n\s*\n/)
    .map((p) =>
      p
        .split("\n")
        .map((l) => l.trim())
        .join(" "),
    )
    .join("\n\n");
}

export function protoComments(root: string, bufBin: string): Describe {
  const image = execFileSync(bufBin, ["build", "-o", "-#format=binpb"], { cwd: root, maxBuffer: 64 << 20 });
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, image));
  const byName = new Map<string, string>();
  const put = (name: string, d: Exclude<AnyDesc, { kind: "file" }>) => {
    const t = text(d);
    if (t) byName.set(name, t);
  };
  for (const file of registry.files) {
    const visitMessages = (msgs: Iterable<import("@bufbuild/protobuf").DescMessage>) => {
      for (const m of msgs) {
        put(m.typeName, m);
        for (const f of m.fields) put(`${m.typeName}.${f.name}`, f);
        visitMessages(m.nestedMessages);
      }
    };
    visitMessages(file.messages);
    for (const s of file.services) {
      put(s.typeName, s);
      for (const m of s.methods) put(`${s.typeName}.${m.name}`, m);
    }
  }
  return (name) => byName.get(name);
}
