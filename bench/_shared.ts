// Helpers shared by the bench suites (bench/run.ts skips files starting with "_").
import { spawn, type ChildProcess } from "node:child_process";
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
export function post(
  agent: http.Agent,
  port: number,
  pathname: string,
  body: string,
  key: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path: pathname,
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          authorization: `Bearer ${key}`,
        },
      },
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

/**
 * The node arguments of `npm start` (package.json), so that a bench measures the service exactly
 * as it is run: `node <flags> --import tsx src/main.ts` -> [<flags>, "--import", "tsx", "src/main.ts"].
 */
export function vigilArgs(): string[] {
  const start: string = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts.start;
  const argv = start.trim().split(/\s+/);
  if (argv[0] !== "node") throw new Error(`package.json start script must run node: ${start}`);
  return argv.slice(1);
}

/**
 * Starts a Vigil as `npm start` runs it (vigilArgs), on `databaseUrl`, at 127.0.0.1:`port`, with the
 * benches' defaults: no Redis, no Temporal, no metrics listener, warnings only, stderr passed
 * through. `env` adds settings or overrides these; `nodeFlags` go before the start script's (a CPU
 * profile). Wait for it with waitHealthy.
 */
export function spawnVigil(o: {
  databaseUrl: string;
  port: number;
  dataDir: string;
  env?: Record<string, string>;
  nodeFlags?: string[];
}): ChildProcess {
  return spawn(process.execPath, [...(o.nodeFlags ?? []), ...vigilArgs()], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      ...process.env,
      DATABASE_URL: o.databaseUrl,
      PORT: String(o.port),
      HOST: "127.0.0.1",
      DATA_DIR: o.dataDir,
      METRICS_PORT: "off",
      LOG_LEVEL: "warn",
      REDIS_URL: "",
      TEMPORAL_ADDRESS: "",
      ...o.env,
    },
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
 * "postgres"), or, given `postmasterPid`, by that server and its children only (other sessions'
 * databases on a shared machine left out). Backends of exited connections are not counted, so
 * measure across a phase whose pool connections stay open.
 */
export function postgresCpuSeconds(postmasterPid?: number): number {
  let total = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) !== "postgres") continue;
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (postmasterPid === undefined || Number(pid) === postmasterPid || ppid === postmasterPid)
        total += statCpuSeconds(stat);
    } catch {
      /* exited meanwhile */
    }
  }
  return total;
}

/** The pid of the PostgreSQL server whose cluster folder is `pgDir` (its postmaster.pid), or undefined. */
export function postmasterPid(pgDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(pgDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) used so far by one process. */
export function processCpuSeconds(pid: number): number {
  return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"));
}

/** utime + stime of a /proc/<pid>/stat line, in seconds (clock ticks of 1/100 s). */
function statCpuSeconds(stat: string): number {
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** Signs up, creates a project and an API key over REST; the key's secret, the project id and the owner's session cookie. */
export async function setupProject(port: number): Promise<{ key: string; projectId: string; cookie: string }> {
  const base = `http://127.0.0.1:${port}`;
  const s = await fetch(`${base}/v1/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: "bench password 1" }),
  });
  const cookie = (s.headers.getSetCookie()[0] ?? "").split(";")[0];
  const p = await (
    await fetch(`${base}/v1/projects`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "bench", platform: "node" }),
    })
  ).json();
  const k = await (
    await fetch(`${base}/v1/projects/${p.data.id}/api-keys`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "bench", environment: "production" }),
    })
  ).json();
  return { key: k.data.secret, projectId: p.data.id, cookie };
}
