import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

// The dashboard's build for a test run, apart from test/helpers/dashboard.ts so that test/run.ts
// imports no test-app helper (test/helpers/app.ts installs test/helpers/uncaught.ts, which only
// reports an uncaught exception: in the runner one must end the run).

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Builds web/ with Vite into a fresh temp directory and returns it. */
export async function buildDashboard(): Promise<string> {
  const { build } = await import("vite");
  const outDir = await mkdtemp(path.join(os.tmpdir(), "vigil-dashboard-"));
  await build({
    configFile: path.join(ROOT, "web/vite.config.ts"),
    logLevel: "warn",
    build: { outDir, emptyOutDir: true },
  });
  return outDir;
}
