import type { PoolClient } from "pg";
import { conflict } from "./errors.js";

// A per-project cap on records (webhooks, API keys, members: docs/security.md "Records"). The caller
// counts and inserts in ONE transaction after `holdProjectCap`: it takes the project's advisory lock
// for that kind of record (held until commit or rollback), so concurrent creations on any number of
// nodes are serialised and stop exactly at the cap. The monitor cap (src/uptime/cap.ts) and the
// page cap (src/pages/store.ts) take locks of the same form.

export interface ProjectCap {
  /** The records, plural ("webhooks"): the lock's name and the error's words. */
  what: string;
  max: number;
  /** The count of the project's records that hold a place ($1: the project id); one row, column `n`. */
  countSql: string;
  /** The request field the error's detail names. */
  field: string;
}

/** Takes the cap's lock for the project, then 409 `conflict` when it already holds `max` records. */
export async function holdProjectCap(c: PoolClient, projectId: string, cap: ProjectCap): Promise<void> {
  await c.query("SELECT pg_advisory_xact_lock(hashtextextended('vigil:' || $1 || ':' || $2, 0))", [
    cap.what,
    projectId,
  ]);
  const n = (await c.query<{ n: number }>(cap.countSql, [projectId])).rows[0].n;
  if (n >= cap.max)
    throw conflict(`this project has reached its limit of ${cap.max} ${cap.what}; delete one before adding another`, [
      { field: cap.field, message: `at most ${cap.max} ${cap.what} per project` },
    ]);
}
