import { filterFields, type Node } from "./filters.js";
import { filterSql, type Ctx } from "./compile.js";
import { Params, type SlotMap } from "./sql.js";
import type { Window } from "./time.js";

// Planning helpers shared by the query functions (pure): where rollups can answer, and the WHERE
// clause of a raw scan (project, window, filter).

/** Rollups hold (type, time) only: they answer when every filter field is the event type. */
export function rollupEligible(filter: Node | null): boolean {
  return filterFields(filter).every((f) => f.kind === "column" && f.column === "type");
}

export interface Scan {
  params: Params;
  ctx: Ctx;
  /** `e.project_id = $1 AND <window> AND <filter>` */
  where: string;
}

export function rawScan(
  projectId: string,
  w: Window | null,
  filter: Node | null,
  slots: SlotMap,
  params = new Params(),
): Scan {
  const ctx: Ctx = { params, alias: "e", slots };
  const parts = [`e.project_id = ${params.add(projectId)}::text`];
  if (w)
    parts.push(`e.ts >= ${params.add(w.start.text)}::timestamptz`, `e.ts <= ${params.add(w.end.text)}::timestamptz`);
  parts.push(filterSql(ctx, filter));
  return { params, ctx, where: parts.join(" AND ") };
}
