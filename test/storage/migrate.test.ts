import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { createPool } from "../../src/storage/db.js";
import {
  GRANDFATHERED,
  LAST_GRANDFATHERED,
  MIGRATIONS_DIR,
  migrate,
  migrationNumber,
  migrationOrder,
  outOfOrder,
} from "../../src/storage/migrate.js";
import { adminUrl } from "../helpers/db.js";
import { dumpableServer, emptyDatabase, schemaDump, type DumpableServer } from "../helpers/pgtools.js";

// Migrations apply in the order they were written (docs/architecture.md "Storage"): a new file takes
// a number above every existing one, checked over the build's files, over the repository's history
// (each commit's new files above every file before it) and by migrate() against the database (an
// unapplied file below an applied one is refused, the files that landed before the rule
// grandfathered). A database upgraded from an earlier commit's migrations has the same schema
// (`pg_dump --schema-only`) as one migrated fresh.

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const REL_DIR = "src/storage/migrations";
const git = async (...args: string[]) => (await run("git", ["-C", root, ...args], { maxBuffer: 16 << 20 })).stdout;

/** Why the repository's history cannot be read here (no git, not a clone, a shallow one), or undefined. */
async function noHistory(): Promise<string | undefined> {
  try {
    if ((await git("rev-parse", "--is-shallow-repository")).trim() === "true") return "a shallow clone";
    return undefined;
  } catch (err) {
    return `no git history (${(err as Error).message.split("\n")[0]})`;
  }
}

describe("migration numbering", () => {
  it("the build's migrations: the grandfathered files all present, every other one numbered above them, no number twice", () => {
    const files = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith(".sql"));
    assert.deepEqual(
      [...GRANDFATHERED].filter((f) => !files.includes(f)),
      [],
    );
    // Throws naming the file numbered at or below the last grandfathered one, or two files of one number.
    const ordered = migrationOrder(files);
    const late = ordered.filter((f) => !GRANDFATHERED.has(f));
    assert.ok(late.every((f) => (migrationNumber(f) ?? 0) > LAST_GRANDFATHERED));
    assert.equal(LAST_GRANDFATHERED, 8003);
  });

  it("orders by number (10000 after 9999), refuses a new file numbered among the grandfathered, a number used twice, a stray name", () => {
    const old = [...GRANDFATHERED];
    assert.deepEqual(migrationOrder([...old, "10000_b.sql", "9999_a.sql", "README.md"]).slice(-3), [
      "8003_retention.sql",
      "9999_a.sql",
      "10000_b.sql",
    ]);
    assert.throws(
      () => migrationOrder([...old, "1007_ingest_claims.sql"]),
      /1007_ingest_claims\.sql is numbered at or below 8003/,
    );
    assert.throws(() => migrationOrder([...old, "9000_a.sql", "9000_b.sql"]), /9000_a\.sql and 9000_b\.sql share/);
    assert.throws(() => migrationOrder([...old, "next_thing.sql"]), /next_thing\.sql: not named/);
  });

  it("outOfOrder: an unapplied file below an applied one, unless grandfathered", () => {
    const applied = new Set(["0001_accounts_projects.sql", "8002_project_purge.sql", "8003_retention.sql"]);
    // 8001 landed after 8003: grandfathered, a database at 8003 still applies it.
    assert.equal(outOfOrder(["0001_accounts_projects.sql", "8001_jobs.sql", "8003_retention.sql"], applied), undefined);
    assert.equal(outOfOrder(["8003_retention.sql", "9000_a.sql"], applied), undefined);
    const later = new Set([...applied, "9001_b.sql"]);
    assert.deepEqual(outOfOrder(["8001_jobs.sql", "9000_a.sql", "9001_b.sql"], later), {
      file: "9000_a.sql",
      applied: "9001_b.sql",
    });
    // An applied version this build does not have counts too (a database migrated by a newer build).
    assert.deepEqual(outOfOrder(["9000_a.sql"], new Set(["9002_c.sql"])), {
      file: "9000_a.sql",
      applied: "9002_c.sql",
    });
  });

  it("in the repository's history each commit's new migrations number above every one before it (grandfathered aside)", async (t) => {
    const why = await noHistory();
    if (why) return t.skip(`cannot read the history: ${why}`);
    // Oldest first; --first-parent follows main's merges, so a merged branch's file counts when merged.
    const log = await git(
      "log",
      "--first-parent",
      "--diff-merges=first-parent",
      "--no-renames",
      "--diff-filter=A",
      "--reverse",
      "--name-only",
      "--format=commit %H",
      "--",
      REL_DIR,
    );
    const wrong: string[] = [];
    let highest: { file: string; n: number } | undefined;
    const check = (where: string, added: string[]) => {
      for (const f of added) {
        const n = migrationNumber(f);
        if (n !== undefined && highest && n <= highest.n && !GRANDFATHERED.has(f))
          wrong.push(`${where}: ${f} is numbered at or below ${highest.file}, which landed before it`);
      }
      for (const f of added) {
        const n = migrationNumber(f);
        if (n !== undefined && (!highest || n > highest.n)) highest = { file: f, n };
      }
    };
    for (const block of log.split(/^commit /m).filter(Boolean)) {
      const [hash, ...names] = block.split("\n").filter(Boolean);
      check(
        `commit ${hash.slice(0, 10)}`,
        names.map((n) => path.basename(n)),
      );
    }
    // Files not committed yet come after everything committed.
    const committed = new Set(
      (await git("ls-tree", "--name-only", "HEAD", `${REL_DIR}/`)).split("\n").map((n) => path.basename(n)),
    );
    check(
      "not committed",
      readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith(".sql") && !committed.has(f)),
    );
    assert.deepEqual(wrong, []);
  });
});

describe("migrating a database", () => {
  let server: DumpableServer;
  const made: string[] = [];
  const dirs: string[] = [];

  before(async () => {
    server = await dumpableServer(adminUrl());
  });

  after(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
    if (!server) return;
    if (server.cluster) return server.cluster.stop();
    const c = new pg.Client({ connectionString: server.adminUrl });
    await c.connect();
    try {
      for (const name of made) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  });

  /** A new empty database on the dump server, migrated with each of `dirs` in turn; its URL. */
  async function migrated(...steps: (string | undefined)[]): Promise<string> {
    const name = `vigil_m_${randomBytes(6).toString("hex")}`;
    made.push(name);
    const url = await emptyDatabase(server.adminUrl, name);
    const pool = createPool(url, 2);
    try {
      for (const dir of steps) await migrate(pool, dir);
    } finally {
      await pool.end();
    }
    return url;
  }

  async function tempDir(): Promise<string> {
    const d = await mkdtemp(path.join(os.tmpdir(), "vigil-migrations-"));
    dirs.push(d);
    return d;
  }

  /** The migrations directory of `commit`, written to a temp dir; undefined with the reason when unreachable. */
  async function migrationsAt(commit: string): Promise<{ dir: string } | { skip: string }> {
    const why = await noHistory();
    if (why) return { skip: why };
    try {
      await git("cat-file", "-e", `${commit}^{commit}`);
    } catch {
      return { skip: `commit ${commit} is not in this clone` };
    }
    const dir = await tempDir();
    const names = (await git("ls-tree", "--name-only", commit, `${REL_DIR}/`)).split("\n").filter(Boolean);
    for (const n of names) await writeFile(path.join(dir, path.basename(n)), await git("show", `${commit}:${n}`));
    return { dir };
  }

  const versions = async (url: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query<{ version: string }>("SELECT version FROM schema_migrations ORDER BY version")).rows.map(
        (r) => r.version,
      );
    } finally {
      await c.end();
    }
  };

  /**
   * The schema as pg_dump prints it, less what differs from one dump to the next whatever the schema:
   * the \restrict/\unrestrict lines (a random key per dump, PostgreSQL 17.6, 16.10, 15.14 and later).
   */
  const schema = async (url: string) =>
    (await schemaDump(server.tools, url))
      .split("\n")
      .filter((l) => !/^\\(un)?restrict /.test(l))
      .join("\n");

  /** `diff -u` of two texts (the assertion's message). */
  const diff = async (a: string, b: string) => {
    const d = await tempDir();
    await writeFile(path.join(d, "fresh.sql"), a);
    await writeFile(path.join(d, "upgraded.sql"), b);
    return run("diff", ["-u", path.join(d, "fresh.sql"), path.join(d, "upgraded.sql")]).then(
      (r) => r.stdout,
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
  };

  let fresh: { schema: string; versions: string[] } | undefined;
  const freshSchema = async () => {
    if (!fresh) {
      const url = await migrated(undefined);
      fresh = { schema: await schema(url), versions: await versions(url) };
    }
    return fresh;
  };

  // Earlier commits of main whose databases then applied files numbered below ones they had:
  // before 5003_webhook_type_mattermost.sql (4003, 5003, 7000, 0002, 1006 and the 8xxx then came
  // after 6000), before 0002_key_kind_allowed_origins.sql and 1006_ingest_ids.sql, before
  // 8001_jobs.sql (which landed after 8002 and 8003). The last two also ran the first versions of
  // 8003_retention.sql and 8001_jobs.sql, edited after they landed: 9000 repairs those databases.
  const EARLIER = [
    ["before 5003 and 4003", "c182d4f6fe713f1ad43c8136189e93dc3395f597"],
    ["before 0002 and 1006", "735af1a33ac1c4b1b2cb3961f71cfcc9a0985889"],
    ["before 8001, 8003 as first written", "90f87748e6fbd7ce93dbf73db51af2f0422c9035"],
    ["8001 and 8003 as first written", "09a35285ceb27ae3050cd867e2cbe196da27e92b"],
  ] as const;

  for (const [what, commit] of EARLIER)
    it(`a database migrated at ${commit.slice(0, 10)} (${what}) then upgraded has the fresh schema (pg_dump --schema-only)`, async (t) => {
      const at = await migrationsAt(commit);
      if ("skip" in at) return t.skip(at.skip);
      const upgraded = await migrated(at.dir, undefined);
      const want = await freshSchema();
      assert.deepEqual(await versions(upgraded), want.versions);
      const got = await schema(upgraded);
      if (got !== want.schema)
        assert.fail(`upgraded (+) and fresh (-) schemas differ:\n${await diff(want.schema, got)}`);
    });

  it("refuses, before applying anything, a file not applied that sorts before an applied one, naming both", async () => {
    const dir = await tempDir();
    for (const f of readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith(".sql")))
      await copyFile(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
    const top = Math.max(...readdirSync(dir).map((f) => migrationNumber(f) ?? 0));
    const later = `${top + 2}_later_table.sql`;
    const earlier = `${top + 1}_earlier_table.sql`;
    await writeFile(path.join(dir, later), "CREATE TABLE later_table (id int);");
    const url = await migrated(dir);
    // A second directory: the same files and one numbered below the applied `later`.
    const dir2 = await tempDir();
    for (const f of readdirSync(dir)) await copyFile(path.join(dir, f), path.join(dir2, f));
    await writeFile(path.join(dir2, earlier), "CREATE TABLE earlier_table (id int);");
    const pool = createPool(url, 2);
    try {
      await assert.rejects(migrate(pool, dir2), (err: Error) => {
        assert.match(err.message, new RegExp(`migration ${earlier} is not applied`));
        assert.match(err.message, new RegExp(`${later}, which sorts after it`));
        return true;
      });
      const { rows } = await pool.query("SELECT to_regclass('earlier_table') AS t");
      assert.equal(rows[0].t, null);
    } finally {
      await pool.end();
    }
    assert.ok(!(await versions(url)).includes(earlier));
  });
});
