import type { JsonObject } from "@bufbuild/protobuf";
import { badRequest } from "../shared/errors.js";
import { setOwn } from "../shared/objects.js";
import { assertNever } from "../shared/never.js";
import type { Queryable } from "../storage/db.js";
import { operationName, type Operation } from "./aggregations.js";
import { columnSql, filterSql as filterSqlFor, jsonValueSql, numberSql, slotFor } from "./compile.js";
import type { Field } from "./fields.js";
import type { Node } from "./filters.js";
import { rawScan, rollupEligible } from "./plan.js";
import { GRAIN_CODE } from "./rollups.js";
import { NO_SLOTS, Params, type SlotMap } from "./sql.js";
import { bucketStarts, decompose, type Grain, type Interval, type Window } from "./time.js";
import { MINUTE_MS } from "../shared/time.js";
import type { BlockQueries } from "./column-blocks.js";

// The analytics queries. `fast` enables rollups and slots; with it off every answer comes from the
// raw JSON, which is what the property test compares against.

export interface QueryEnv {
  db: Queryable;
  fast: boolean;
  slots: SlotMap;
  /** Column blocks (with `fast`): whole hours answered in this process, see column-blocks.ts. */
  blocks?: BlockQueries;
}

const slotsOf = (env: QueryEnv): SlotMap => (env.fast ? env.slots : NO_SLOTS);
const MAX_BUCKETS = 10_000;

/** SQL summing rollups over whole buckets plus raw rows over the edges, grouped by `bucketExpr`. */
function rollupUnion(
  projectId: string,
  w: Window,
  filter: Node | null,
  maxGrain: Grain,
  interval: Interval | null,
): { sql: string; params: Params } {
  const params = new Params();
  let pid: string | undefined;
  const unit = interval ? params.add(interval) : null;
  const parts: string[] = [];
  for (const piece of decompose(w, maxGrain)) {
    const from = params.add(new Date(piece.from));
    const to = params.add(new Date(piece.to));
    if (piece.grain === "raw") {
      const scan = rawScan(projectId, w, filter, NO_SLOTS, params);
      const b = unit ? `date_trunc(${unit}::text, e.ts, 'UTC')` : "NULL::timestamptz";
      parts.push(
        `SELECT ${b} AS b, count(*)::bigint AS c FROM events e WHERE ${scan.where} AND e.ts >= ${from} AND e.ts < ${to} GROUP BY 1`,
      );
    } else {
      const f = filterSqlFor({ params, alias: "r", slots: NO_SLOTS }, filter);
      const b = unit ? `date_trunc(${unit}::text, r.bucket, 'UTC')` : "NULL::timestamptz";
      parts.push(
        `SELECT ${b} AS b, sum(r.count)::bigint AS c FROM analytics_rollups r WHERE r.project_id = ${(pid ??= params.add(projectId))} AND r.grain = ${GRAIN_CODE[piece.grain]} AND r.bucket >= ${from} AND r.bucket < ${to} AND ${f} GROUP BY 1`,
      );
    }
  }
  return { sql: `SELECT b, sum(c)::float8 AS c FROM (${parts.join(" UNION ALL ")}) x GROUP BY b`, params };
}

export async function count(env: QueryEnv, projectId: string, w: Window, filter: Node | null): Promise<number> {
  if (env.fast && rollupEligible(filter)) {
    const { sql, params } = rollupUnion(projectId, w, filter, "day", null);
    const r = await env.db.query<{ c: number }>(sql, params.values);
    return r.rows.reduce((a, x) => a + Number(x.c), 0);
  }
  if (env.fast && env.blocks) {
    const n = await env.blocks.count(projectId, w, filter);
    if (n !== null) return n;
  }
  const s = rawScan(projectId, w, filter, slotsOf(env));
  const r = await env.db.query<{ c: number }>(
    `SELECT count(*)::float8 AS c FROM events e WHERE ${s.where}`,
    s.params.values,
  );
  return r.rows[0].c;
}

const INTERVAL_GRAIN: Record<Interval, Grain> = {
  minute: "minute",
  hour: "hour",
  day: "day",
  week: "day",
  month: "day",
};

export async function timeseries(
  env: QueryEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  interval: Interval,
): Promise<{ time: string; count: number }[]> {
  const starts = bucketStarts(w, interval, MAX_BUCKETS);
  let rows: { b: Date; c: number }[];
  let counted: Map<number, number> | null;
  if (env.fast && rollupEligible(filter)) {
    const { sql, params } = rollupUnion(projectId, w, filter, INTERVAL_GRAIN[interval], interval);
    rows = (await env.db.query<{ b: Date; c: number }>(sql, params.values)).rows;
  } else if (env.fast && env.blocks && (counted = await env.blocks.bucketCounts(projectId, w, filter, interval))) {
    rows = [...counted].map(([b, c]) => ({ b: new Date(b), c }));
  } else {
    const s = rawScan(projectId, w, filter, slotsOf(env));
    const unit = s.params.add(interval);
    rows = (
      await env.db.query<{ b: Date; c: number }>(
        `SELECT date_trunc(${unit}::text, e.ts, 'UTC') AS b, count(*)::float8 AS c FROM events e WHERE ${s.where} GROUP BY 1`,
        s.params.values,
      )
    ).rows;
  }
  const counts = new Map<number, number>();
  for (const r of rows) counts.set(r.b.getTime(), (counts.get(r.b.getTime()) ?? 0) + Number(r.c));
  return starts.map((b) => ({ time: new Date(b).toISOString(), count: counts.get(b) ?? 0 }));
}

export interface Aggregation {
  name: string;
  field: Field | null;
  operation: Operation;
}

export async function aggregate(
  env: QueryEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  aggs: Aggregation[],
): Promise<{ name: string; value: number | null }[]> {
  if (env.fast && env.blocks) {
    const values = await env.blocks.aggregate(projectId, w, filter, aggs);
    if (values) return aggs.map((a, i) => ({ name: a.name, value: values[i] }));
  }
  const s = rawScan(projectId, w, filter, slotsOf(env));
  const scanned: string[] = [];
  const cols = aggs.map((a, i) => {
    const f = a.field;
    if (env.fast && a.operation.kind === "count_unique" && (!f || (f.kind === "column" && f.column === "user_id"))) {
      // Distinct users through a hashed DISTINCT (count(DISTINCT) sorts, and spills to disk).
      return `(SELECT count(*) FROM (SELECT DISTINCT e.user_id FROM events e WHERE ${s.where} AND e.user_id IS NOT NULL) u)::float8 AS a${i}`;
    }
    scanned.push(`a${i}`);
    return `${aggregationSql(s.ctx, a, i)} AS a${i}`;
  });
  const from = scanned.length ? ` FROM events e WHERE ${s.where}` : "";
  const r = await env.db.query<Record<string, number | null>>(`SELECT ${cols.join(", ")}${from}`, s.params.values);
  return aggs.map((a, i) => ({ name: a.name, value: r.rows[0][`a${i}`] ?? null }));
}

/**
 * The SQL aggregate of one aggregation over the scanned rows (float8), the `i`th of the request. Every
 * operation (aggregations.ts lists them); a missing one is a compile error (assertNever).
 */
function aggregationSql(ctx: Parameters<typeof numberSql>[0], a: Aggregation, i: number): string {
  const f = a.field;
  const op = a.operation;
  const numeric = () => {
    const n = f ? numberSql(ctx, f) : null;
    if (!n)
      throw badRequest(`aggregations[${i}].field: ${operationName(op)} needs a data, context or tags field`, [
        { field: `aggregations[${i}].field`, message: "needs a numeric data, context or tags field" },
      ]);
    return n;
  };
  let expr: string;
  switch (op.kind) {
    case "count":
      expr = f ? `count(${f.kind === "column" ? columnSql(ctx, f) : jsonValueSql(ctx, f)})` : "count(*)";
      break;
    case "count_unique":
      expr = f
        ? `count(DISTINCT ${f.kind === "column" ? columnSql(ctx, f) : jsonValueSql(ctx, f)})`
        : "count(DISTINCT e.user_id)";
      break;
    case "sum":
      expr = `COALESCE(sum(${numeric()}), 0)`;
      break;
    case "avg":
    case "min":
    case "max":
      expr = `${op.kind}(${numeric()})`;
      break;
    case "stddev":
      expr = `stddev_samp(${numeric()})`;
      break;
    case "percentile":
      expr = `percentile_cont(${op.fraction}::float8) WITHIN GROUP (ORDER BY ${numeric()})`;
      break;
    default:
      return assertNever(op, "aggregation");
  }
  return `(${expr})::float8`;
}

/** A measure's value over no events: what `aggregate` answers for an empty window. */
const emptyValue = (a: Aggregation): number | null =>
  a.operation.kind === "count" || a.operation.kind === "count_unique" || a.operation.kind === "sum" ? 0 : null;

/**
 * A timeseries with a measure per bucket (`aggregation`): one SQL scan grouped by bucket (typed slots
 * read where assigned); a plain `count` measure is the bucket's count, from the count paths.
 */
export async function measuredTimeseries(
  env: QueryEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  interval: Interval,
  measure: Aggregation,
): Promise<{ time: string; count: number; value: number | null }[]> {
  if (measure.operation.kind === "count" && !measure.field)
    return (await timeseries(env, projectId, w, filter, interval)).map((b) => ({ ...b, value: b.count }));
  const starts = bucketStarts(w, interval, MAX_BUCKETS);
  const s = rawScan(projectId, w, filter, slotsOf(env));
  const unit = s.params.add(interval);
  const rows = (
    await env.db.query<{ b: Date; c: number; v: number | null }>(
      `SELECT date_trunc(${unit}::text, e.ts, 'UTC') AS b, count(*)::float8 AS c, ${aggregationSql(s.ctx, measure, 0)} AS v FROM events e WHERE ${s.where} GROUP BY 1`,
      s.params.values,
    )
  ).rows;
  const byStart = new Map(rows.map((r) => [r.b.getTime(), r]));
  return starts.map((b) => {
    const r = byStart.get(b);
    return { time: new Date(b).toISOString(), count: r ? Number(r.c) : 0, value: r ? r.v : emptyValue(measure) };
  });
}

/** A group/unique key as jsonb; time columns as ISO strings like everywhere else. */
function keySql(ctx: Parameters<typeof jsonValueSql>[0], f: Field): string {
  if (f.kind === "column" && f.valueType === "time")
    return `to_jsonb(to_char(${columnSql(ctx, f)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;
  return jsonValueSql(ctx, f);
}

export async function unique(
  env: QueryEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  field: Field,
  limit: number,
): Promise<{ value: unknown; count: number }[]> {
  if (env.fast && env.blocks) {
    const counts = await env.blocks.groupCounts(projectId, w, filter, [field], keySql);
    if (counts)
      return (await env.blocks.orderGroups(counts, 1, limit, true)).map((g) => ({ value: g.keys[0], count: g.count }));
  }
  const s = rawScan(projectId, w, filter, slotsOf(env));
  const counted = env.fast ? coveredGroups(s, [field]) : null;
  const src =
    counted ?? `SELECT ${keySql(s.ctx, field)} AS g0, count(*) AS c FROM events e WHERE ${s.where} GROUP BY 1`;
  const lim = s.params.add(limit);
  const r = await env.db.query<{ v: unknown; c: number }>(
    `SELECT g0 AS v, sum(c)::float8 AS c FROM (${src}) x WHERE g0 IS NOT NULL GROUP BY g0 ORDER BY c DESC, v ASC LIMIT ${lim}`,
    s.params.values,
  );
  return r.rows.map((x) => ({ value: x.v, count: x.c }));
}

/**
 * Counts per group key in one pass over slot columns, without reading any JSON (the SQL path when
 * column blocks do not apply). A slot holds the JSON value of its type, so where every grouped slot
 * is set the key is exactly to_jsonb(slot). Rows with a NULL slot (key absent, JSON null, or
 * another JSON type) may have a JSON key that differs: the pass also collects their timestamps,
 * and only those rows are read again (`ts = ANY(...)` on the primary key, rechecked with the same
 * window, filter and NULL test) and keyed with the JSON expression. The union, summed per key by
 * the caller, is the JSON path's answer. Null when a field is neither a slotted data key nor one of
 * the plain columns below.
 */
function coveredGroups(s: ReturnType<typeof rawScan>, fields: Field[]): string | null {
  // Decide first: generating key SQL binds parameters, which must all be used.
  const covered = (f: Field) =>
    f.kind === "column" ? SLOT_PASS_COLUMNS.has(f.column) : (slotFor(s.ctx, f, "n") ?? slotFor(s.ctx, f, "s")) !== null;
  if (!fields.every(covered) || fields.every((f) => f.kind === "column")) return null;
  const a: string[] = [],
    by: string[] = [],
    out: string[] = [],
    heap: string[] = [],
    nulls: string[] = [],
    set: string[] = [];
  for (const [i, f] of fields.entries()) {
    if (f.kind === "column") {
      if (!SLOT_PASS_COLUMNS.has(f.column)) return null;
      a.push(`${keySql(s.ctx, f)} AS k${i}`);
      by.push(columnSql(s.ctx, f));
      out.push(`k${i} AS g${i}`);
    } else {
      const slot = slotFor(s.ctx, f, "n") ?? slotFor(s.ctx, f, "s");
      if (!slot) return null;
      a.push(`${slot} AS k${i}`);
      by.push(slot);
      out.push(`to_jsonb(k${i}) AS g${i}`);
      nulls.push(`${slot} IS NULL`);
      set.push(`k${i} IS NOT NULL`);
    }
    heap.push(`${keySql(s.ctx, f)} AS g${i}`);
  }
  if (nulls.length === 0) return null;
  const anyNull = `(${nulls.join(" OR ")})`;
  return `WITH a AS MATERIALIZED (SELECT ${a.join(", ")}, count(*) AS c, array_agg(e.ts) FILTER (WHERE ${anyNull}) AS nts FROM events e WHERE ${s.where} GROUP BY ${by.join(", ")})
    SELECT ${out.join(", ")}, c FROM a WHERE ${set.join(" AND ")}
    UNION ALL SELECT ${heap.join(", ")}, count(*) AS c FROM events e WHERE ${s.where} AND ${anyNull}
      AND e.ts = ANY(ARRAY(SELECT DISTINCT t FROM a, unnest(a.nts) AS t)) GROUP BY ${fields.map((_, i) => i + 1).join(", ")}`;
}

/** Plain event columns a slot pass may group on. */
const SLOT_PASS_COLUMNS = new Set(["project_id", "ts", "type", "user_id"]);

export async function group(
  env: QueryEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  fields: Field[],
  limit: number,
  aggs: Aggregation[] = [],
): Promise<JsonObject[]> {
  if (aggs.length) return measuredGroups(env, projectId, w, filter, fields, limit, aggs);
  if (env.fast && env.blocks) {
    const counts = await env.blocks.groupCounts(projectId, w, filter, fields, keySql);
    if (counts) {
      return (await env.blocks.orderGroups(counts, fields.length, limit, false)).map((g) =>
        groupObject(fields, g.keys, g.count),
      );
    }
  }
  const s = rawScan(projectId, w, filter, slotsOf(env));
  const by = fields.map((_, i) => `g${i}`);
  const counted = env.fast ? coveredGroups(s, fields) : null;
  const src =
    counted ??
    `SELECT ${fields.map((f, i) => `${keySql(s.ctx, f)} AS g${i}`).join(", ")}, count(*) AS c FROM events e WHERE ${s.where} GROUP BY ${by.join(", ")}`;
  const lim = s.params.add(limit);
  const r = await env.db.query<Record<string, unknown>>(
    `SELECT ${by.join(", ")}, sum(c)::float8 AS c FROM (${src}) x GROUP BY ${by.join(", ")} ORDER BY c DESC, ${by.map((b) => `${b} ASC NULLS LAST`).join(", ")} LIMIT ${lim}`,
    s.params.values,
  );
  return r.rows.map((row) =>
    groupObject(
      fields,
      fields.map((_, i) => row[`g${i}`]),
      row.c,
    ),
  );
}

/**
 * Groups with aggregations: one SQL scan grouped by the keys (typed slots read where assigned), in
 * the order of `group` (count descending, then the keys).
 */
async function measuredGroups(
  env: QueryEnv,
  projectId: string,
  w: Window,
  filter: Node | null,
  fields: Field[],
  limit: number,
  aggs: Aggregation[],
): Promise<JsonObject[]> {
  const s = rawScan(projectId, w, filter, slotsOf(env));
  const by = fields.map((_, i) => `g${i}`);
  const keys = fields.map((f, i) => `${keySql(s.ctx, f)} AS g${i}`).join(", ");
  const measures = aggs.map((a, i) => `${aggregationSql(s.ctx, a, i)} AS a${i}`).join(", ");
  const lim = s.params.add(limit);
  const r = await env.db.query<Record<string, unknown>>(
    `SELECT ${keys}, count(*)::float8 AS c, ${measures} FROM events e WHERE ${s.where} GROUP BY ${by.join(", ")} ORDER BY c DESC, ${by.map((b) => `${b} ASC NULLS LAST`).join(", ")} LIMIT ${lim}`,
    s.params.values,
  );
  return r.rows.map((row) =>
    groupObject(
      fields,
      fields.map((_, i) => row[`g${i}`]),
      row.c,
      aggs.map((a, i) => [a.name, row[`a${i}`] ?? null]),
    ),
  );
}

/**
 * A group as the API returns it: keyed by the field names as given, then `count`, then any
 * aggregations by name. Keys go through setOwn: `o["__proto__"] = v` would set the prototype
 * instead of a key.
 */
function groupObject(fields: Field[], keys: unknown[], count: unknown, measures: [string, unknown][] = []): JsonObject {
  const o: Record<string, unknown> = {};
  // A key as PostgreSQL returns it: text, a number, a boolean, null or parsed jsonb (JSON values).
  fields.forEach((f, i) => setOwn(o, f.name, keys[i] ?? null));
  setOwn(o, "count", count);
  for (const [name, value] of measures) setOwn(o, name, value);
  return o as JsonObject;
}

/** Moments of the matching events of one window (alert preview): count(*), and of the numeric field its count, sum, min, max. */
export interface WindowMoments {
  n: number;
  vn: number;
  sum: number;
  min: number | null;
  max: number | null;
}

const EMPTY_MOMENTS: WindowMoments = { n: 0, vn: 0, sum: 0, min: null, max: null };

/** Adds b into a (in place). */
function addMoments(a: WindowMoments, b: WindowMoments): void {
  a.n += b.n;
  a.vn += b.vn;
  a.sum += b.sum;
  if (b.min !== null && (a.min === null || b.min < a.min)) a.min = b.min;
  if (b.max !== null && (a.max === null || b.max > a.max)) a.max = b.max;
}

type MomentsRow = {
  j: number;
  n: string | number;
  vn: string | number;
  s: number | null;
  mn: number | null;
  mx: number | null;
  fr: string | number;
  ab: number | null;
};
const momentsOf = (r: MomentsRow): WindowMoments => ({
  n: Number(r.n),
  vn: Number(r.vn),
  sum: r.s ?? 0,
  min: r.mn,
  max: r.mx,
});

/** Microseconds since the epoch as timestamptz text (PostgreSQL keeps microseconds). */
const usText = (us: number) => {
  const ms = Math.floor(us / 1000);
  return new Date(ms).toISOString().replace("Z", `${String(us - ms * 1000).padStart(3, "0")}Z`);
};

/**
 * The moments of many inclusive windows `[start, end]` (ms; starts and ends each non-decreasing, as
 * an alert's evaluations are) in at most two statements, each window answered exactly as `count`
 * and `aggregate` answer it on its own: the distinct window bounds cut the whole range into
 * segments, one statement aggregates each segment (GROUP BY width_bucket over the sorted bounds) and
 * each window adds up the segments it covers. Counts of type-only filters read the minute rollups
 * (as `count` does: the window up to end + 1 ms) when every window's start and end fall on a minute:
 * then the rollups cover the whole minutes and one indexed probe per window its last millisecond;
 * otherwise the raw events up to end + 1 µs (as the raw scan's `ts <= end`). count(*), and of
 * `field` (numeric: as `aggregate`'s sum, avg, min, max) count, sum, min and max, add up exactly;
 * sums only when `exactSums` (integers whose magnitudes sum to at most 2^53): other floats sum to
 * what another order of additions gives, not always the very double `aggregate` answers.
 */
export async function windowMoments(
  env: QueryEnv,
  projectId: string,
  windows: readonly { start: number; end: number }[],
  filter: Node | null,
  field: Field | null,
): Promise<{ windows: WindowMoments[]; exactSums: boolean }> {
  if (!windows.length) return { windows: [], exactSums: true };
  const aligned = windows.every((w) => w.start % MINUTE_MS === 0 && w.end % MINUTE_MS === 0);
  const rollups = env.fast && field === null && rollupEligible(filter) && aligned;
  // Half-open [from, to) in microseconds.
  const spans = windows.map((w) => ({ from: w.start * 1000, to: w.end * 1000 + (rollups ? 0 : 1) }));
  const bounds = [...new Set(spans.flatMap((s) => [s.from, s.to]))].sort((a, b) => a - b);
  const params = new Params();
  const b = params.add(bounds.map(usText));
  const lo = params.add(usText(bounds[0]));
  const hi = params.add(usText(bounds[bounds.length - 1]));
  let sql: string;
  if (rollups) {
    const f = filterSqlFor({ params, alias: "r", slots: NO_SLOTS }, filter);
    sql = `SELECT width_bucket(r.bucket, ${b}::timestamptz[]) AS j, sum(r.count) AS n, 0 AS vn, NULL::float8 AS s, NULL::float8 AS mn, NULL::float8 AS mx, 0 AS fr, 0 AS ab
      FROM analytics_rollups r WHERE r.project_id = ${params.add(projectId)} AND r.grain = ${GRAIN_CODE.minute}
        AND r.bucket >= ${lo}::timestamptz AND r.bucket < ${hi}::timestamptz AND ${f} GROUP BY 1`;
  } else {
    const s = rawScan(projectId, null, filter, slotsOf(env), params);
    const v = field ? numberSql(s.ctx, field) : null;
    if (field && !v)
      throw badRequest("field: needs a data, context or tags field", [
        { field: "field", message: "needs a numeric data, context or tags field" },
      ]);
    // The field's value read once per row (OFFSET 0 keeps the planner from copying its expression,
    // a jsonb lookup unless slotted, into each of the seven aggregates), then the segments' moments.
    sql = `SELECT width_bucket(x.ts, ${b}::timestamptz[]) AS j, count(*) AS n, count(x.v) AS vn, sum(x.v) AS s, min(x.v) AS mn, max(x.v) AS mx,
        count(*) FILTER (WHERE x.v <> trunc(x.v)) AS fr, sum(abs(x.v)) AS ab
      FROM (SELECT e.ts, ${v ?? "NULL::float8"} AS v FROM events e
             WHERE ${s.where} AND e.ts >= ${lo}::timestamptz AND e.ts < ${hi}::timestamptz OFFSET 0) x GROUP BY 1`;
  }
  // Segment j (1-based, as width_bucket numbers them) is [bounds[j-1], bounds[j]).
  const segments: WindowMoments[] = Array.from({ length: bounds.length }, () => EMPTY_MOMENTS);
  // Sums are exact in any order when every value is an integer and the sum of their magnitudes is
  // one (a double holds every integer up to 2^53).
  let fractional = 0;
  let magnitude = 0;
  for (const r of (await env.db.query<MomentsRow>(sql, params.values)).rows) {
    segments[Number(r.j)] = momentsOf(r);
    fractional += Number(r.fr);
    magnitude += r.ab ?? 0;
  }
  // With rollups: the last millisecond of each window [end, end + 1 ms) from the raw events.
  const lastMs = new Map<number, WindowMoments>();
  if (rollups) {
    const p = new Params();
    const s = rawScan(projectId, null, filter, slotsOf(env), p);
    const ends = p.add([...new Set(windows.map((w) => w.end))].map((ms) => new Date(ms).toISOString()));
    const rows = await env.db.query<{ t: Date; n: string }>(
      `SELECT x.t, c.n FROM unnest(${ends}::timestamptz[]) AS x(t) CROSS JOIN LATERAL (
         SELECT count(*) AS n FROM events e WHERE ${s.where} AND e.ts >= x.t AND e.ts < x.t + interval '1 millisecond') c
       WHERE c.n > 0`,
      p.values,
    );
    for (const r of rows.rows) lastMs.set(r.t.getTime(), { ...EMPTY_MOMENTS, n: Number(r.n) });
  }
  // Each window adds its segments; starts and ends only move forward, so the positions do too.
  const out: WindowMoments[] = [];
  let i = 0;
  for (let k = 0; k < spans.length; k++) {
    while (bounds[i] < spans[k].from) i++;
    const m = { ...(lastMs.get(windows[k].end) ?? EMPTY_MOMENTS) };
    for (let j = i + 1; j < bounds.length && bounds[j - 1] < spans[k].to; j++) addMoments(m, segments[j]);
    out.push(m);
  }
  return { windows: out, exactSums: fractional === 0 && magnitude <= Number.MAX_SAFE_INTEGER };
}
