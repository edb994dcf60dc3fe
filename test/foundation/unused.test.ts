import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

// No dead code (issue #30, point 6): the compiler reports unused locals and parameters in every
// TypeScript project of the repository, and knip (knip.jsonc names the entry points; CI runs it as
// `npm run lint:unused`) finds no unused file, export, type or dependency.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

describe("dead code", () => {
  for (const project of ["tsconfig.json", "web/tsconfig.json", "sdk/tsconfig.json"]) {
    it(`${project} has noUnusedLocals and noUnusedParameters on`, () => {
      const read = ts.readConfigFile(path.join(ROOT, project), ts.sys.readFile);
      assert.equal(read.error, undefined);
      const options = (read.config as { compilerOptions?: Record<string, unknown> }).compilerOptions ?? {};
      assert.equal(options.noUnusedLocals, true, `${project}: noUnusedLocals`);
      assert.equal(options.noUnusedParameters, true, `${project}: noUnusedParameters`);
    });
  }

  it("knip finds no unused file, export, type or dependency (npm run lint:unused)", () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, "node_modules/knip/bin/knip.js"), "--no-progress"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 120_000,
    });
    assert.equal(r.error, undefined);
    assert.equal(r.status, 0, `knip reported:\n${r.stdout}${r.stderr}`);
  });
});
