import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPool, tx } from "../../src/storage/db.js";
import { createTestDatabase } from "../helpers/db.js";

// Every pool connection carries the service's session settings; options given in DATABASE_URL are kept.
describe("connection pool", () => {
  it("sets random_page_cost for index-only analytics plans, and keeps the URL's own options", async () => {
    const url = await createTestDatabase();
    const plain = createPool(url, 1);
    const u = new URL(url);
    u.searchParams.set("options", "-c statement_timeout=12345");
    const withOptions = createPool(u.toString(), 1);
    try {
      assert.equal((await plain.query("SHOW random_page_cost")).rows[0].random_page_cost, "1.1");
      assert.equal((await withOptions.query("SHOW random_page_cost")).rows[0].random_page_cost, "1.1");
      assert.equal((await withOptions.query("SHOW statement_timeout")).rows[0].statement_timeout, "12345ms");
    } finally {
      await plain.end();
      await withOptions.end();
    }
  });

  it("tx rolls back on error and rethrows; a connection whose ROLLBACK failed is destroyed, not pooled again", async () => {
    const url = await createTestDatabase();
    const pool = createPool(url, 2);
    try {
      await pool.query("CREATE TABLE tx_probe (n int)");
      await assert.rejects(
        tx(pool, async (c) => {
          await c.query("INSERT INTO tx_probe VALUES (1)");
          throw new Error("boom");
        }),
        /boom/,
      );
      assert.equal((await pool.query("SELECT count(*)::int AS n FROM tx_probe")).rows[0].n, 0);
      assert.equal(pool.idleCount, 1, "a cleanly rolled-back connection goes back to the pool");

      // The session is killed mid-transaction: the ROLLBACK cannot run, the connection is dropped.
      let pid = 0;
      await assert.rejects(
        tx(pool, async (c) => {
          pid = (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
          await c.query("INSERT INTO tx_probe VALUES (2)");
          const other = await pool.connect();
          try {
            await other.query("SELECT pg_terminate_backend($1)", [pid]);
          } finally {
            other.release();
          }
          await c.query("SELECT 1");
        }),
      );
      assert.equal((await pool.query("SELECT count(*)::int AS n FROM tx_probe")).rows[0].n, 0);
      const pids = new Set<number>();
      for (let i = 0; i < 4; i++) pids.add((await pool.query("SELECT pg_backend_pid() AS pid")).rows[0].pid);
      assert.ok(!pids.has(pid), "the terminated connection was handed out again");
    } finally {
      await pool.end();
    }
  });
});
