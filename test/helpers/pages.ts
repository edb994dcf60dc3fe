import { spawn } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";

// The SDK's browser build and a static origin serving it, for the browser tests.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

/**
 * Builds the SDK (`tsc -p sdk`, the package's own build) into a fresh temp directory and returns
 * it: the test runs what the sources say now, and never races another process writing sdk/dist.
 */
export async function buildSdk(): Promise<string> {
  const out = await mkdtemp(path.join(os.tmpdir(), "vigil-sdk-dist-"));
  const tsc = path.join(root, "node_modules/typescript/bin/tsc");
  let output = "";
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [tsc, "-p", path.join(root, "sdk"), "--outDir", out], { cwd: root });
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("exit", resolve);
  });
  if (code !== 0) throw new Error(`tsc -p sdk failed (${code}):\n${output}`);
  return out;
}

export interface StaticOrigin {
  /** scheme://host:port, as a browser sends it in `Origin`. */
  origin: string;
  close(): Promise<void>;
}

/**
 * A real HTTP server on 127.0.0.1 (its own port: its own origin) serving `html` at `/` (the query
 * string is the page's to read) and the files of `sdkDir` under `/sdk/`.
 */
export async function serveOrigin(html: string, sdkDir: string, host = "127.0.0.1"): Promise<StaticOrigin> {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/") return res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
    if (url.pathname === "/favicon.ico") return res.writeHead(204).end();
    const rel = path.normalize(url.pathname.slice("/sdk/".length));
    if (!url.pathname.startsWith("/sdk/") || rel.startsWith("..") || !rel.endsWith(".js"))
      return res.writeHead(404).end();
    try {
      const js = await readFile(path.join(sdkDir, rel));
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-store" }).end(js);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const origin = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
