import { rateLimited, requestCancelled } from "../shared/errors.js";

// Per-project share of the connection pool for analytics: at most `max` analytics requests of one
// project hold a connection at once (ANALYTICS_MAX_CONCURRENT_PER_PROJECT, per process, like the
// pool itself). Further requests of that project wait in a FIFO queue for up to `waitMs`
// (ANALYTICS_QUEUE_TIMEOUT_MS), then answer 429 with Retry-After; a queue already holding
// MAX_QUEUED requests answers 429 at once. Other projects are never queued behind them.

const MAX_QUEUED = 100;
const RETRY_AFTER_SECONDS = 1;

interface Waiter {
  grant(): void;
}
interface Slot {
  active: number;
  waiting: Waiter[];
}

export class ProjectLimiter {
  private readonly projects = new Map<string, Slot>();

  constructor(
    private readonly max: number,
    private readonly waitMs: number,
    private readonly maxQueued = MAX_QUEUED,
  ) {}

  /** Runs fn holding one of the project's slots. */
  async run<T>(projectId: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    await this.acquire(projectId, signal);
    try {
      return await fn();
    } finally {
      this.release(projectId);
    }
  }

  /** Requests of the project running now (for tests and metrics). */
  active(projectId: string): number {
    return this.projects.get(projectId)?.active ?? 0;
  }

  private acquire(projectId: string, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(requestCancelled());
    let slot = this.projects.get(projectId);
    if (!slot) this.projects.set(projectId, (slot = { active: 0, waiting: [] }));
    if (slot.active < this.max) {
      slot.active++;
      return Promise.resolve();
    }
    if (slot.waiting.length >= this.maxQueued || this.waitMs === 0)
      return Promise.reject(rateLimited(RETRY_AFTER_SECONDS));
    const s = slot;
    return new Promise<void>((resolve, reject) => {
      const leave = (err: unknown) => {
        const i = s.waiting.indexOf(waiter);
        if (i >= 0) s.waiting.splice(i, 1);
        cleanup();
        reject(err);
      };
      const onAbort = () => leave(requestCancelled());
      const timer = setTimeout(() => leave(rateLimited(RETRY_AFTER_SECONDS)), this.waitMs);
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      // The releasing request hands its slot over: `active` stays as it is.
      const waiter: Waiter = { grant: () => (cleanup(), resolve()) };
      signal?.addEventListener("abort", onAbort, { once: true });
      s.waiting.push(waiter);
    });
  }

  private release(projectId: string): void {
    const slot = this.projects.get(projectId);
    if (!slot) return;
    const next = slot.waiting.shift();
    if (next) return next.grant();
    slot.active--;
    if (slot.active === 0) this.projects.delete(projectId);
  }
}
