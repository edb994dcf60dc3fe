import type { Aggregation as EventAggregation } from "../analytics/queries.js";
import { parseOperation, type Operation } from "../analytics/aggregations.js";
import { resolveField } from "../analytics/fields.js";
import { parseFilters } from "../analytics/filters.js";
import type { WindowQueries } from "../analytics/service.js";
import type { Window } from "../analytics/time.js";
import { aggregate as metricAggregate } from "../metrics/query.js";
import { aggregationFor, rangeOf, selection } from "../metrics/requests.js";
import { findMetric } from "../metrics/store.js";
import { assertNever } from "../shared/never.js";
import type { Queryable } from "../storage/db.js";
import type { Sample } from "./model.js";
import type { AlertQuery } from "./requests.js";

// The sample of an evaluation at `t`: what the window [t - windowMs, t] (both ends included)
// answers, with the very code of the matching endpoint: metrics/query (its rollups and raw edges:
// src/metrics/query.ts) or analytics/aggregate and count (rollups and column blocks:
// src/analytics/queries.ts through the analytics feature's WindowQueries). No second SQL for the
// same number. `samples` is what the value rests on: metric points, matching events, or the ratio's
// denominator events.

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
    default:
      return assertNever(query, "alert query source");
  }
}
