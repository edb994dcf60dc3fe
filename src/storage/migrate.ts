import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isUndefinedTable } from "../shared/pg-errors.js";
import type { Db } from "./db.js";

// Versioned SQL migrations, applied in the numeric order of their prefix, each in its own
// transaction, under an advisory lock so that several nodes starting together apply each once.
// The numbering rule (docs/architecture.md "Storage", test/storage/migrate.test.ts): a new file takes
// a prefix above every existing one, so that a fresh database and an upgraded one apply the same
// files in the same order. migrate() refuses, before applying anything, a file not yet applied that
// sorts before one already applied (Flyway's outOfOrder=false), except the files of GRANDFATHERED.

/** The migrations of this build. */
export const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");
const LOCK_KEY = 7_482_019_331;

/**
 * The files that landed before the numbering rule, several of them numbered below a file that landed
 * earlier (0002, 1006, 4003, 5003, 8001 and more): exempt from the order check, as they are. Never add
 * to this list.
 */
export const GRANDFATHERED: ReadonlySet<string> = new Set([
  "0001_accounts_projects.sql",
  "0002_key_kind_allowed_origins.sql",
  "1000_events.sql",
  "1001_sources.sql",
  "1002_users_groups.sql",
  "1003_drop_redundant_events_index.sql",
  "1004_ingest_deltas.sql",
  "1005_event_user_hours.sql",
  "1006_ingest_ids.sql",
  "2000_analytics.sql",
  "2001_analytics_scan_index.sql",
  "2002_analytics_blocks.sql",
  "2003_drop_analytics_scan_index.sql",
  "3000_metrics.sql",
  "4000_uptime.sql",
  "4001_monitors_hot_updates.sql",
  "4002_monitors_version.sql",
  "4003_incident_updates.sql",
  "5000_webhooks.sql",
  "5001_webhook_event_refs.sql",
  "5002_webhook_outbox.sql",
  "5003_webhook_type_mattermost.sql",
  "6000_temporal.sql",
  "7000_pages.sql",
  "8000_project_retention.sql",
  "8001_jobs.sql",
  "8002_project_purge.sql",
  "8003_retention.sql",
]);

const NAME = /^(\d+)_[a-z0-9_]+\.sql$/;

/** The number of a migration's prefix (`9000_x.sql` → 9000), undefined for another name. */
export function migrationNumber(file: string): number | undefined {
  const m = NAME.exec(file);
  return m ? Number(m[1]) : undefined;
}

const numberOf = (file: string): number => {
  const n = migrationNumber(file);
  if (n === undefined) throw new Error(`migration ${file}: not named <number>_<lower_snake_name>.sql`);
  return n;
};

/** The highest prefix of GRANDFATHERED: every other file numbers above it. */
export const LAST_GRANDFATHERED = Math.max(...[...GRANDFATHERED].map(numberOf));

/**
 * The .sql files of a migrations directory in the order they apply: by the number of their prefix
 * (numeric, so 10000_x follows 9999_y). Throws on a name without a number, on two files with one
 * number, and on a file outside GRANDFATHERED numbered at or below LAST_GRANDFATHERED.
 */
export function migrationOrder(names: readonly string[]): string[] {
  const files = names.filter((f) => f.endsWith(".sql"));
  const byNumber = new Map<number, string>();
  for (const f of files) {
    const n = numberOf(f);
    const other = byNumber.get(n);
    if (other !== undefined) throw new Error(`migrations ${other} and ${f} share the number ${n}: renumber one`);
    byNumber.set(n, f);
    if (!GRANDFATHERED.has(f) && n <= LAST_GRANDFATHERED)
      throw new Error(
        `migration ${f} is numbered at or below ${LAST_GRANDFATHERED}: a new migration takes a number above every existing one (docs/architecture.md "Storage")`,
      );
  }
  return files.sort((a, b) => numberOf(a) - numberOf(b));
}

/**
 * The first file of `files` (in order) that is not applied yet but sorts before an applied version
 * (one of `applied`, recorded in schema_migrations, of this build or not), with the latest such
 * applied version; undefined when none. GRANDFATHERED files are exempt.
 */
export function outOfOrder(
  files: readonly string[],
  applied: ReadonlySet<string>,
): { file: string; applied: string } | undefined {
  let latest: { file: string; n: number } | undefined;
  for (const v of applied) {
    const n = migrationNumber(v);
    if (n !== undefined && (!latest || n > latest.n)) latest = { file: v, n };
  }
  if (!latest) return undefined;
  for (const f of files)
    if (!applied.has(f) && !GRANDFATHERED.has(f) && numberOf(f) < latest.n) return { file: f, applied: latest.file };
  return undefined;
}

const listed = new Map<string, Promise<string[]>>();
/** The migrations of a directory (this build's by default), in the order they apply (read once). */
const migrationFiles = (dir: string) => {
  let files = listed.get(dir);
  if (!files) listed.set(dir, (files = readdir(dir).then(migrationOrder)));
  return files;
};

/**
 * Applies the migrations of `dir` (this build's by default; tests pass an earlier commit's) not yet
 * recorded in schema_migrations; returns them.
 */
export async function migrate(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = await migrationFiles(dir);
  const c = await db.connect();
  const applied: string[] = [];
  try {
    // Migrations (and waiting for another node's) may run longer than STATEMENT_TIMEOUT_MS.
    await c.query("SET statement_timeout = 0");
    await c.query("SELECT pg_advisory_lock($1)", [LOCK_KEY]);
    await c.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const done = new Set(
      (await c.query<{ version: string }>("SELECT version FROM schema_migrations")).rows.map((r) => r.version),
    );
    const early = outOfOrder(files, done);
    if (early)
      throw new Error(
        `migration ${early.file} is not applied, yet this database has applied ${early.applied}, which sorts after it: a new migration takes a number above every existing one (docs/architecture.md "Storage"); renumber ${early.file} above the highest`,
      );
    for (const f of files) {
      if (done.has(f)) continue;
      const sql = await readFile(path.join(dir, f), "utf8");
      await c.query("BEGIN");
      try {
        await c.query(sql);
        await c.query("INSERT INTO schema_migrations (version) VALUES ($1)", [f]);
        await c.query("COMMIT");
        applied.push(f);
      } catch (err) {
        await c.query("ROLLBACK");
        throw new Error(`migration ${f} failed: ${(err as Error).message}`);
      }
    }
  } finally {
    await c.query("SELECT pg_advisory_unlock($1)", [LOCK_KEY]).catch(() => undefined);
    // Back to the connection's own timeout before the pool hands it to a request.
    const reset = await c.query("RESET statement_timeout").then(
      () => true,
      () => false,
    );
    c.release(reset ? undefined : new Error("statement_timeout not reset"));
  }
  return applied;
}

/**
 * The migrations of this build not recorded in the database (readiness: /health, grpc.health.v1).
 * One query; a missing schema_migrations table means none is applied. Other errors (the database
 * unreachable) are thrown.
 */
export async function missingMigrations(db: Db): Promise<string[]> {
  const files = await migrationFiles(MIGRATIONS_DIR);
  try {
    const { rows } = await db.query<{ version: string }>(
      "SELECT version FROM schema_migrations WHERE version = ANY($1)",
      [files],
    );
    const done = new Set(rows.map((r) => r.version));
    return files.filter((f) => !done.has(f));
  } catch (err) {
    if (isUndefinedTable(err)) return files;
    throw err;
  }
}
