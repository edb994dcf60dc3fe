import pg from "pg";

export type Db = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;

// int8 and numeric come back as JS numbers: counts and sums in this service fit in a double.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/**
 * Session settings of every connection. random_page_cost 1.1 (PostgreSQL's default 4 models
 * spinning disks; its documentation suggests about 1.1 for SSDs and cached data): with 4, windows
 * covering much of a weekly partition were planned as sequential scans of the whole partition
 * instead of index range scans (docs/analytics.md).
 */
const SESSION_OPTIONS = "-c random_page_cost=1.1";

export function createPool(url: string, max: number): Db {
  // Options already in the URL (?options=...) are kept: pg would let them replace ours, so they
  // move out of the URL and follow ours (a later -c wins).
  let connectionString = url;
  let options = SESSION_OPTIONS;
  if (URL.canParse(url)) {
    const u = new URL(url);
    const given = u.searchParams.get("options");
    if (given) {
      u.searchParams.delete("options");
      connectionString = u.toString();
      options = `${SESSION_OPTIONS} ${given}`;
    }
  }
  const pool = new pg.Pool({ connectionString, max, idleTimeoutMillis: 30_000, options });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on("error", () => undefined);
  return pool;
}

/**
 * Runs fn in a transaction; rolls back on any error. A connection whose ROLLBACK failed is
 * destroyed rather than returned to the pool.
 */
export async function tx<T>(db: Db, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await db.connect();
  let broken = false;
  try {
    await c.query("BEGIN");
    const out = await fn(c);
    await c.query("COMMIT");
    return out;
  } catch (err) {
    await c.query("ROLLBACK").catch(() => (broken = true));
    throw err;
  } finally {
    c.release(broken);
  }
}
