import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, chown, cp, lstat, mkdir, readlink, realpath, rename, rm, symlink } from "node:fs/promises";
import path from "node:path";
import { binary, type PgBinaries, type RunAs } from "./pg-cluster.js";

// As root the embedded cluster runs as the `postgres` system user, who must be able to run the
// server binaries (in node_modules) and enter DATA_DIR. A clone in a private folder (/root is 0700,
// `mktemp -d` makes 0700 folders) gives it neither. Vigil then changes no permission of the user's
// folders; it places what the postgres user cannot reach under PLACEMENT_ROOT instead:
//   binaries  copied once per package version to PLACEMENT_ROOT/postgres-<version>-<platform>
//             (root-owned, 0755: readable and runnable by all, writable by root only)
//   cluster   PLACEMENT_ROOT/clusters/<hash of DATA_DIR's real path> (0700, owned by postgres),
//             recorded as the symlink DATA_DIR/pg, so a restart (or a moved DATA_DIR) finds it again.
// What was placed is said in one log line. A non-root Vigil, or a reachable clone, is unchanged:
// the package's binaries and DATA_DIR/pg.

const PLACEMENT_ROOT = "/var/lib/vigil";

export interface Placement {
  bin: PgBinaries;
  /** The cluster's real directory (postgres is given this, never a path through DATA_DIR/pg). */
  pgDir: string;
  /** What was placed elsewhere, for the one log line; empty when nothing was. */
  moved: string[];
}

/** `user` can run this PostgreSQL binary (every folder above it entered, the file executed). */
function canRun(user: RunAs, file: string): boolean {
  const r = spawnSync(file, ["--version"], { ...user, stdio: "ignore", timeout: 20_000 });
  return !r.error && r.status === 0;
}

/** `user` can enter `dir` (search permission on it and on every folder above it). */
function canEnter(user: RunAs, dir: string): boolean {
  const r = spawnSync("/bin/sh", ["-c", 'cd -- "$1"', "sh", dir], { ...user, stdio: "ignore", timeout: 20_000 });
  return !r.error && r.status === 0;
}

async function reachableRoot(): Promise<string> {
  try {
    await mkdir(PLACEMENT_ROOT, { recursive: true });
    await chmod(PLACEMENT_ROOT, 0o755);
    return PLACEMENT_ROOT;
  } catch (err) {
    throw new Error(
      `the postgres user cannot reach this installation and ${PLACEMENT_ROOT} cannot be made for it (${(err as Error).message}); clone Vigil into a folder every user can enter, or set DATABASE_URL`,
    );
  }
}

/** The package's binaries, or a copy under PLACEMENT_ROOT when the postgres user cannot run them. */
async function binaries(user: RunAs, pkg: PgBinaries, moved: string[]): Promise<PgBinaries> {
  if (canRun(user, binary(pkg.dir, "postgres"))) return pkg;
  const base = await reachableRoot();
  const dir = path.join(base, `postgres-${pkg.key}`);
  if (!canRun(user, binary(dir, "postgres"))) {
    // Copied aside and renamed into place: a crash mid-copy never leaves a half copy under the name,
    // and a copy another Vigil put there meanwhile is kept (it may be running from it).
    const tmp = `${dir}.partial-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    await cp(pkg.dir, tmp, { recursive: true, verbatimSymlinks: true });
    await chmod(tmp, 0o755);
    try {
      await rename(tmp, dir);
    } catch {
      if (canRun(user, binary(dir, "postgres"))) await rm(tmp, { recursive: true, force: true });
      else {
        await rm(dir, { recursive: true, force: true }); // a broken copy
        await rename(tmp, dir);
      }
    }
    if (!canRun(user, binary(dir, "postgres")))
      throw new Error(`the postgres user cannot run PostgreSQL even from ${dir}; set DATABASE_URL`);
  }
  moved.push(`binaries in ${dir}`);
  return { dir, key: pkg.key };
}

/** DATA_DIR/pg, or the cluster it links to under PLACEMENT_ROOT when the postgres user cannot enter DATA_DIR. */
async function clusterDir(user: RunAs, dataRoot: string, moved: string[]): Promise<string> {
  const link = path.join(dataRoot, "pg");
  const here = await lstat(link).catch(() => undefined);
  if (here?.isSymbolicLink()) {
    const target = path.resolve(dataRoot, await readlink(link));
    moved.push(`cluster in ${target} (DATA_DIR/pg links to it)`);
    return target;
  }
  if (canEnter(user, dataRoot)) return link;
  if (here && existsSync(path.join(link, "PG_VERSION")))
    throw new Error(
      `the cluster in ${link} cannot be reached by the postgres user (a folder above ${dataRoot} is closed to it); open that folder to it (chmod o+x), or move DATA_DIR`,
    );
  if (here) await rm(link, { recursive: true, force: true }); // an empty start left by a failed initdb
  const base = await reachableRoot();
  const clusters = path.join(base, "clusters");
  await mkdir(clusters, { recursive: true });
  await chmod(clusters, 0o755);
  const id = createHash("sha256")
    .update(await realpath(dataRoot))
    .digest("hex")
    .slice(0, 16);
  const target = path.join(clusters, id);
  await mkdir(target, { recursive: true, mode: 0o700 });
  await chown(target, user.uid, user.gid);
  await symlink(target, link);
  moved.push(`cluster in ${target} (DATA_DIR/pg links to it)`);
  return target;
}

/** Where the postgres user runs PostgreSQL from, and on which cluster directory, for a root Vigil. */
export async function placeForPostgresUser(user: RunAs, pkg: PgBinaries, dataRoot: string): Promise<Placement> {
  const moved: string[] = [];
  const bin = await binaries(user, pkg, moved);
  const pgDir = await clusterDir(user, dataRoot, moved);
  return { bin, pgDir, moved };
}
