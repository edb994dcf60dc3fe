// Helpers shared by the bench suites (bench/run.ts skips files starting with "_").
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";

export { freePort } from "../src/shared/net.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

/** Replaces the body of the `## <title>` section of docs/benchmarks.md; other sections stay as they are. */
export async function writeBenchSection(title: string, body: string): Promise<void> {
  const file = path.join(root, "docs/benchmarks.md");
  const doc = await readFile(file, "utf8");
  const start = doc.indexOf(`## ${title}`);
  if (start < 0) throw new Error(`no '## ${title}' section in docs/benchmarks.md`);
  const headEnd = doc.indexOf("\n", start) + 1;
  const next = doc.indexOf("\n## ", headEnd);
  await writeFile(file, `${doc.slice(0, headEnd)}\n${body.trimEnd()}\n${next >= 0 ? doc.slice(next) : ""}`);
}

/** POST with a bearer key over a keep-alive agent; resolves with the status and body text. */
export function post(agent: http.Agent, port: number, pathname: string, body: string, key: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port, path: pathname, method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: `Bearer ${key}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Waits up to 60 s for a spawned Vigil to answer /health. */
export async function waitHealthy(port: number, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error("server exited");
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) return;
    } catch {
      /* starting */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("server did not start");
}

/**
 * CPU seconds (user + system) used so far by every PostgreSQL process on this machine (comm
 * "postgres"). Backends of exited connections are not counted, so measure across a phase whose
 * pool connections stay open.
 */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const open = stat.indexOf("(");
      const close = stat.lastIndexOf(")");
      if (stat.slice(open + 1, close) !== "postgres") continue;
      const f = stat.slice(close + 2).split(" ");
      total += (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      /* exited meanwhile */
    }
  }
  return total;
}

/** CPU seconds (user + system) used so far by one process. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}
