import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createPool } from "../../src/storage/db.js";
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
});
