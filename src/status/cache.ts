import { LRUCache } from "lru-cache";
import { SingleFlight } from "../shared/single-flight.js";

// The snapshot cache of the public pages, per slug and per node:
// * a page is computed at most once per `refreshMs` (measured from the start of its build);
// * single-flight: one build per slug at a time; readers arriving meanwhile await that build;
// * stale while refreshing: once a page has been built, readers after its interval get the old
//   snapshot at once while one refresh runs (a failed refresh is logged and the old one is kept);
// * unknown and unpublished slugs are remembered as "not found" for the same interval, in their own
//   LRU bounded by count, so random slugs neither reach the database each time nor grow memory;
//   pages live in an LRU bounded by the bytes their snapshots hold.
// Time is the process's monotonic clock, not the service clock: the interval is an operating bound.

export interface SnapshotCacheOptions<S> {
  refreshMs: number;
  /** The page of a slug now, or undefined when there is none (unknown or unpublished). */
  build(slug: string): Promise<S | undefined>;
  /** Bytes a snapshot holds. */
  size(s: S): number;
  /** A refresh failed while a stale snapshot was served. */
  onStaleError?(err: unknown, slug: string): void;
  /** Memory for pages (default 64 MiB) and how many "not found" slugs are remembered (default 10,000). */
  maxBytes?: number;
  maxMissing?: number;
  now?: () => number;
}

interface Held<S> {
  snapshot: S;
  at: number;
}

export class SnapshotCache<S extends object> {
  private readonly pages: LRUCache<string, Held<S>>;
  private readonly missing: LRUCache<string, number>;
  private readonly flights = new SingleFlight<string, S | undefined>();
  private readonly now: () => number;

  constructor(private readonly o: SnapshotCacheOptions<S>) {
    this.now = o.now ?? (() => performance.now());
    this.pages = new LRUCache<string, Held<S>>({
      maxSize: o.maxBytes ?? 64 * 1024 * 1024,
      sizeCalculation: (h) => Math.max(1, o.size(h.snapshot)),
    });
    this.missing = new LRUCache<string, number>({ max: o.maxMissing ?? 10_000 });
  }

  /** The snapshot of `slug`, or undefined when it has no published page. */
  async get(slug: string): Promise<S | undefined> {
    const now = this.now();
    const held = this.pages.get(slug);
    if (held && now - held.at < this.o.refreshMs) return held.snapshot;
    if (!held) {
      const missedAt = this.missing.get(slug);
      if (missedAt !== undefined && now - missedAt < this.o.refreshMs) return undefined;
    }
    const refresh = this.flights.run(slug, () => this.build(slug));
    if (!held) return refresh;
    refresh.catch((err) => this.o.onStaleError?.(err, slug));
    return held.snapshot;
  }

  private async build(slug: string): Promise<S | undefined> {
    const at = this.now();
    const snapshot = await this.o.build(slug);
    if (snapshot) {
      this.missing.delete(slug);
      this.pages.set(slug, { snapshot, at });
    } else {
      this.pages.delete(slug);
      this.missing.set(slug, at);
    }
    return snapshot;
  }

  /** Slugs held (pages and "not found" ones) and builds in flight. */
  get stats(): { pages: number; missing: number; building: number } {
    return { pages: this.pages.size, missing: this.missing.size, building: this.flights.size };
  }
}
