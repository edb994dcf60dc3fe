import { createContextKey } from "@connectrpc/connect";
import { ApiError } from "./errors.js";

// A bound on the request-body bytes a node holds at once (docs/security.md "Bodies in flight"): per
// caller (an API key, a session's account, or a client address) and overall. A request's budget is
// charged as its bytes arrive (read, and inflated for a gzip body), so a compression bomb or many
// concurrent bodies can never hold more than the bound, and is released once the request is
// answered, failed or abandoned by its client. Over the caller's share: 429 with Retry-After; over
// the node's: 503 with Retry-After.

/** What a refused request is told to wait (seconds): bodies in flight are answered within moments. */
const INFLIGHT_RETRY_AFTER_SECONDS = 1;

/** One request's share of the bound: `take` as bytes arrive, `release` once (idempotent) when done. */
export interface BodyBudget {
  take(bytes: number): void;
  release(): void;
}

/** No bound (routes without one, and requests that never reach the gate). */
export const UNBOUNDED: BodyBudget = { take() {}, release() {} };

/** The request's budget, set by the edge (src/server/app.ts) once the gate has resolved the caller. */
export const bodyBudgetKey = createContextKey<BodyBudget>(UNBOUNDED);

export interface InflightLimits {
  /** Bytes one caller may have in flight at once. */
  perKey: number;
  /** Bytes the node may have in flight at once, every caller together. */
  total: number;
}

export class InflightBytes {
  private held = 0;
  private readonly byKey = new Map<string, number>();

  constructor(
    private readonly limits: InflightLimits,
    /** Told every refusal (by scope); the bytes held are read from `bytes` (a gauge at scrape time). */
    private readonly watch: { refused(scope: "key" | "total"): void } = { refused() {} },
  ) {}

  /** Bytes held now, every caller together. */
  get bytes(): number {
    return this.held;
  }

  /** A budget for one request of the caller `key`. */
  open(key: string): BodyBudget {
    return new RequestBudget(this, key);
  }

  /** Charges `bytes` to `key` (RequestBudget.take), or throws the 429/503 without charging anything. */
  charge(key: string, bytes: number): void {
    const ofKey = this.byKey.get(key) ?? 0;
    if (ofKey + bytes > this.limits.perKey) {
      this.watch.refused("key");
      throw new ApiError(
        429,
        "rate_limited",
        `too many request bytes in flight for this caller (at most ${this.limits.perKey} at once); retry shortly`,
        { retryAfterSeconds: INFLIGHT_RETRY_AFTER_SECONDS },
        { "retry-after": String(INFLIGHT_RETRY_AFTER_SECONDS) },
      );
    }
    if (this.held + bytes > this.limits.total) {
      this.watch.refused("total");
      throw new ApiError(
        503,
        "unavailable",
        "the server is reading too many request bodies at once; retry shortly",
        undefined,
        { "retry-after": String(INFLIGHT_RETRY_AFTER_SECONDS) },
      );
    }
    this.byKey.set(key, ofKey + bytes);
    this.held += bytes;
  }

  /** Gives back what one request of `key` held (RequestBudget.release). */
  refund(key: string, bytes: number): void {
    const left = (this.byKey.get(key) ?? 0) - bytes;
    if (left > 0) this.byKey.set(key, left);
    else this.byKey.delete(key);
    this.held -= bytes;
  }
}

/**
 * One request's share: an object with methods rather than two closures per request (this is on
 * every ingestion request's path).
 */
class RequestBudget implements BodyBudget {
  private mine = 0;
  private done = false;

  constructor(
    private readonly bound: InflightBytes,
    private readonly key: string,
  ) {}

  take(bytes: number): void {
    if (this.done || bytes <= 0) return;
    this.bound.charge(this.key, bytes);
    this.mine += bytes;
  }

  release(): void {
    if (this.done) return;
    this.done = true;
    if (this.mine > 0) this.bound.refund(this.key, this.mine);
  }
}
