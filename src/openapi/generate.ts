import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { probeRpcs } from "./access.js";
import { protoComments } from "./comments.js";
import { buildDocument } from "./document.js";

// `npm run generate`, after `buf generate`: writes gen/openapi.json (committed; CI checks drift).
// Usage: tsx src/openapi/generate.ts [out-file]

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const OPENAPI_FILE = path.join(root, "gen", "openapi.json");

const out = process.argv[2] ? path.resolve(process.argv[2]) : OPENAPI_FILE;
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as Record<string, string>;
const { version, license, author } = pkg;
const bufBin = path.join(root, "node_modules", ".bin", "buf");
const { bindings, facts } = await probeRpcs();
const doc = buildDocument({ bindings, facts, describe: protoComments(root, bufBin), version, license, author });
writeFileSync(out, JSON.stringify(doc, null, 2) + "\n");
console.log(`wrote ${path.relative(process.cwd(), out)}: ${Object.keys(doc.paths as object).length} paths`);
// Features built for the probe may hold timers or sockets; nothing else is pending.
process.exit(0);
