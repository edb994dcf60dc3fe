import pg from "pg";
import { queryTimeout, requestCancelled } from "../shared/errors.js";
import { isQueryCanceled } from "../shared/pg-errors.js";

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

export interface PoolOptions {
  /**
   * statement_timeout of every connection (STATEMENT_TIMEOUT_MS; 0 or absent: none). Background work
   * that may legitimately run long lifts it per transaction (`backgroundTx`).
   */
  statementTimeoutMs?: number;
}

export function createPool(url: string, max: number, opts: PoolOptions = {}): Db {
  // Options already in the URL (?options=...) are kept: pg would let them replace ours, so they
  // move out of the URL and follow ours (a later -c wins).
  let connectionString = url;
  let options = SESSION_OPTIONS;
  if (opts.statementTimeoutMs) options += ` -c statement_timeout=${Math.floor(opts.statementTimeoutMs)}`;
  if (URL.canParse(url)) {
    const u = new URL(url);
    const given = u.searchParams.get("options");
    if (given) {
      u.searchParams.delete("options");
      connectionString = u.toString();
      options = `${options} ${given}`;
    }
  }
  const pool = new pg.Pool({ connectionString, max, idleTimeoutMillis: 30_000, options });
  // A client losing its connection must not crash the process. Idle in the pool, the pool drops
  // and replaces it ("error" on the pool). Checked out but between statements (the lock connection
  // of a job, of a retention or of a purge pass), pg emits "error" on the client itself, an
  // uncaught exception without a listener: the holder sees the failure on its next statement
  // instead, and the pool discards the client on release (it is no longer queryable).
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/**
 * Runs fn in a transaction on a connection the caller holds (one with a session lock, say); rolls
 * back on any error and rethrows it. A failed ROLLBACK is reported to `onBroken`: that connection
 * must not be reused.
 */
export async function txOn<T>(c: pg.PoolClient, fn: () => Promise<T>, onBroken: () => void): Promise<T> {
  try {
    await c.query("BEGIN");
    const out = await fn();
    await c.query("COMMIT");
    return out;
  } catch (err) {
    await c.query("ROLLBACK").catch(onBroken);
    throw err;
  }
}

/**
 * Runs fn in a transaction on a pooled connection; rolls back on any error. A connection whose
 * ROLLBACK failed is destroyed rather than returned to the pool.
 */
export async function tx<T>(db: Db, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await db.connect();
  let broken = false;
  try {
    return await txOn(
      c,
      () => fn(c),
      () => (broken = true),
    );
  } finally {
    c.release(broken);
  }
}

/**
 * `tx` for background work that may legitimately run longer than STATEMENT_TIMEOUT_MS (slot
 * backfills, block builds, rollup rebuilds): the transaction lifts the timeout for itself only.
 */
export function backgroundTx<T>(db: Db, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  return tx(db, async (c) => {
    await c.query("SET LOCAL statement_timeout = 0");
    return fn(c);
  });
}

/**
 * Runs fn on one pooled connection held for the request, bound to `signal` (the request's
 * HandlerContext signal, which aborts when the client goes away): on abort the running statement
 * is cancelled (`pg_cancel_backend` from a separate connection, so a saturated pool cannot delay
 * it), no further statement is sent on the connection, fn's promise rejects with `requestCancelled`
 * and the connection is closed instead of returned to the pool (a late cancel can never reach
 * another request's statement). A statement stopped by the statement timeout becomes
 * `queryTimeout` (503); other errors pass through.
 */
export async function withCancellable<T>(
  db: Db,
  signal: AbortSignal | undefined,
  fn: (c: pg.PoolClient) => Promise<T>,
): Promise<T> {
  if (signal?.aborted) throw requestCancelled();
  const c = await connectUnlessAborted(db, signal);
  let aborted = false;
  const onAbort = () => {
    aborted = true;
    void cancelBackend(db, (c as unknown as { processID?: number }).processID);
  };
  const query = c.query;
  // After an abort nothing more is sent on this connection.
  c.query = ((...args: unknown[]) =>
    aborted
      ? Promise.reject(requestCancelled())
      : (query as (...a: unknown[]) => unknown).apply(c, args)) as typeof c.query;
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const out = await fn(c);
    if (aborted) throw requestCancelled();
    return out;
  } catch (err) {
    if (aborted) throw requestCancelled();
    if (isQueryCanceled(err)) throw queryTimeout();
    throw err;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    delete (c as { query?: unknown }).query;
    c.release(aborted ? new Error("request cancelled") : undefined);
  }
}

/** One statement bound to `signal` (see withCancellable). */
export function queryCancellable<R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Db,
  signal: AbortSignal | undefined,
  sql: string,
  params: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  return withCancellable(db, signal, (c) => c.query<R>(sql, params));
}

/** A pooled connection, or requestCancelled when the signal aborts first (the late connection goes back). */
function connectUnlessAborted(db: Db, signal: AbortSignal | undefined): Promise<pg.PoolClient> {
  const pending = db.connect();
  if (!signal) return pending;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      reject(requestCancelled());
      void pending.then(
        (c) => c.release(),
        () => undefined,
      );
    };
    signal.addEventListener("abort", onAbort, { once: true });
    pending.then(
      (c) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) c.release();
        else resolve(c);
      },
      (err) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/** Cancels the running statement of backend `pid` over a fresh connection (not from the pool). */
async function cancelBackend(db: Db, pid: number | undefined): Promise<void> {
  if (!pid) return;
  const c = new pg.Client({ ...db.options, connectionTimeoutMillis: 5_000 });
  c.on("error", () => undefined);
  try {
    await c.connect();
    await c.query("SELECT pg_cancel_backend($1)", [pid]);
  } catch {
    // The connection is closed anyway when released; PostgreSQL then ends the backend at its next
    // write to the socket.
  } finally {
    await c.end().catch(() => undefined);
  }
}
