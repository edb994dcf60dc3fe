import { tx, type Db, type Queryable } from "../storage/db.js";

// SQL for accounts. Sessions are in sessions.ts, API-key lookups in key-lookup.ts.

export interface AccountRow {
  id: string;
  email: string;
  name: string | null;
  created_at: Date;
}

export interface NewAccount {
  id: string;
  email: string;
  name: string | null;
  passwordHash: string;
  now: Date;
}

const INSERT_ACCOUNT =
  "INSERT INTO accounts (id, email, name, password_hash, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id, email, name, created_at";
/** Serializes first sign-ups under SIGNUP=closed (transaction-level advisory lock). */
const SIGNUP_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('vigil:signup', 0))";

const values = (a: NewAccount) => [a.id, a.email, a.name, a.passwordHash, a.now];

/** Whether any account exists (SIGNUP=closed admits only the first). */
export async function anyAccount(q: Queryable): Promise<boolean> {
  return !!(await q.query("SELECT 1 FROM accounts LIMIT 1")).rowCount;
}

/** Throws the unique violation when the email is taken. */
export async function insertAccount(q: Queryable, a: NewAccount): Promise<AccountRow> {
  return (await q.query<AccountRow>(INSERT_ACCOUNT, values(a))).rows[0];
}

/**
 * The first account, or undefined when one exists already: check and insert in one transaction
 * under one lock, so exactly one first sign-up wins.
 */
export async function insertFirstAccount(db: Db, a: NewAccount): Promise<AccountRow | undefined> {
  return tx(db, async (c) => {
    await c.query(SIGNUP_LOCK);
    if (await anyAccount(c)) return undefined;
    return insertAccount(c, a);
  });
}

/** The account with this (lower-cased) email and its password hash, for login. */
export async function accountByEmail(
  q: Queryable,
  email: string,
): Promise<(AccountRow & { password_hash: string }) | undefined> {
  const r = await q.query<AccountRow & { password_hash: string }>(
    "SELECT id, email, name, created_at, password_hash FROM accounts WHERE lower(email) = $1",
    [email],
  );
  return r.rows[0];
}

export async function accountById(q: Queryable, id: string): Promise<AccountRow | undefined> {
  const r = await q.query<AccountRow>("SELECT id, email, name, created_at FROM accounts WHERE id = $1", [id]);
  return r.rows[0];
}
