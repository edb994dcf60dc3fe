// The one decision of the retry schedule, shared by the embedded scheduler and the Temporal
// workflow. Pure: no I/O, no clock, no imports but types (the workflow bundle imports it as is).
import type { AttemptOutcome } from "./targets/target.js";

export type DeliveryStatus = "pending" | "retrying" | "succeeded" | "abandoned";

export interface RetryPolicy {
  /** WEBHOOK_BACKOFF_BASE_MS: the first retry waits about this long. */
  baseMs: number;
  /** Upper bound of the jitter, as a fraction of the delay (0.2: ±20%). */
  jitter?: number;
  /** A receiver's retry_after is honoured up to this (ms). */
  maxRetryAfterMs?: number;
}

export type NextAttempt = { status: "succeeded" } | { status: "abandoned" } | { status: "retrying"; delayMs: number };

/** base × 4^(n-1), n being the retry number (1 for the wait after the first attempt). */
export function backoffMs(retryNumber: number, baseMs: number): number {
  return baseMs * 4 ** Math.max(0, retryNumber - 1);
}

/**
 * What follows an attempt. `attempts` counts the attempts made so far, this one included;
 * `limit` is the most attempts allowed (WEBHOOK_MAX_ATTEMPTS, raised by one by a manual retry).
 * `random` is uniform in [0, 1) (Math.random; deterministic inside a Temporal workflow).
 */
export function nextAttempt(
  outcome: AttemptOutcome,
  attempts: number,
  limit: number,
  policy: RetryPolicy,
  random: number,
): NextAttempt {
  if (outcome.ok) return { status: "succeeded" };
  if (attempts >= limit) return { status: "abandoned" };
  const jitter = policy.jitter ?? 0.2;
  const maxRetryAfter = policy.maxRetryAfterMs ?? 3_600_000;
  if (outcome.retryAfterMs !== undefined && Number.isFinite(outcome.retryAfterMs) && outcome.retryAfterMs >= 0) {
    // The receiver said when: wait that long (never less), plus a little spread.
    const wait = Math.min(outcome.retryAfterMs, maxRetryAfter);
    return { status: "retrying", delayMs: Math.round(wait + wait * jitter * random) };
  }
  const base = backoffMs(attempts, policy.baseMs);
  const factor = 1 - jitter + 2 * jitter * Math.min(Math.max(random, 0), 1);
  return { status: "retrying", delayMs: Math.max(1, Math.round(base * factor)) };
}
