import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import type { WorkflowBundle } from "@temporalio/worker";

// The workflow bundle (webpack over workflows/, about a second of CPU per worker process) kept on
// disk under TEMPORAL_BUNDLE_DIR, named by the hash of everything that goes into it: every .ts file
// of workflows/ and src/ (workflows import src/'s pure decision functions) and the versions of the
// SDK's bundler and workflow runtime. A changed source gives another name, so a stale bundle is
// never run; the directory is the service's own (DATA_DIR by default), since its files are code a
// worker runs. Written to a temporary name and renamed: a reader sees a whole bundle or none.
// Temporal's own advice is the same: bundle ahead, then start workers with `workflowBundle`.

const require = createRequire(import.meta.url);

/** The .ts files under `dir`, relative to `root`, sorted. */
async function sources(root: string, dir: string): Promise<string[]> {
  const names = await readdir(path.join(root, dir), { recursive: true, encoding: "utf8" });
  return names
    .filter((n) => n.endsWith(".ts"))
    .map((n) => path.join(dir, n))
    .sort();
}

/** The hash naming the bundle of `workflowsPath`'s tree (root = its folder's parent). */
export async function bundleKey(workflowsPath: string): Promise<string> {
  const root = path.resolve(path.dirname(workflowsPath), "..");
  const h = createHash("sha256");
  for (const pkg of ["@temporalio/worker/package.json", "@temporalio/workflow/package.json"])
    h.update(`${pkg}@${(require(pkg) as { version: string }).version}\n`);
  for (const f of [...(await sources(root, "workflows")), ...(await sources(root, "src"))]) {
    h.update(`${f}\n`);
    h.update(await readFile(path.join(root, f)));
  }
  return h.digest("hex").slice(0, 32);
}

/** The bundle of `workflowsPath` from `dir`, or built by `build` and kept there. */
export async function cachedBundle(
  dir: string,
  workflowsPath: string,
  build: () => Promise<WorkflowBundle>,
): Promise<WorkflowBundle> {
  const file = path.join(dir, `workflows-${await bundleKey(workflowsPath)}.js`);
  const code = await readFile(file, "utf8").catch(() => undefined);
  if (code) return { code };
  const built = await build();
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
    await writeFile(tmp, built.code, { mode: 0o600 });
    await rename(tmp, file);
  } catch {
    // A read-only or full disk: the bundle serves this process; the next one builds again.
  }
  return built;
}
