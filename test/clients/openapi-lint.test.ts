import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, it } from "node:test";
import { OPENAPI_PATH } from "../../src/server/docs.js";

// gen/openapi.json as standard linters read it: Redocly's `recommended` rules (redocly.yaml) and
// Spectral's `spectral:oas` (.spectral.yaml), with no error and no warning. Both run from
// devDependencies, offline.

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const bin = (name: string) => path.join(root, "node_modules", ".bin", name);
const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" };

async function lint(cmd: string, args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run(bin(cmd), args, { cwd: root, env, timeout: 120_000, maxBuffer: 64 << 20 });
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    assert.fail(`${cmd} failed:\n${e.stdout ?? ""}${e.stderr ?? ""}${e.message}`);
  }
}

describe("gen/openapi.json under standard linters", () => {
  it("redocly lint (recommended): valid, no warnings", async () => {
    const out = await lint("redocly", ["lint", "--format", "json", OPENAPI_PATH]);
    const report = JSON.parse(out.slice(out.indexOf("{"), out.lastIndexOf("}") + 1)) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string }[];
    };
    const problems = report.problems.map((p) => `${p.ruleId}: ${p.message}`).join("\n");
    assert.deepEqual([report.totals.errors, report.totals.warnings], [0, 0], problems);
  });

  it("spectral lint (spectral:oas): nothing at warning level or above", async () => {
    await lint("spectral", [
      "lint",
      "--fail-severity",
      "warn",
      "--ruleset",
      path.join(root, ".spectral.yaml"),
      OPENAPI_PATH,
    ]);
  });
});
