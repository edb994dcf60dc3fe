// `npm run bench [suite ...]`: runs bench/<suite>.ts, each in its own process (all when none named).
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";

const dir = path.dirname(new URL(import.meta.url).pathname);
const all = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "run.ts" && !f.startsWith("_"))
  .map((f) => f.replace(/\.ts$/, ""))
  .sort();
const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const suites = wanted.length ? wanted : all;
// Flags (`npm run bench uptime -- --quick`) go to every suite run.
const flags = process.argv.slice(2).filter((a) => a.startsWith("-"));
let failed = 0;
for (const s of suites) {
  if (!all.includes(s)) {
    console.error(`unknown bench suite '${s}' (have: ${all.join(", ")})`);
    failed++;
    continue;
  }
  console.log(`\n=== bench: ${s} ===`);
  const r = spawnSync(process.execPath, ["--import", "tsx", "--expose-gc", path.join(dir, `${s}.ts`), ...flags], {
    stdio: "inherit",
  });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
