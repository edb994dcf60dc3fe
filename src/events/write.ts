import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { PoolClient } from "pg";
import { from as copyFrom } from "pg-copy-streams";
import type { SqlGuard, StoredEvent } from "./pipeline.js";
import type { Queryable } from "../storage/db.js";
import type { ClaimRow } from "./claims.js";
import { newId } from "../shared/ids.js";
import { assertNever } from "../shared/never.js";
import { EVENT_RECORD, fieldsOf, sqlType, type FieldKind, type RecordField } from "./record.js";

// The statements of one ingest transaction: source resolution and the multi-row insert.

const SLOT_NAMES = [
  "n1",
  "n2",
  "n3",
  "n4",
  "n5",
  "n6",
  "n7",
  "n8",
  "s1",
  "s2",
  "s3",
  "s4",
  "s5",
  "s6",
  "s7",
  "s8",
] as const;
const SLOT_SET = new Set<string>(SLOT_NAMES);

// The record's columns as the write statements take them, precomputed from the table (record.ts)
// once: the per-row loops below read these arrays, nothing is looked up per row.
const RECORD: readonly RecordField[] = EVENT_RECORD;
const PER_ROW = RECORD.filter((f) => !f.commitTime);
/** INSERT: the columns each row carries (its JSON keys), their record fields and SQL types... */
const ROW_COLUMNS = PER_ROW.map((f) => f.column);
const ROW_FIELDS = PER_ROW.map((f) => f.field);
const ROW_TYPES = PER_ROW.map((f) => sqlType(f.kind));
const ROW_TIME = PER_ROW.map((f) => f.kind === "time");
/** ...and those the statement writes with its commit time ($1). */
const COMMIT_COLUMNS = RECORD.filter((f) => f.commitTime).map((f) => f.column);

/** COPY: every column in the table's order, each with its encoding. */
const COPY_RAW = 0; // a uuid: nothing to escape
const COPY_TEXT = 1;
const COPY_TIME = 2;
const COPY_OBJECT = 3;
const COPY_COMMIT = 4; // the write's commit time
function copyCode(f: RecordField): number {
  if (f.commitTime) return COPY_COMMIT;
  const kind: FieldKind = f.kind;
  switch (kind) {
    case "uuid":
      return COPY_RAW;
    case "text":
    case "optionalText":
      return COPY_TEXT;
    case "time":
      return COPY_TIME;
    case "object":
      return COPY_OBJECT;
    default:
      return assertNever(kind, "event field kind");
  }
}
const COPY_COLUMNS = RECORD.map((f) => f.column);
const COPY_FIELDS = RECORD.map((f) => f.field);
const COPY_CODES = RECORD.map(copyCode);

/** source key -> id per project; entries are added only after the creating transaction committed. */
export class SourceCache {
  private readonly ids = new Map<string, string>();
  static key = (projectId: string, key: string) => `${projectId}\u0000${key}`;
  get(projectId: string, key: string): string | undefined {
    return this.ids.get(SourceCache.key(projectId, key));
  }
  /** Sets `sourceId` from the cache alone; false (nothing set) when a named source is not cached. */
  resolveCached(events: StoredEvent[], sourceKeys: (string | null)[]): boolean {
    const ids: (string | null)[] = new Array(events.length).fill(null);
    for (let i = 0; i < events.length; i++) {
      const key = sourceKeys[i];
      if (key === null) continue;
      const id = this.get(events[i].projectId, key);
      if (id === undefined) return false;
      ids[i] = id;
    }
    for (let i = 0; i < events.length; i++) events[i].sourceId = ids[i];
    return true;
  }

  remember(entries: Map<string, string>): void {
    if (this.ids.size > 100_000) this.ids.clear();
    for (const [k, v] of entries) this.ids.set(k, v);
  }
}

/**
 * Sets `sourceId` on every event that named a source, creating the sources first seen.
 * Returns the newly resolved (cache-missed) entries, to remember once committed.
 */
export async function resolveSources(
  client: PoolClient,
  events: StoredEvent[],
  sourceKeys: (string | null)[],
  cache: SourceCache,
  now: Date,
): Promise<Map<string, string>> {
  const missing = new Map<string, { projectId: string; key: string }>();
  for (let i = 0; i < events.length; i++) {
    const key = sourceKeys[i];
    if (key === null) continue;
    const id = cache.get(events[i].projectId, key);
    if (id !== undefined) events[i].sourceId = id;
    else missing.set(SourceCache.key(events[i].projectId, key), { projectId: events[i].projectId, key });
  }
  const resolved = new Map<string, string>();
  if (missing.size === 0) return resolved;
  // Sorted, so that concurrent transactions creating the same sources lock them in one order.
  const wanted = [...missing.values()].sort((a, b) =>
    a.projectId + "\u0000" + a.key < b.projectId + "\u0000" + b.key ? -1 : 1,
  );
  const projects = wanted.map((w) => w.projectId);
  const keys = wanted.map((w) => w.key);
  await client.query(
    `INSERT INTO sources (project_id, key, id, created_at)
     SELECT p, k, i, $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS u(p, k, i) ORDER BY p, k
     ON CONFLICT (project_id, key) DO NOTHING`,
    [projects, keys, wanted.map(() => newId("src")), now],
  );
  const r = await client.query<{ project_id: string; key: string; id: string }>(
    "SELECT s.project_id, s.key, s.id FROM sources s JOIN unnest($1::text[], $2::text[]) AS u(p, k) ON s.project_id = u.p AND s.key = u.k",
    [projects, keys],
  );
  for (const row of r.rows) resolved.set(SourceCache.key(row.project_id, row.key), row.id);
  for (let i = 0; i < events.length; i++) {
    const key = sourceKeys[i];
    if (key !== null && events[i].sourceId === null)
      events[i].sourceId = resolved.get(SourceCache.key(events[i].projectId, key)) ?? null;
  }
  return resolved;
}

/** The slot columns any of the events fills, in column order. */
function usedSlots(events: StoredEvent[]): string[] {
  const used = new Set<string>();
  for (const e of events) if (e.slots) for (const k of Object.keys(e.slots)) if (SLOT_SET.has(k)) used.add(k);
  return SLOT_NAMES.filter((s) => used.has(s));
}

/** A slot's value for storage: NULL when unset or not finite (JSON has no NaN/Infinity; the JSON stays the truth). */
function storedSlot(e: StoredEvent, slot: string): string | number | null {
  const v = e.slots?.[slot];
  return v === undefined || v === null || (typeof v === "number" && !Number.isFinite(v)) ? null : v;
}

const insertSqlCache = new Map<string, string>();

/** The claims' five arrays follow $1 (created_at), $2 (rows) and, when present, $3-$4 (deltas). */
const claimParams = (withDeltas: boolean) => {
  const f = withDeltas ? 5 : 3;
  return `$${f}::text[], $${f + 1}::text[], $${f + 2}::text[], $${f + 3}::uuid[], $${f + 4}::text[]`;
};

function insertSql(slots: string[], withDeltas: boolean, withClaims: boolean, guard: string): string {
  const cacheKey = `${slots.join(",")}|${withDeltas}|${withClaims}|${guard}`;
  let sql = insertSqlCache.get(cacheKey);
  if (sql) return sql;
  const cols = [...ROW_COLUMNS, ...slots];
  const colTypes = [...ROW_TYPES, ...slots.map((s) => (s.startsWith("n") ? "float8" : "text"))];
  // The derived-record deltas (projector.ts) ride in the same statement: one round trip less.
  // With a guard (see GroupCommitIngestor: one statement, no transaction), both inserts happen
  // only when it holds in the statement's snapshot.
  const when = guard ? " WHERE (SELECT ok FROM g)" : "";
  const ctes = [
    ...(guard ? [`g AS (SELECT ${guard} AS ok)`] : []),
    ...(withDeltas
      ? [
          `d AS (INSERT INTO ingest_deltas (project_id, deltas) SELECT p, d FROM unnest($3::text[], $4::json[]) AS u(p, d)${when})`,
        ]
      : []),
    // The client ids' claims (claims.ts), plain inserts: one already taken fails the whole statement.
    ...(withClaims
      ? [
          `c AS (INSERT INTO ingest_ids (project_id, kind, key_kind, client_id, record_id, created_at) SELECT p, k, kk, c, r, $1::timestamptz FROM unnest(${claimParams(withDeltas)}) WITH ORDINALITY AS u(p, k, kk, c, r, n)${when} ORDER BY n)`,
        ]
      : []),
  ];
  // Row i of the recordset is the JSON array element i; keys are the column names.
  sql = `${ctes.length ? `WITH ${ctes.join(",\n")}\n` : ""}INSERT INTO events (${[...cols, ...COMMIT_COLUMNS].join(", ")})
SELECT ${[...cols.map((c) => `r.${c}`), ...COMMIT_COLUMNS.map(() => "$1::timestamptz")].join(", ")}
FROM json_to_recordset($2::json) AS r(${cols.map((c, i) => `${c} ${colTypes[i]}`).join(", ")})${when}`;
  insertSqlCache.set(cacheKey, sql);
  return sql;
}

/**
 * One multi-row INSERT for every event of the group, slots included, with the group's derived-record
 * deltas ([projectId, JSON] rows of `ingest_deltas`) and, for the one-statement path, the claims of
 * its client ids (in claims.ts's order; a claim already taken throws `isClaimTaken`). The rows travel as one JSON
 * document (serialized natively, parsed once by PostgreSQL): cheaper than array literals, whose
 * every JSON element would need escaping.
 */
export async function insertEvents(
  client: Queryable,
  events: StoredEvent[],
  createdAt: Date,
  deltas: [string, string][] = [],
  guards: SqlGuard[] = [],
  claims: ClaimRow[] = [],
): Promise<number> {
  const slots = usedSlots(events);
  const rows = new Array(events.length);
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    const held = fieldsOf(e);
    const row: Record<string, unknown> = {};
    for (let j = 0; j < ROW_COLUMNS.length; j++) {
      const v = held[ROW_FIELDS[j]];
      // A Date as its text here: JSON.stringify leaves its fast path for an object with toJSON.
      row[ROW_COLUMNS[j]] = ROW_TIME[j] ? (v as Date).toISOString() : v;
    }
    for (const s of slots) row[s] = storedSlot(e, s);
    rows[i] = row;
  }
  const values: unknown[] = [createdAt.toISOString(), JSON.stringify(rows)];
  if (deltas.length)
    values.push(
      deltas.map((d) => d[0]),
      deltas.map((d) => d[1]),
    );
  if (claims.length)
    values.push(
      claims.map((c) => c.projectId),
      claims.map((c) => c.kind),
      claims.map((c) => c.keyKind),
      claims.map((c) => c.clientId),
      claims.map((c) => c.recordId),
    );
  const guard = guards.map((g) => `(${g((v) => `$${values.push(v)}`)})`).join(" AND ");
  const r = await client.query(insertSql(slots, deltas.length > 0, claims.length > 0, guard), values);
  return r.rowCount ?? 0;
}

// COPY text format: backslash, newline, carriage return and tab are escaped; NULL is \N.
const COPY_SPECIAL = /[\\\n\r\t]/g;
const copyEscape = (ch: string) => (ch === "\\" ? "\\\\" : ch === "\n" ? "\\n" : ch === "\r" ? "\\r" : "\\t");
const HAS_SPECIAL = /[\\\n\r\t]/;
const copyText = (v: string | null) =>
  v === null ? "\\N" : HAS_SPECIAL.test(v) ? v.replace(COPY_SPECIAL, copyEscape) : v;
/** JSON.stringify never emits raw control characters: only its backslashes need doubling. */
const copyJson = (v: unknown) => {
  const s = JSON.stringify(v);
  return s.includes("\\") ? s.replace(/\\/g, "\\\\") : s;
};

/**
 * The same rows as insertEvents, through `COPY ... FROM STDIN` (text format): PostgreSQL parses
 * each row once and inserts them in multi-row batches, which costs it noticeably less per row than
 * INSERT ... SELECT FROM json_to_recordset for large groups. The deltas go in their own statement.
 */
export async function copyEvents(
  client: PoolClient,
  events: StoredEvent[],
  createdAt: Date,
  deltas: [string, string][] = [],
): Promise<void> {
  const slots = usedSlots(events);
  const cols = [...COPY_COLUMNS, ...slots];
  const created = createdAt.toISOString();
  const lines = new Array<string>(events.length);
  // Events of a group mostly share their project and often their timestamp: a text or time column
  // formats a value once for a run of equal ones.
  const last: unknown[] = new Array(COPY_FIELDS.length).fill(undefined);
  const lastText: string[] = new Array(COPY_FIELDS.length).fill("");
  for (let i = 0; i < events.length; i++) {
    const held = fieldsOf(events[i]);
    let line = "";
    for (let j = 0; j < COPY_FIELDS.length; j++) {
      const v = held[COPY_FIELDS[j]];
      let text: string;
      switch (COPY_CODES[j]) {
        case COPY_RAW:
          text = v as string;
          break;
        case COPY_TEXT:
          if (v === last[j]) text = lastText[j];
          else {
            last[j] = v;
            text = lastText[j] = copyText(v as string | null);
          }
          break;
        case COPY_COMMIT:
          text = created;
          break;
        case COPY_TIME: {
          const ms = (v as Date).getTime();
          if (ms === last[j]) text = lastText[j];
          else {
            last[j] = ms;
            text = lastText[j] = (v as Date).toISOString();
          }
          break;
        }
        default: // COPY_OBJECT
          text = copyJson(v);
      }
      line += j === 0 ? text : `\t${text}`;
    }
    for (const s of slots) {
      const v = storedSlot(events[i], s);
      line += `\t${v === null ? "\\N" : copyText(String(v))}`;
    }
    lines[i] = line;
  }
  const stream = client.query(copyFrom(`COPY events (${cols.join(", ")}) FROM STDIN`));
  await pipeline(Readable.from([lines.join("\n") + "\n"]), stream);
  if (deltas.length) {
    await client.query({
      name: "events_insert_deltas",
      text: "INSERT INTO ingest_deltas (project_id, deltas) SELECT p, d FROM unnest($1::text[], $2::json[]) AS u(p, d)",
      values: [deltas.map((d) => d[0]), deltas.map((d) => d[1])],
    });
  }
}
