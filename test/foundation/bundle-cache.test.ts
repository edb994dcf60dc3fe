import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { bundleKey, cachedBundle } from "../../src/temporal/bundle-cache.js";

// The workflow bundle kept on disk (src/temporal/bundle-cache.ts, TEMPORAL_BUNDLE_DIR): built once,
// loaded by the next start, built again when any source of workflows/ or src/ changes; its file
// private to the service. On a fixture tree (no Temporal, no database).

const tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-bundle-cache-"));
after(() => rm(tmp, { recursive: true, force: true }));

async function tree(): Promise<string> {
  const root = await mkdtemp(path.join(tmp, "tree-"));
  await mkdir(path.join(root, "workflows"));
  await mkdir(path.join(root, "src", "uptime"), { recursive: true });
  await writeFile(path.join(root, "workflows", "index.ts"), "export * from './scan.js';\n");
  await writeFile(path.join(root, "workflows", "scan.ts"), "export const a = 1;\n");
  await writeFile(path.join(root, "src", "uptime", "model.ts"), "export const deadline = 2;\n");
  await writeFile(path.join(root, "README.md"), "not a source\n");
  return path.join(root, "workflows", "index.ts");
}

describe("workflow bundle cache", () => {
  it("builds once, then loads the kept bundle; a changed source of workflows/ or src/ builds again", async () => {
    const entry = await tree();
    const dir = path.join(tmp, "bundles");
    let builds = 0;
    const build = async () => ({ code: `// bundle ${++builds}` });
    assert.equal((await cachedBundle(dir, entry, build)).code, "// bundle 1");
    assert.equal((await cachedBundle(dir, entry, build)).code, "// bundle 1", "loaded, not built");
    assert.equal(builds, 1);
    const [file] = await readdir(dir);
    assert.match(file, /^workflows-[0-9a-f]{32}\.js$/);
    assert.equal((await stat(path.join(dir, file))).mode & 0o777, 0o600, "private to the service");
    assert.equal((await stat(dir)).mode & 0o777, 0o700);

    const root = path.dirname(path.dirname(entry));
    await writeFile(path.join(root, "README.md"), "changed, but not a source\n");
    assert.equal((await cachedBundle(dir, entry, build)).code, "// bundle 1");
    await writeFile(path.join(root, "src", "uptime", "model.ts"), "export const deadline = 3;\n");
    assert.equal((await cachedBundle(dir, entry, build)).code, "// bundle 2", "a decision function changed");
    await writeFile(path.join(root, "workflows", "new.ts"), "export const b = 1;\n");
    assert.equal((await cachedBundle(dir, entry, build)).code, "// bundle 3", "a workflow file added");
    assert.equal((await cachedBundle(dir, entry, build)).code, "// bundle 3");
  });

  it("the key is the tree's content, not its place; an unwritable folder still gives the built bundle", async () => {
    const a = await tree();
    const b = await tree();
    assert.equal(await bundleKey(a), await bundleKey(b));
    const blocked = path.join(tmp, "a-file");
    await writeFile(blocked, "");
    const got = await cachedBundle(path.join(blocked, "bundles"), a, async () => ({ code: "// built" }));
    assert.equal(got.code, "// built");
  });
});
