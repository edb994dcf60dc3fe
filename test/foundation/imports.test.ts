import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parseCircular, parseDependencyTree, type DependencyTree } from "dpdm";

// No import cycles (issue #15, point 3): none between files of src/ and workflows/, and none
// between folders. A folder is src/<feature> or src/<feature>/<sub> (deeper files count in their
// src/<feature>/<sub>), workflows/, and src/ itself for src/main.ts. Type-only imports count as
// imports: a cycle of types still means two folders cannot be read, changed or moved apart.
// Parsed with dpdm (TypeScript's own resolver through tsconfig.json: `./x.js` is `./x.ts`).

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TSCONFIG = path.join(ROOT, "tsconfig.json");

/** The import graph of the files under `root` matching `globs` (paths relative to root), type-only imports included. */
async function importGraph(
  root: string,
  globs: string[],
): Promise<{ tree: DependencyTree; rel: (f: string) => string }> {
  const tree = await parseDependencyTree(globs, {
    cwd: root,
    context: root,
    tsconfig: TSCONFIG,
    transform: false,
    skipDynamicImports: false,
  });
  return { tree, rel: (f) => path.relative(root, path.resolve(root, f)).split(path.sep).join("/") };
}

const OURS = /^(src|workflows)\//;

/** The folder a file counts in. */
function folderOf(file: string): string {
  const parts = file.split("/");
  if (parts[0] !== "src") return parts[0];
  if (parts.length <= 2) return "src";
  return parts.slice(0, Math.min(parts.length - 1, 3)).join("/");
}

/** File-level cycles among our files, each as "a -> b -> ... -> a". */
function fileCycles(tree: DependencyTree, rel: (f: string) => string): string[] {
  return parseCircular(tree)
    .map((c) => c.map(rel))
    .filter((c) => c.every((f) => OURS.test(f)))
    .map((c) => {
      const at = c.indexOf([...c].sort()[0]); // from its first file by name: one spelling per cycle
      const from = [...c.slice(at), ...c.slice(0, at)];
      return [...from, from[0]].join(" -> ");
    });
}

/** Relative imports that did not resolve to a file (a cycle through one would go unseen). */
function unresolved(tree: DependencyTree, rel: (f: string) => string): string[] {
  const out: string[] = [];
  for (const [file, deps] of Object.entries(tree)) {
    if (!deps || !OURS.test(rel(file))) continue;
    for (const d of deps) if (d.request.startsWith(".") && d.id === null) out.push(`${rel(file)}: ${d.request}`);
  }
  return out;
}

/** Folder-level cycles: each strongly connected group of folders, with one cycle through it and a file import per step. */
function folderCycles(edges: [from: string, to: string][]): string[] {
  const graph = new Map<string, Map<string, string>>(); // folder -> (folder -> an example "file -> file")
  for (const [a, b] of edges) {
    const fa = folderOf(a);
    const fb = folderOf(b);
    if (fa === fb) continue;
    if (!graph.has(fa)) graph.set(fa, new Map());
    if (!graph.get(fa)!.has(fb)) graph.get(fa)!.set(fb, `${a} -> ${b}`);
  }
  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  // For each group, a shortest way back from its first folder to itself, shown with the imports.
  return groups.map((group) => {
    const inGroup = new Set(group);
    const start = group[0];
    const prev = new Map<string, string>();
    const queue = [start];
    let last: string | undefined;
    while (queue.length && !last) {
      const v = queue.shift()!;
      for (const w of graph.get(v)?.keys() ?? []) {
        if (!inGroup.has(w)) continue;
        if (w === start) {
          last = v;
          break;
        }
        if (!prev.has(w)) {
          prev.set(w, v);
          queue.push(w);
        }
      }
    }
    const pathTo: string[] = [last!];
    while (pathTo[0] !== start) pathTo.unshift(prev.get(pathTo[0])!);
    const steps = [...pathTo, start]
      .slice(1)
      .map((to, i) => `${pathTo[i]} -> ${to} (${graph.get(pathTo[i])!.get(to)})`);
    return `folders ${group.join(", ")}: ${steps.join("; ")}`;
  });
}

/** Every import between two of our files, as [from, to] relative paths. */
function ourEdges(tree: DependencyTree, rel: (f: string) => string): [string, string][] {
  const out: [string, string][] = [];
  for (const [file, deps] of Object.entries(tree)) {
    const from = rel(file);
    if (!deps || !OURS.test(from)) continue;
    for (const d of deps) {
      if (!d.id) continue;
      const to = rel(d.id);
      if (OURS.test(to)) out.push([from, to]);
    }
  }
  return out;
}

describe("imports", () => {
  it("no cycle between files of src/ and workflows/, nor between folders", async () => {
    const { tree, rel } = await importGraph(ROOT, ["src/**/*.ts", "workflows/**/*.ts"]);
    const files = Object.keys(tree)
      .map(rel)
      .filter((f) => OURS.test(f));
    assert.ok(files.length > 100, `parsed ${files.length} files of src/ and workflows/`);
    assert.deepEqual(unresolved(tree, rel), [], "every relative import resolves to a file");
    assert.deepEqual(fileCycles(tree, rel), [], "import cycles between files");
    assert.deepEqual(
      folderCycles(ourEdges(tree, rel)),
      [],
      "import cycles between folders (move the contract to the side that owns it)",
    );
    // dpdm skips an import marked @dpdm-ignore: none may hide a cycle.
    const ignored = files.filter((f) => readFileSync(path.join(ROOT, f), "utf8").includes("@dpdm-ignore"));
    assert.deepEqual(ignored, [], "no import is hidden from the check");
  });

  it("the check sees cycles, through type-only imports too (a fixture tree)", async () => {
    // src/a/x.ts -> src/b/y.ts (type only) -> src/a/z.ts: no file cycle, but folders a <-> b;
    // src/c/p.ts <-> src/c/q.ts (type only one way): a file cycle inside one folder;
    // src/d/e/f.ts -> src/d/g.ts -> src/d/e/h.ts: a sub-folder is a folder of its own.
    const dir = mkdtempSync(path.join(os.tmpdir(), "vigil-imports-"));
    try {
      const put = (file: string, text: string) => {
        mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        writeFileSync(path.join(dir, file), text);
      };
      put("src/a/x.ts", `import type { Y } from "../b/y.js";\nexport const x = (y: Y) => y;\n`);
      put("src/a/z.ts", `export interface Z { z: number }\n`);
      put("src/b/y.ts", `import type { Z } from "../a/z.js";\nexport type Y = Z;\n`);
      put("src/c/p.ts", `import { q } from "./q.js";\nexport const p = () => q;\nexport interface P { p: number }\n`);
      put("src/c/q.ts", `import type { P } from "./p.js";\nexport const q = (v: P) => v;\n`);
      put("src/d/e/f.ts", `import { g } from "../g.js";\nexport const f = g;\n`);
      put("src/d/g.ts", `import { h } from "./e/h.js";\nexport const g = h;\n`);
      put("src/d/e/h.ts", `export const h = 1;\n`);
      put("src/main.ts", `import { x } from "./a/x.js";\nexport default x;\n`);
      const { tree, rel } = await importGraph(dir, ["src/**/*.ts"]);
      assert.deepEqual(unresolved(tree, rel), []);
      assert.deepEqual(fileCycles(tree, rel), ["src/c/p.ts -> src/c/q.ts -> src/c/p.ts"]);
      assert.deepEqual(folderCycles(ourEdges(tree, rel)), [
        "folders src/a, src/b: src/a -> src/b (src/a/x.ts -> src/b/y.ts); src/b -> src/a (src/b/y.ts -> src/a/z.ts)",
        "folders src/d, src/d/e: src/d -> src/d/e (src/d/g.ts -> src/d/e/h.ts); src/d/e -> src/d (src/d/e/f.ts -> src/d/g.ts)",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("counts files in their folder", () => {
    assert.equal(folderOf("src/main.ts"), "src");
    assert.equal(folderOf("src/events/ingest.ts"), "src/events");
    assert.equal(folderOf("src/analytics/blocks/engine.ts"), "src/analytics/blocks");
    assert.equal(folderOf("src/a/b/c/d.ts"), "src/a/b");
    assert.equal(folderOf("workflows/uptime.ts"), "workflows");
  });

  it("loads the Temporal SDK and the Redis client only where used: type-only or dynamic imports in src/", () => {
    // A node without TEMPORAL_ADDRESS or REDIS_URL never loads them (about 0.4 s of every start).
    const files = readdirSync(path.join(ROOT, "src"), { recursive: true, encoding: "utf8" }).filter((f) =>
      f.endsWith(".ts"),
    );
    const offenders = files.flatMap((f) => lazyOffenders(f, readFileSync(path.join(ROOT, "src", f), "utf8")));
    assert.deepEqual(offenders, []);
    assert.deepEqual(
      lazyOffenders(
        "x.ts",
        'import { Client } from "@temporalio/client";\nimport type { W } from "@temporalio/worker";',
      ),
      ['x.ts: import { Client } from "@temporalio/client"'],
    );
  });
});

/** Value imports (not `import type`) of the packages only loaded where used. */
function lazyOffenders(file: string, text: string): string[] {
  const re = /^import\s+(?!type\s)[^;]*?from\s+"(@temporalio\/(?:client|worker|proto)|redis)"/gm;
  return [...text.matchAll(re)].map((m) => `${file}: ${m[0]}`);
}
