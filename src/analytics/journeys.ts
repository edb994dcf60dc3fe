import type { JsonValue } from "@bufbuild/protobuf";
import { filterSql, jsonValueSql } from "./compile.js";
import type { Field } from "./fields.js";
import type { Node } from "./filters.js";
import { rawScan } from "./plan.js";
import type { QueryEnv } from "./queries.js";
import { NO_SLOTS, Params } from "./sql.js";
import { nextBucket, type Instant, type Interval, type Window } from "./time.js";

// Funnels and retention (decisions.md "Analytics, third round"; docs/analytics.md): per actor
// (`userId`), over the raw events (typed slots read where assigned, as every SQL path). Events
// without a userId are ignored.

/** One actor's events that match any step: times in ms (ascending) and which steps each matches (bit i: step i). */
export interface ActorEvents {
  ts: number[];
  masks: number[];
}

/**
 * How many steps the actor reaches: the largest k with events e1..ek, each a different event,
 * e_i matching step i, at t1 <= t2 <= ... <= tk <= t1 + window, with t1 in [from, to] (all in the
 * same unit: the query uses microseconds, the stored precision, so ties are exact).
 */
export function reachedSteps(a: ActorEvents, steps: number, from: number, to: number, window: number): number {
  return conversionPath(a, steps, from, to, window).length;
}

/**
 * The actor's conversion path: the times of the steps it reaches (as many as reachedSteps), on the
 * path that reaches its furthest step and starts latest, each later step taken as early as it can
 * be (docs/analytics.md "Funnels": the median time between steps is read from these paths).
 *
 * One pass over the actor's timestamps finds the furthest step and that path's start (linear in its
 * events, not quadratic: a heavy user's thousands of events per window made the walk from each
 * candidate t1 cost seconds). Only the level a partial chain has reached and its t1 decide how it
 * can go on (the events it used all lie at earlier timestamps), and of two chains at the same level
 * the later t1 leaves more of the window, so it is enough to keep, per level j, the latest t1 of a
 * chain that reached at least j steps. Within one timestamp, the next steps j+1, j+2, ... are given
 * to distinct events by bipartite matching (augmenting paths), as many as possible; reaching a step
 * earlier never hurts, since a later timestamp can serve any later step. A chain starts at a
 * timestamp in [from, to] with a step-1 event. A second pass walks from that start, taking at each
 * timestamp as many steps as its events carry: each step at its earliest time.
 */
export function conversionPath(a: ActorEvents, steps: number, from: number, to: number, window: number): number[] {
  const n = a.ts.length;
  // latest[j]: the latest t1 of a chain that reached at least j steps (j = 1..steps); -Infinity: none.
  const latest: number[] = new Array<number>(steps + 1).fill(-Infinity);
  for (let g = 0; g < n;) {
    const t = a.ts[g];
    let e = g;
    while (e < n && a.ts[e] === t) e++;
    const masks = a.masks.slice(g, e);
    const next = latest.slice();
    // Level 0: a chain starting here. Levels 1..steps-1: the latest chain there, if t is still in its window.
    for (let j = 0; j < steps; j++) {
      const t1 = j === 0 ? (t >= from && t <= to ? t : -Infinity) : latest[j];
      if (t1 === -Infinity || t > t1 + window) continue;
      const k = matchGroup(masks, j, steps);
      for (let m = j + 1; m <= k; m++) if (t1 > next[m]) next[m] = t1;
    }
    for (let m = 1; m <= steps; m++) latest[m] = next[m];
    g = e;
  }
  let best = 0;
  for (let m = 1; m <= steps; m++) if (latest[m] !== -Infinity) best = m;
  if (best === 0) return [];
  const t1 = latest[best];
  const times: number[] = [];
  for (let g = a.ts.indexOf(t1); g < n && times.length < best && a.ts[g] <= t1 + window;) {
    const t = a.ts[g];
    let e = g;
    while (e < n && a.ts[e] === t) e++;
    const k = Math.min(best, matchGroup(a.masks.slice(g, e), times.length, steps));
    while (times.length < k) times.push(t);
    g = e;
  }
  return times;
}

/** From step `s` on, how far distinct events of one timestamp (their masks) carry the funnel. */
function matchGroup(masks: number[], s: number, steps: number): number {
  const owner: number[] = masks.map(() => -1); // event -> step it serves
  const augment = (step: number, seen: boolean[]): boolean => {
    for (let e = 0; e < masks.length; e++) {
      if ((masks[e] & (1 << step)) === 0 || seen[e]) continue;
      seen[e] = true;
      if (owner[e] === -1 || augment(owner[e], seen)) {
        owner[e] = step;
        return true;
      }
    }
    return false;
  };
  let k = s;
  while (
    k < steps &&
    augment(
      k,
      masks.map(() => false),
    )
  )
    k++;
  return k;
}

/** One step's answer: the actors reaching it, and the median ms their paths took from the step before. */
export interface StepTally {
  count: number;
  /** null for the first step, and when no actor reached the step. */
  medianTimeMs: number | null;
}

/** analytics/funnel's answer: per step, then per value of the breakdown field (empty without one). */
export interface FunnelReport {
  steps: StepTally[];
  breakdown: { value: JsonValue; steps: StepTally[] }[];
}

/** The funnel again per value of `field` on the first step's event, for the `limit` values most actors start with. */
export interface FunnelBreakdown {
  field: Field;
  limit: number;
}

/** Counts and times between steps of the actors' conversion paths, step by step. */
class Tally {
  private readonly counts: number[];
  private readonly gaps: number[][];

  constructor(steps: number) {
    this.counts = new Array<number>(steps).fill(0);
    this.gaps = Array.from({ length: steps }, () => []);
  }

  /** One actor's path (step times in microseconds). */
  add(path: number[]): void {
    for (let i = 0; i < path.length; i++) {
      this.counts[i]++;
      if (i > 0) this.gaps[i].push(path[i] - path[i - 1]);
    }
  }

  steps(): StepTally[] {
    return this.counts.map((count, i) => ({ count, medianTimeMs: i === 0 ? null : medianOf(this.gaps[i]) }));
  }
}

/** The median of microsecond gaps, in ms (the mean of the middle two for an even count); null for none. */
function medianOf(us: number[]): number | null {
  if (!us.length) return null;
  const s = us.slice().sort((a, b) => a - b);
  const mid = s.length >> 1;
  return (s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2) / 1000;
}

/**
 * Per step, the actors reaching it and the median time between steps; with a breakdown, the same
 * per value of its field on a first step's event: the funnel whose first step also requires that
 * value (an actor starting with two values counts under each), for the `limit` values with the most
 * first-step actors (most first; ties by the value's JSON text). One SQL statement: each actor's
 * matching events as arrays.
 */
export async function funnel(
  env: QueryEnv,
  projectId: string,
  w: Window,
  steps: (Node | null)[],
  windowMs: number,
  breakdown?: FunnelBreakdown,
): Promise<FunnelReport> {
  const params = new Params();
  const s = rawScan(projectId, null, null, env.fast ? env.slots : NO_SLOTS, params);
  const start = params.add(w.start.text);
  // Later steps may fall after time.end (only t1 must lie in `time`), up to end + windowMs.
  const end = `${params.add(w.end.text)}::timestamptz + ${params.add(windowMs)}::float8 * interval '1 millisecond'`;
  const mask = steps.map((f, i) => `(CASE WHEN ${filterSql(s.ctx, f)} THEN ${1 << i} ELSE 0 END)`).join(" | ");
  // With a breakdown, each first-step event's value (JSON text) beside its mask, in the same order
  // (ties at one timestamp ordered by event id, so the arrays line up).
  const by = breakdown ? ", m.id" : "";
  const values = breakdown ? `, array_agg(CASE WHEN m.m & 1 <> 0 THEN m.v END ORDER BY m.ts${by}) AS v` : "";
  const value = breakdown ? `, e.id, (${jsonValueSql(s.ctx, breakdown.field)})::text AS v` : "";
  const r = await env.db.query<{ ts: string[]; m: number[]; v?: (string | null)[] }>(
    `SELECT array_agg((extract(epoch FROM m.ts) * 1000000)::bigint::text ORDER BY m.ts${by}) AS ts, array_agg(m.m ORDER BY m.ts${by}) AS m${values}
       FROM (SELECT e.user_id, e.ts, (${mask}) AS m${value} FROM events e
              WHERE ${s.where} AND e.user_id IS NOT NULL AND e.ts >= ${start}::timestamptz AND e.ts <= ${end}) m
      WHERE m.m <> 0 GROUP BY m.user_id`,
    params.values,
  );
  const from = micros(w.start, 1);
  const to = micros(w.end, 0);
  const win = windowMs * 1000;
  const all = new Tally(steps.length);
  const actors = r.rows.map((row) => ({ ts: row.ts.map(Number), masks: row.m, values: row.v }));
  for (const a of actors) all.add(conversionPath(a, steps.length, from, to, win));
  if (!breakdown) return { steps: all.steps(), breakdown: [] };

  // The values each actor starts with (first-step events in `time`); their actors are the first step's counts.
  const starts = actors.map((a) => {
    const vs = new Set<string>();
    a.ts.forEach((t, i) => {
      if (a.masks[i] & 1 && t >= from && t <= to) vs.add(a.values?.[i] ?? "null");
    });
    return vs;
  });
  const firsts = new Map<string, number>();
  for (const vs of starts) for (const v of vs) firsts.set(v, (firsts.get(v) ?? 0) + 1);
  const top = [...firsts]
    .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
    .slice(0, breakdown.limit)
    .map(([v]) => v);
  const tallies = new Map(top.map((v) => [v, new Tally(steps.length)]));
  actors.forEach((a, k) => {
    for (const v of starts[k]) {
      const tally = tallies.get(v);
      if (!tally) continue;
      // The first step only by an event with this value.
      const masks = a.masks.map((m, i) => ((a.values?.[i] ?? "null") === v ? m : m & ~1));
      tally.add(conversionPath({ ts: a.ts, masks }, steps.length, from, to, win));
    }
  });
  return {
    steps: all.steps(),
    breakdown: top.map((v) => ({ value: JSON.parse(v) as JsonValue, steps: tallies.get(v)!.steps() })),
  };
}

/** An instant in microseconds (sub-microsecond parts rounded inward: up for a start, down for an end). */
const micros = (i: Instant, up: 0 | 1): number => i.ms * 1000 + Math[up ? "ceil" : "floor"](i.subMsNanos / 1000);

export interface Cohort {
  start: string;
  size: number;
  values: (number | null)[];
}

/** Retention cohorts, oldest first: actor counts per (cohort, return interval), one SQL statement. */
export async function retention(
  env: QueryEnv,
  projectId: string,
  w: Window,
  start: Node | null,
  back: Node | null,
  interval: Interval,
  periods: number,
): Promise<Cohort[]> {
  const params = new Params();
  const slots = env.fast ? env.slots : NO_SLOTS;
  const a = rawScan(projectId, w, start, slots, params);
  const b = rawScan(projectId, w, back, slots, params);
  const unit = params.add(interval);
  const r = await env.db.query<{ c: Date; b: Date | null; n: number }>(
    `WITH firsts AS (SELECT e.user_id AS a, date_trunc(${unit}::text, min(e.ts), 'UTC') AS c FROM events e
                      WHERE ${a.where} AND e.user_id IS NOT NULL GROUP BY e.user_id),
          backs AS (SELECT DISTINCT e.user_id AS a, date_trunc(${unit}::text, e.ts, 'UTC') AS b FROM events e
                     WHERE ${b.where} AND e.user_id IS NOT NULL)
     SELECT f.c, NULL::timestamptz AS b, count(*)::float8 AS n FROM firsts f GROUP BY f.c
     UNION ALL
     SELECT f.c, k.b, count(*)::float8 AS n FROM firsts f JOIN backs k ON k.a = f.a AND k.b >= f.c GROUP BY f.c, k.b`,
    params.values,
  );
  const sizes = new Map<number, number>();
  const cells = new Map<string, number>();
  for (const row of r.rows) {
    if (row.b === null) sizes.set(row.c.getTime(), Number(row.n));
    else cells.set(`${row.c.getTime()}/${row.b.getTime()}`, Number(row.n));
  }
  return [...sizes.keys()]
    .sort((x, y) => x - y)
    .map((c) => {
      const values: (number | null)[] = [];
      for (let p = 0, b = c; p < periods; p++, b = nextBucket(b, interval))
        values.push(b > w.end.ms ? null : (cells.get(`${c}/${b}`) ?? 0));
      return { start: new Date(c).toISOString(), size: sizes.get(c) ?? 0, values };
    });
}
