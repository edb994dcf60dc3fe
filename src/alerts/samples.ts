import type { Aggregation as EventAggregation } from "../analytics/queries.js";
import { parseOperation, type Operation } from "../analytics/aggregations.js";
import { resolveField } from "../analytics/fields.js";
import { parseFilters } from "../analytics/filters.js";
import type { WindowMoments } from "../analytics/queries.js";
import type { WindowQueries } from "../analytics/service.js";
import type { Cohort } from "../analytics/journeys.js";
import { nextBucket, type Interval, type Window } from "../analytics/time.js";
import { fromMoments, percentileOf } from "../metrics/model.js";
import { aggregate as metricAggregate, rangeMoments } from "../metrics/query.js";
import { aggregationFor, rangeOf, selection } from "../metrics/requests.js";
import { findMetric } from "../metrics/store.js";
import { assertNever } from "../shared/never.js";
import type { Queryable } from "../storage/db.js";
import type { Sample } from "./model.js";
import type { AlertQuery } from "./requests.js";

// The sample of an evaluation at `t`: what the window [t - windowMs, t] (both ends included)
// answers, with the very code of the matching endpoint: metrics/query (its rollups and raw edges:
// src/metrics/query.ts) or analytics/aggregate and count (rollups and column blocks:
// src/analytics/queries.ts through the analytics feature's WindowQueries), analytics/funnel and
// retention (src/analytics/journeys.ts, also through WindowQueries). No second SQL for the same
// number. `samples` is what the value rests on: metric points, matching events, the ratio's
// denominator events, the funnel's first-step actors or the retention cohort's size.

export interface SampleSources {
  db: Queryable;
  windows: WindowQueries;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The inclusive window [at - windowMs, at] as analytics reads it (time.start, time.end). */
function windowOf(at: number, windowMs: number): Window {
  const instant = (ms: number) => ({ ms, subMsNanos: 0, text: iso(ms) });
  return { start: instant(at - windowMs), end: instant(at) };
}

const COUNT: Operation = { kind: "count" };

export async function sampleAt(
  src: SampleSources,
  projectId: string,
  query: AlertQuery,
  at: number,
  windowMs: number,
): Promise<Sample> {
  switch (query.source) {
    case "metric": {
      const m = await findMetric(src.db, projectId, query.name);
      if (!m) return { value: null, samples: 0 };
      // As metrics/query with time {start: at - windowMs, end: at}.
      const sel = selection(m, {}, rangeOf({ start: iso(at - windowMs), end: iso(at) }));
      const r = await metricAggregate(src.db, sel, aggregationFor(m, query.aggregation));
      return { value: r.value, samples: r.count };
    }
    case "events": {
      const w = windowOf(at, windowMs);
      const filter = parseFilters(query.filters ?? null);
      const op = parseOperation(query.operation)!;
      const aggs: EventAggregation[] = [
        { name: "n", field: null, operation: COUNT },
        { name: "v", field: query.field ? resolveField(query.field) : null, operation: op },
      ];
      const [n, v] = await src.windows.aggregate(projectId, w, filter, aggs);
      return { value: v, samples: n ?? 0 };
    }
    case "ratio": {
      const w = windowOf(at, windowMs);
      const [num, den] = await Promise.all([
        src.windows.count(projectId, w, parseFilters(query.numerator.filters ?? null)),
        src.windows.count(projectId, w, parseFilters(query.denominator.filters ?? null)),
      ]);
      return { value: den > 0 ? num / den : null, samples: den };
    }
    case "funnel": {
      // The funnels entered in the windowMs that ended one conversion window before `at`: every
      // entrant had its whole conversion window by `at`, so the value does not change afterwards.
      const conv = query.conversionWindowMs;
      const steps = query.steps.map((s) => parseFilters(s.filters ?? null));
      const counts = await src.windows.funnel(projectId, windowOf(at - conv, windowMs), steps, conv);
      const first = counts[0];
      return { value: first > 0 ? counts[counts.length - 1] / first : null, samples: first };
    }
    case "retention": {
      const cohorts = await src.windows.retention(
        projectId,
        windowOf(at, windowMs),
        parseFilters(query.start.filters ?? null),
        parseFilters(query.return.filters ?? null),
        query.interval,
        query.period + 1,
      );
      return retentionSample(cohorts, query.interval, query.period, at);
    }
    default:
      return assertNever(query, "alert query source");
  }
}

/**
 * A retention alert's value: the share of the newest *complete* cohort that came back in interval
 * `period` (values[period] / size), where complete means that interval has ended by `at` (the
 * interval after it starts at or before `at`). No such cohort: no data. Samples: the cohort's size.
 */
function retentionSample(cohorts: readonly Cohort[], interval: Interval, period: number, at: number): Sample {
  for (let i = cohorts.length - 1; i >= 0; i--) {
    const c = cohorts[i];
    let end = Date.parse(c.start);
    for (let p = 0; p <= period; p++) end = nextBucket(end, interval);
    const v = c.values[period];
    if (end <= at && v !== null && v !== undefined) return { value: c.size > 0 ? v / c.size : null, samples: c.size };
  }
  return { value: null, samples: 0 };
}

/**
 * Preview (the same windows as `sampleAt`, for every evaluation time at once): the samples from at
 * most a few statements per source series, or null where no exact plan of that kind applies and the
 * caller samples each evaluation with `sampleAt`. The windows' moments (events: WindowQueries.moments;
 * metrics: rangeMoments) cut the preview's range at every window bound and add up the pieces, which
 * is exact for counts, minima and maxima, and for sums and averages of integers (exactSums); a
 * percentile, a distinct count, a standard deviation, an events count of a field's values, and sums
 * of other floats (another order of additions may differ in the last bit) go through sampleAt.
 */
export async function previewSamples(
  src: SampleSources,
  projectId: string,
  query: AlertQuery,
  times: readonly number[],
  windowMs: number,
): Promise<Sample[] | null> {
  const windows = times.map((at) => ({ start: at - windowMs, end: at }));
  switch (query.source) {
    case "metric": {
      const m = await findMetric(src.db, projectId, query.name);
      if (!m) return times.map(() => ({ value: null, samples: 0 }));
      const agg = aggregationFor(m, query.aggregation);
      if (percentileOf(agg) !== undefined) return null;
      // As sampleAt's selection: the inclusive window [at - windowMs, at] as rangeOf reads it.
      const sel = selection(m, {}, rangeOf({ start: iso(0), end: iso(0) }));
      const ranges = windows.map((w) => rangeOf({ start: iso(w.start), end: iso(w.end) }));
      const r = await rangeMoments(src.db, sel, ranges);
      if (!r.exactSums && (agg === "sum" || agg === "avg")) return null;
      const moment = agg as Exclude<typeof agg, `p${number}`>;
      return r.ranges.map((x) => ({ value: fromMoments(moment, x, sel.negate), samples: x.n }));
    }
    case "events": {
      const op = parseOperation(query.operation)!;
      const value = MOMENT_VALUES[op.kind];
      if (!value || (op.kind === "count" && query.field)) return null;
      const field = query.field ? resolveField(query.field) : null;
      const r = await src.windows.moments(projectId, windows, parseFilters(query.filters ?? null), field);
      if (!r.exactSums && (op.kind === "sum" || op.kind === "avg")) return null;
      return r.windows.map((x) => ({ value: value(x), samples: x.n }));
    }
    case "ratio": {
      const [num, den] = await Promise.all([
        src.windows.moments(projectId, windows, parseFilters(query.numerator.filters ?? null), null),
        src.windows.moments(projectId, windows, parseFilters(query.denominator.filters ?? null), null),
      ]);
      return den.windows.map((d, k) => ({ value: d.n > 0 ? num.windows[k].n / d.n : null, samples: d.n }));
    }
    case "funnel":
    case "retention":
      return null; // journeys per evaluation (sampleAt)
    default:
      return assertNever(query, "alert query source");
  }
}

/** The events operations a window's moments answer (as analytics/aggregate does); null: sampleAt. */
const MOMENT_VALUES: Record<Operation["kind"], ((m: WindowMoments) => number | null) | null> = {
  count: (m) => m.n,
  sum: (m) => m.sum,
  avg: (m) => (m.vn > 0 ? m.sum / m.vn : null),
  min: (m) => m.min,
  max: (m) => m.max,
  count_unique: null,
  stddev: null,
  percentile: null,
};
