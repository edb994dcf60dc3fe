import type { PoolClient } from "pg";
import { ApiError } from "../shared/errors.js";

// The per-project monitor cap (MAX_MONITORS_PER_PROJECT). Every path that creates monitors (POST
// .../monitors and a heartbeat to a new slug) takes the project's creation lock, a transaction-level
// advisory lock, before it counts and inserts, so concurrent creations on any node cannot overrun
// the cap. The lock is taken before any monitor row lock where possible (one order: no deadlock).

/** Takes the creation lock of each project (in one sorted order), held until commit or rollback. */
export async function lockMonitorCreation(c: PoolClient, projectIds: Iterable<string>): Promise<void> {
  for (const id of [...new Set(projectIds)].sort())
    await c.query("SELECT pg_advisory_xact_lock(hashtextextended('vigil:monitors:' || $1, 0))", [id]);
}

/** Monitors per project, for the given projects (missing: 0). */
export async function monitorCounts(c: PoolClient, projectIds: Iterable<string>): Promise<Map<string, number>> {
  const ids = [...new Set(projectIds)];
  const r = await c.query<{ project_id: string; n: number }>(
    "SELECT project_id, count(*)::int AS n FROM monitors WHERE project_id = ANY($1::text[]) GROUP BY project_id",
    [ids],
  );
  return new Map(r.rows.map((x) => [x.project_id, x.n]));
}

/** 409: the project holds as many monitors as it may; retrying does not help until one is deleted. */
export const monitorCapReached = (max: number) =>
  new ApiError(
    409,
    "conflict",
    `this project has reached its limit of ${max} monitors; delete one before creating another`,
    [{ field: "slug", message: `at most ${max} monitors per project` }],
  );
