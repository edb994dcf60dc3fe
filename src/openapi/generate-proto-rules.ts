import path from "node:path";
import { fileURLToPath } from "node:url";
import { probeRpcs } from "./access.js";
import { ruleNotes, ruleOptions, writeProtoRules } from "./proto-rules.js";

// `npm run generate`, before `buf generate`: writes each request field's `// Rule:` lines into
// proto/ from the handlers' zod rules (src/openapi/proto-rules.ts).

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { bindings } = await probeRpcs();
const files = writeProtoRules(
  root,
  path.join(root, "node_modules", ".bin", "buf"),
  ruleNotes(bindings),
  ruleOptions(bindings),
);
console.log(files.length ? `rule comments rewritten: ${files.join(", ")}` : "rule comments up to date");
// Features built for the probe may hold timers or sockets; nothing else is pending.
process.exit(0);
