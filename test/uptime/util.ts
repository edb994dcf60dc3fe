import type { IncidentNotice } from "../../src/uptime/incidents.js";
import { uptimeOf, type TestApp } from "../helpers/app.js";

// Helpers of the uptime tests: bounded polling and a recorder of the incident hook's notices.

/** Polls fn until it returns a truthy value; fails after timeoutMs (a bound, not a timing assertion). */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 5000,
  label = "condition",
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Records every incident notice the app's listeners are handed (as the webhooks feature is). */
export function recordNotices(t: TestApp): IncidentNotice[] {
  const seen: IncidentNotice[] = [];
  uptimeOf(t.app).incidentListeners.push(async (_c, n) => {
    seen.push(n);
  });
  return seen;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
