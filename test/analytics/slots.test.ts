import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { waitForOpenTransactions } from "../../src/analytics/assign.js";
import { useApp } from "../helpers/use.js";

// The slot protocol's wait (registry.ts step 3): a backfill starts only once every client
// transaction that was open when the slot was assigned has ended; transactions begun later are not
// waited for (they see the new registry version and fill the slot themselves).

const { t } = useApp({ ANALYTICS_SLOT_INTERVAL_MS: "0", ANALYTICS_BLOCK_INTERVAL_MS: "0" });

describe("waiting for open transactions", () => {
  it("waits for a client transaction open at the call, and not for one begun after it", async () => {
    const open = new pg.Client({ connectionString: t.databaseUrl });
    const later = new pg.Client({ connectionString: t.databaseUrl });
    await open.connect();
    await later.connect();
    try {
      await open.query("BEGIN");
      await open.query("SELECT 1"); // the transaction now holds its virtual xid
      const waiting = waitForOpenTransactions(t.app.deps.db, 5_000);
      await new Promise((r) => setTimeout(r, 100));
      await later.query("BEGIN");
      await later.query("SELECT 1");
      let done = false;
      void waiting.then(() => (done = true));
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(done, false, "returned while a transaction open at the call was still open");
      await open.query("COMMIT");
      assert.equal(await waiting, true, "the later transaction (still open) is not waited for");
      await later.query("COMMIT");
      // And it gives up after its timeout.
      await open.query("BEGIN");
      await open.query("SELECT 1");
      assert.equal(await waitForOpenTransactions(t.app.deps.db, 200), false);
      await open.query("COMMIT");
    } finally {
      await open.end();
      await later.end();
    }
  });
});
