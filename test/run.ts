// `npm test`: one PostgreSQL for the whole run (embedded in .tmp/, or DATABASE_URL when set), a
// migrated template database that every test file clones, then node's test runner over test/**.
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import pino from "pino";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import { createPool } from "../src/storage/db.js";
import { migrate } from "../src/storage/migrate.js";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (statSync(p).isDirectory()) return f === "helpers" ? [] : testFiles(p);
    return f.endsWith(".test.ts") ? [p] : [];
  });
}

async function main(): Promise<number> {
  const log = pino({ level: "warn" });
  let adminUrl = process.env.DATABASE_URL;
  let stop: (() => Promise<void>) | undefined;
  let tmp: string | undefined;
  if (!adminUrl) {
    tmp = await mkdtemp(path.join(os.tmpdir(), "vigil-test-pg-"));
    const h = await startEmbeddedPostgres(tmp, log);
    adminUrl = h.url;
    stop = h.stop;
  }
  const template = `vigil_tpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  const tplUrl = new URL(adminUrl);
  tplUrl.pathname = `/${template}`;
  const pool = createPool(tplUrl.toString(), 2);
  await migrate(pool);
  await pool.end();

  const files = args.length ? args.filter((a) => !a.startsWith("--")) : testFiles(path.join(root, "test"));
  const flags = args.filter((a) => a.startsWith("--"));
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", ...flags, ...files], {
      stdio: "inherit",
      cwd: root,
      env: { ...process.env, VIGIL_TEST_ADMIN_URL: adminUrl, VIGIL_TEST_TEMPLATE: template },
    });
    child.on("exit", (c) => resolve(c ?? 1));
  });
  const dbs = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [`vigil_t_%`]);
  for (const { datname } of dbs.rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => undefined);
  await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
  await admin.end();
  await stop?.();
  if (tmp) await rm(tmp, { recursive: true, force: true });
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
