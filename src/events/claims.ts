import type { PoolClient } from "pg";
import type { Db } from "../storage/db.js";
import { DAY_MS } from "../shared/time.js";
import { isUniqueViolation } from "../shared/pg-errors.js";
import type { KeyKind } from "../auth/principal.js";

// Idempotent ingestion (decisions.md "Idempotent ingestion and browser SDKs"; table
// `ingest_ids`, migration 1006). A request carrying a client `id` (a UUID) claims it in the SAME
// transaction (or single statement) that stores its record. An existing claim means "already
// stored": nothing new is written and the request is answered from the claim's `record_id`, as the
// first one was. Used by the events ingestor (events and metric points) and the heartbeat writer.
//
// - Claims are inserted sorted by key, so that two writers of overlapping ids wait for each other in
//   one order, and at one place of every writer of their kind: events claim before any other lock
//   of their transaction (no partition, source or registry lock is held while waiting on a claim);
//   heartbeats claim right after their monitors' locks, in the locked path's transaction and in the
//   fast path's single statement alike (never a deadlock between the two).
// - A concurrent duplicate waits on the first's uncommitted claim (its key), then (READ COMMITTED)
//   finds the conflict once the first commits, or claims the id itself if the first rolled back;
//   the record id is read after the insert, in a new snapshot that sees the first's commit.
// - Claims are kept per key kind (decisions.md "Corrections from the second round"; column
//   `key_kind`, migration 9001): an id sent with a publishable key is a claim of its own, never the
//   one a secret key (or a session) made, nor the reverse. A publishable key can so never be answered
//   an event it did not send, nor store an id first to swallow a server's later event of that id.
// - Claims live CLAIM_WINDOW_MS; `purgeClaims` deletes older ones: after that an id may be stored again.

/** How long a client id is remembered (7 days). */
export const CLAIM_WINDOW_MS = 7 * DAY_MS;

export type ClaimKind = "event" | "metric" | "heartbeat";

/**
 * Whose namespace of the project a claim is in: `publishable` for a publishable key (browsers),
 * `secret` for everything else (secret keys, sessions: servers; ping keys, which send heartbeats
 * only, whose claims are all `secret`: uptime/heartbeat-claims.ts).
 */
export type ClaimKeyKind = "secret" | "publishable";

/** The claim namespace of a caller: `publishable` for a publishable key, else `secret`. */
export const claimKeyKind = (p: { kind: "apiKey"; keyKind: KeyKind } | { kind: "session" }): ClaimKeyKind =>
  p.kind === "apiKey" && p.keyKind === "publishable" ? "publishable" : "secret";

/** A client id on a record to store: what it claims, in which namespace of the project. */
export interface Claim {
  kind: ClaimKind;
  keyKind: ClaimKeyKind;
  /** The client's UUID, lowercase. */
  id: string;
}

export interface ClaimRow {
  projectId: string;
  kind: ClaimKind;
  keyKind: ClaimKeyKind;
  clientId: string;
  /** What a repeat is answered from: an event's id (events, metric points), a monitor's id (heartbeats), or null. */
  recordId: string | null;
}

/** The identity of a claim in one project (for maps of claims). */
export const claimKey = (projectId: string, kind: ClaimKind, keyKind: ClaimKeyKind, clientId: string): string =>
  `${projectId}\u0000${kind}\u0000${keyKind}\u0000${clientId}`;

/** claimKey of a row. */
export const rowKey = (r: ClaimRow): string => claimKey(r.projectId, r.kind, r.keyKind, r.clientId);

/** The claims in the one order every writer inserts them (no two writers wait for each other in a cycle). */
export function sortedClaims(rows: ClaimRow[]): ClaimRow[] {
  return rows
    .map((r) => ({ r, k: rowKey(r) }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map((x) => x.r);
}

interface ClaimDbRow {
  project_id: string;
  kind: ClaimKind;
  key_kind: ClaimKeyKind;
  client_id: string;
}

const dbRowKey = (r: ClaimDbRow) => claimKey(r.project_id, r.kind, r.key_kind, r.client_id);

/** The key columns of `rows` as four arrays ($1-$4: project, kind, key kind, client id). */
const keyArrays = (rows: ClaimRow[]) => [
  rows.map((x) => x.projectId),
  rows.map((x) => x.kind),
  rows.map((x) => x.keyKind),
  rows.map((x) => x.clientId),
];

/**
 * Inserts the claims (distinct keys) inside the caller's transaction. Returns the ones that already
 * existed (claimKey → their record id): those records are stored already and must not be written again.
 */
export async function claimIds(
  client: PoolClient,
  rows: ClaimRow[],
  createdAt: Date,
): Promise<Map<string, string | null>> {
  const existing = new Map<string, string | null>();
  if (rows.length === 0) return existing;
  const sorted = sortedClaims(rows);
  const cols = [
    sorted.map((r) => r.projectId),
    sorted.map((r) => r.kind),
    sorted.map((r) => r.keyKind),
    sorted.map((r) => r.clientId),
    sorted.map((r) => r.recordId),
  ];
  const won = await client.query<ClaimDbRow>({
    name: "ingest_ids_claim",
    text: `INSERT INTO ingest_ids (project_id, kind, key_kind, client_id, record_id, created_at)
           SELECT p, k, kk, c, r, $6 FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::text[]) WITH ORDINALITY AS u(p, k, kk, c, r, n) ORDER BY n
           ON CONFLICT (project_id, kind, key_kind, client_id) DO NOTHING
           RETURNING project_id, kind, key_kind, client_id::text`,
    values: [...cols, createdAt],
  });
  if (won.rows.length === rows.length) return existing;
  const claimed = new Set(won.rows.map(dbRowKey));
  const lost = sorted.filter((r) => !claimed.has(rowKey(r)));
  // A new statement, a new snapshot: it sees the claims of the transactions this one waited for.
  const r = await client.query<ClaimDbRow & { record_id: string | null }>({
    name: "ingest_ids_read",
    text: `SELECT i.project_id, i.kind, i.key_kind, i.client_id::text, i.record_id FROM ingest_ids i
             JOIN unnest($1::text[], $2::text[], $3::text[], $4::uuid[]) AS u(p, k, kk, c)
               ON i.project_id = u.p AND i.kind = u.k AND i.key_kind = u.kk AND i.client_id = u.c`,
    values: keyArrays(lost),
  });
  for (const row of r.rows) existing.set(dbRowKey(row), row.record_id);
  // A claim purged between the conflict and the read (older than the window) still counts as stored.
  for (const x of lost) {
    const k = rowKey(x);
    if (!existing.has(k)) existing.set(k, null);
  }
  return existing;
}

/**
 * Which of the claims exist already (claimKey set): a plain read, no lock taken nor waited for. For
 * a writer that must claim after other locks (heartbeats, after their monitors') and first wants
 * to leave out what is known to be stored; the claim itself (`claimIds`) still decides.
 */
export async function storedClaims(client: PoolClient, rows: ClaimRow[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const r = await client.query<ClaimDbRow>({
    name: "ingest_ids_stored",
    text: `SELECT i.project_id, i.kind, i.key_kind, i.client_id::text FROM ingest_ids i
             JOIN unnest($1::text[], $2::text[], $3::text[], $4::uuid[]) AS u(p, k, kk, c)
               ON i.project_id = u.p AND i.kind = u.k AND i.key_kind = u.kk AND i.client_id = u.c`,
    values: keyArrays(rows),
  });
  return new Set(r.rows.map(dbRowKey));
}

/**
 * The claims of a group written by ONE statement (write.ts, the one-statement ingest path): plain
 * inserts, so that a claim already taken fails the whole statement (nothing of it is written) and the
 * group goes through the transaction, where `claimIds` sorts out the repeats.
 */
export const isClaimTaken = (err: unknown): boolean => isUniqueViolation(err, "ingest_ids_pkey");

/**
 * Deletes claims created before `before`, in chunks (each its own short statement), until none is
 * left or `stopped()`. Returns how many were deleted.
 */
export async function purgeClaims(
  db: Db,
  before: Date,
  opts: { chunk?: number; stopped?: () => boolean } = {},
): Promise<number> {
  const chunk = opts.chunk ?? 10_000;
  let total = 0;
  for (;;) {
    const r = await db.query({
      name: "ingest_ids_purge",
      text: `DELETE FROM ingest_ids WHERE ctid = ANY(ARRAY(SELECT ctid FROM ingest_ids WHERE created_at < $1 LIMIT $2))`,
      values: [before, chunk],
    });
    total += r.rowCount ?? 0;
    if ((r.rowCount ?? 0) < chunk || opts.stopped?.()) return total;
  }
}
