import type { IncidentNotice } from "../../src/shared/hooks.js";
import type { TestApp } from "../helpers/app.js";

// Helpers of the uptime tests: bounded polling and a recorder of the incident hook's notices.

/** Polls fn until it returns a truthy value; fails after timeoutMs (a bound, not a timing assertion). */
export async function waitFor<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 5000, label = "condition"): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Records every incident notice the app's hooks are asked to deliver (as the webhooks feature would). */
export function recordNotices(t: TestApp): IncidentNotice[] {
  const seen: IncidentNotice[] = [];
  t.app.deps.hooks.incident.push(async (_c, n) => {
    seen.push(n);
  });
  return seen;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
