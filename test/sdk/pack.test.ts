// The SDK as an application gets it: `npm pack` of sdk/ (its `prepack` builds dist/, whatever was
// built before), the tarball installed into a new project (offline: the package has no
// dependencies), and that project's own code importing it in a child node process: ESM `import`,
// `import()` from a CommonJS file (the package is ESM only), and TypeScript resolving its types.
// The package is packed from a copy of sdk/ (its sources, package.json, tsconfig and README) so
// that the test never writes sdk/dist, which other runs may be reading.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";

const root = path.resolve(import.meta.dirname, "../..");
let tmp: string | undefined;
after(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** Runs a command; resolves with its stdout, rejects with its output when it fails. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { cwd, env, timeout: 120_000 }, (err, stdout, stderr) =>
      err
        ? reject(new Error(`${cmd} ${args.join(" ")} failed: ${err.message}\n${stdout}\n${stderr}`))
        : resolve(stdout),
    ),
  );
}

// The consumer's code: what an application writes, against the installed package only.
const SECRET = "whsec_pack_test";
const ESM = `import { Vigil, VigilError, verifyWebhook } from "@vigil/sdk";
import { createHmac } from "node:crypto";
const vigil = new Vigil({ apiKey: "vk_pack_test", apiUrl: "http://127.0.0.1:9" });
if (!(new VigilError("invalid", "x") instanceof Error)) throw new Error("VigilError is no Error");
const body = JSON.stringify({ id: "d1", type: "ping", createdAt: "2026-01-01T00:00:00Z", projectId: "p", data: {} });
const t = Math.floor(Date.now() / 1000);
const sig = createHmac("sha256", ${JSON.stringify(SECRET)}).update(t + "." + body).digest("hex");
const payload = await verifyWebhook(body, { "x-vigil-signature": "t=" + t + ",v1=" + sig }, ${JSON.stringify(SECRET)});
await vigil.shutdown();
console.log(JSON.stringify({ type: payload.type, queued: vigil.stats.queued }));
`;
const CJS = `import("@vigil/sdk").then((m) => {
  const vigil = new m.Vigil({ apiKey: "vk_pack_test", apiUrl: "http://127.0.0.1:9" });
  return vigil.shutdown().then(() => console.log(typeof m.verifyWebhook));
});
`;
const TS = `import { Vigil, verifyWebhook, type VigilOptions } from "@vigil/sdk";
const options: VigilOptions = { apiKey: "vk_pack_test", apiUrl: "http://127.0.0.1:9" };
const vigil: Vigil = new Vigil(options);
const check: (body: string, headers: Record<string, string>, secret: string) => Promise<{ type: string }> = verifyWebhook;
void vigil.shutdown();
void check;
`;

describe("the packed SDK", () => {
  it("npm pack builds dist/ (prepack); the tarball installs into a new project and imports there", async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-sdk-pack-"));
    // 1. A copy of the package as it is in the repository, never built.
    const pkg = path.join(tmp, "sdk");
    await mkdir(pkg);
    for (const f of ["package.json", "tsconfig.json", "README.md", "src"])
      await cp(path.join(root, "sdk", f), path.join(pkg, f), { recursive: true });
    // The workspace gives sdk/ the repository's tsc (node_modules/.bin); so does this PATH to the copy.
    const env = { ...process.env, PATH: `${path.join(root, "node_modules/.bin")}${path.delimiter}${process.env.PATH}` };
    const packs = path.join(tmp, "packs");
    await mkdir(packs);
    await run("npm", ["pack", "--pack-destination", packs, "--silent"], pkg, env);
    const tarballs = (await readdir(packs)).filter((f) => f.endsWith(".tgz"));
    assert.equal(tarballs.length, 1, `tarballs: ${tarballs}`);
    const tarball = path.join(packs, tarballs[0]);
    const listed = await run("tar", ["-tzf", tarball], tmp);
    for (const f of ["package/dist/index.js", "package/dist/index.d.ts", "package/package.json", "package/README.md"])
      assert.ok(listed.split("\n").includes(f), `${f} not in the tarball:\n${listed}`);

    // 2. A new project installs the tarball (nothing to download: the SDK has no dependencies).
    const app = path.join(tmp, "app");
    await mkdir(app);
    await writeFile(
      path.join(app, "package.json"),
      JSON.stringify({ name: "sdk-consumer", version: "1.0.0", private: true, type: "module" }),
    );
    await run("npm", ["install", tarball, "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--silent"], app);

    // 3. Its code imports the package: ESM, CommonJS (import()), and TypeScript with the package's types.
    await writeFile(path.join(app, "main.mjs"), ESM);
    await writeFile(path.join(app, "main.cjs"), CJS);
    await writeFile(path.join(app, "main.ts"), TS);
    const esm = JSON.parse(await run(process.execPath, ["main.mjs"], app));
    assert.deepEqual(esm, { type: "ping", queued: 0 });
    assert.equal((await run(process.execPath, ["main.cjs"], app)).trim(), "function");
    // A consumer's strict TypeScript, without @types/node: the package's declarations must stand alone.
    const compilerOptions = { strict: true, module: "nodenext", target: "es2022", noEmit: true, types: [] };
    await writeFile(path.join(app, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["main.ts"] }));
    await run(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "."], app);
  });
});
