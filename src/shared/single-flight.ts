// Keyed single-flight: while a computation for a key runs, callers for the same key share its
// promise instead of starting another (status pages: one build per page however many readers
// arrive at once). Nothing is kept once it settles: caching the result is the caller's business.
// Coalescer (coalesce.ts) queues items into batches; this dedups concurrent calls by key.

export class SingleFlight<K, V> {
  private readonly flights = new Map<K, Promise<V>>();

  /** `fn()` unless a call for `key` is in flight; then that call's promise. */
  run(key: K, fn: () => Promise<V>): Promise<V> {
    const running = this.flights.get(key);
    if (running) return running;
    const p = (async () => {
      try {
        return await fn();
      } finally {
        this.flights.delete(key);
      }
    })();
    this.flights.set(key, p);
    return p;
  }

  /** Computations in flight. */
  get size(): number {
    return this.flights.size;
  }
}
