import assert from "node:assert/strict";

// Shared by the battery files: what no response may carry, and limits high enough that the
// battery's thousands of requests test the routes, not the rate limiter.

export const GENEROUS_LIMITS: Record<string, string> = {
  RATE_LIMIT_EVENTS_PER_MINUTE: "1000000",
  RATE_LIMIT_BATCHES_PER_MINUTE: "1000000",
  RATE_LIMIT_METRICS_PER_MINUTE: "1000000",
  RATE_LIMIT_METRIC_BATCHES_PER_MINUTE: "1000000",
  RATE_LIMIT_HEARTBEATS_PER_MINUTE: "1000000",
  RATE_LIMIT_IDENTIFY_PER_MINUTE: "1000000",
  RATE_LIMIT_WEBHOOK_SENDS_PER_MINUTE: "1000000",
  RATE_LIMIT_WRITES_PER_MINUTE: "1000000",
  RATE_LIMIT_SIGNUPS_PER_MINUTE: "1000000",
};

/** Fails when a response text carries a secret, a hash, SQL, a stack trace or connection details. */
export function assertNoLeak(text: string, secrets: string[]): void {
  for (const s of secrets) assert.ok(!text.includes(s), "a secret leaked");
  assert.ok(!/[0-9a-f]{64}/.test(text), `something hash-like leaked: ${text.slice(0, 300)}`);
  assert.ok(!/scrypt\$/.test(text), "a password hash leaked");
  assert.ok(!/\bat .+\.(ts|js):\d+/.test(text), `a stack trace leaked: ${text.slice(0, 300)}`);
  assert.ok(!/\b(SELECT|INSERT|UPDATE|DELETE)\b.+\b(FROM|INTO|SET)\b/.test(text), `SQL leaked: ${text.slice(0, 300)}`);
  assert.ok(!/postgres(ql)?:\/\//.test(text), "a database URL leaked");
  assert.ok(!/\b(pg_|relation "|column "|syntax error at)/.test(text), `a database error leaked: ${text.slice(0, 300)}`);
}
