import { assertNever } from "../shared/never.js";

// The operations of the aggregate route (decisions.md: Analytics; docs/analytics.md): the one table
// of them. `numeric` operations read JSON numbers only and need a field; the others count values
// (without a field: events, or distinct `userId`). A new operation is a line here; tsc then names
// the switches that must compute it: queries.ts (SQL) and blocks/engine.ts (column blocks), each
// ending in assertNever. docs/architecture.md: "Add an aggregation".

const AGGREGATIONS = {
  count: { numeric: false },
  count_unique: { numeric: false },
  sum: { numeric: true },
  avg: { numeric: true },
  min: { numeric: true },
  max: { numeric: true },
  /**
   * Vigil's own (not in the spec's list): the sample standard deviation (PostgreSQL's `stddev`,
   * n − 1 in the denominator); null for fewer than two numbers.
   */
  stddev: { numeric: true },
  /** Spelled `p1`..`p99`: exact percentile_cont (linear interpolation). */
  percentile: { numeric: true },
} as const satisfies Record<string, { numeric: boolean }>;

type AggregationKind = keyof typeof AGGREGATIONS;

/** A parsed operation: its kind, and a percentile's fraction (p95 → 0.95). */
export type Operation = { kind: Exclude<AggregationKind, "percentile"> } | { kind: "percentile"; fraction: number };

const PERCENTILE = /^p([1-9]|[1-9][0-9])$/;

/** The operation a request names, or undefined for a name that is none. */
export function parseOperation(name: string): Operation | undefined {
  const m = PERCENTILE.exec(name);
  if (m) return { kind: "percentile", fraction: Number(m[1]) / 100 };
  if (name === "percentile" || !Object.hasOwn(AGGREGATIONS, name)) return undefined;
  return { kind: name as Exclude<AggregationKind, "percentile"> };
}

/** The name a request gives the operation (p95 for a percentile of 0.95). */
export function operationName(op: Operation): string {
  switch (op.kind) {
    case "percentile":
      return `p${Math.round(op.fraction * 100)}`;
    case "count":
    case "count_unique":
    case "sum":
    case "avg":
    case "min":
    case "max":
    case "stddev":
      return op.kind;
    default:
      return assertNever(op, "aggregation");
  }
}

export const isNumeric = (op: Operation): boolean => AGGREGATIONS[op.kind].numeric;

/** For messages: "count, count_unique, sum, avg, min, max or p1..p99". */
export const OPERATION_NAMES = `${Object.keys(AGGREGATIONS)
  .filter((k) => k !== "percentile")
  .join(", ")} or p1..p99`;
