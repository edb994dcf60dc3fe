import { parseFilters, type Node } from "../analytics/filters.js";
import type { Queryable } from "../storage/db.js";

// Which enabled webhooks of a project watch which event types (and their payload filters, parsed
// once per load), cached per project so that the
// ingest transaction pays nothing when nothing is watched. Invalidated at once on this node by
// the management routes, on the other nodes by NOTIFY (the shared LISTEN connection, src/shared/notifications.ts), and bounded by a short TTL
// should a notification be missed (listener reconnecting).

export interface Subscription {
  webhookId: string;
  events: Set<string>;
  /** The webhook's `filters` (the analytics filter model); null when it has none. */
  filter: Node | null;
}

interface Entry {
  loadedAt: number;
  subs: Subscription[];
}

/** How long a project's cached subscriptions are trusted without a change notice. */
const SUBSCRIPTION_TTL_MS = 5_000;

export class SubscriptionCache {
  private readonly entries = new Map<string, Entry>();
  /** Bumped by every invalidation: a load that started before it does not store its result. */
  private generation = 0;

  constructor(
    private readonly ttlMs = SUBSCRIPTION_TTL_MS,
    private readonly nowMs: () => number = Date.now,
  ) {}

  invalidate(projectId?: string): void {
    this.generation++;
    if (projectId === undefined) this.entries.clear();
    else this.entries.delete(projectId);
  }

  /** Subscriptions of each project from the cache alone, or undefined when one is missing or stale. */
  cached(projectIds: string[]): Map<string, Subscription[]> | undefined {
    const { fresh, missing } = this.lookup(projectIds, this.nowMs());
    return missing.length ? undefined : fresh;
  }

  /** The fresh cache entries of the projects, and the projects without one. */
  private lookup(projectIds: string[], now: number): { fresh: Map<string, Subscription[]>; missing: string[] } {
    const fresh = new Map<string, Subscription[]>();
    const missing: string[] = [];
    for (const id of new Set(projectIds)) {
      const e = this.entries.get(id);
      if (e && now - e.loadedAt < this.ttlMs) fresh.set(id, e.subs);
      else missing.push(id);
    }
    return { fresh, missing };
  }

  /** Subscriptions of each project, loading the missing or stale ones in one query. */
  async forProjects(q: Queryable, projectIds: string[]): Promise<Map<string, Subscription[]>> {
    const now = this.nowMs();
    const { fresh: out, missing } = this.lookup(projectIds, now);
    if (missing.length === 0) return out;
    const gen = this.generation;
    const r = await q.query<{ id: string; project_id: string; events: string[]; filters: unknown }>(
      "SELECT id, project_id, events, filters FROM webhooks WHERE project_id = ANY($1) AND enabled ORDER BY created_at, id",
      [missing],
    );
    const loaded = new Map<string, Subscription[]>(missing.map((id) => [id, []]));
    for (const row of r.rows)
      loaded
        .get(row.project_id)!
        .push({ webhookId: row.id, events: new Set(row.events), filter: storedFilter(row.filters) });
    for (const [id, subs] of loaded) {
      out.set(id, subs);
      if (gen === this.generation) this.entries.set(id, { loadedAt: now, subs });
    }
    return out;
  }
}

/**
 * A stored `filters` (validated when it was written) as its tree. It is parsed again without the
 * node bound, so that lowering ANALYTICS_MAX_FILTER_NODES never stops a webhook's deliveries.
 */
function storedFilter(v: unknown): Node | null {
  return parseFilters(v, Number.MAX_SAFE_INTEGER);
}
