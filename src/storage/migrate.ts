import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isUndefinedTable } from "../shared/pg-errors.js";
import type { Db } from "./db.js";

// Versioned SQL migrations, applied in file-name order, each in its own transaction,
// under an advisory lock so that several nodes starting together apply each once.
// The numbering ranges per feature: docs/architecture.md "Storage" (test/foundation/docs.test.ts).

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");
const LOCK_KEY = 7_482_019_331;

let buildMigrations: Promise<string[]> | undefined;
/** The migrations of this build, in the order they apply (read once). */
const migrationFiles = () =>
  (buildMigrations ??= readdir(dir).then((fs) => fs.filter((f) => f.endsWith(".sql")).sort()));

export async function migrate(db: Db): Promise<string[]> {
  const files = await migrationFiles();
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
  const files = await migrationFiles();
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
