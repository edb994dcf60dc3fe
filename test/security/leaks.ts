import assert from "node:assert/strict";

// Shared by the battery files: what no response may carry.

/** Fails when a response text carries a secret, a hash, SQL, a stack trace or connection details. */
export function assertNoLeak(text: string, secrets: string[]): void {
  for (const s of secrets) assert.ok(!text.includes(s), "a secret leaked");
  assert.ok(!/[0-9a-f]{64}/.test(text), `something hash-like leaked: ${text.slice(0, 300)}`);
  assert.ok(!/scrypt\$/.test(text), "a password hash leaked");
  assert.ok(!/\bat .+\.(ts|js):\d+/.test(text), `a stack trace leaked: ${text.slice(0, 300)}`);
  assert.ok(!/\b(SELECT|INSERT|UPDATE|DELETE)\b.+\b(FROM|INTO|SET)\b/.test(text), `SQL leaked: ${text.slice(0, 300)}`);
  assert.ok(!/postgres(ql)?:\/\//.test(text), "a database URL leaked");
  assert.ok(
    !/\b(pg_|relation "|column "|syntax error at)/.test(text),
    `a database error leaked: ${text.slice(0, 300)}`,
  );
}
