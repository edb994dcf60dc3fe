import type { Queryable } from "../storage/db.js";

// A webhook's `maxPerSecond` (decisions.md: deliveries beyond it wait; none is dropped), in both
// runners. Sends are counted per webhook over one-second windows aligned to the epoch (as the
// request limits of shared/ratelimit.ts are), in PostgreSQL (webhook_send_windows, migration 9015):
// one statement takes what a claim wants and answers what it may send, so every node's scheduler
// and every Temporal worker draw from the same count, exactly. The sends a window refused are not
// attempts: they are made due again at the next window (the embedded scheduler) or the activity
// waits for it (a Temporal retry). PostgreSQL rather than Redis: the claim that needs the answer is
// a PostgreSQL statement already, and a count lost to a Redis outage would break the promise.

/**
 * Nothing is granted in a second's last 100 ms: a send counted in a second starts early enough to
 * reach its receiver within that second (on a network path shorter than this), so the receiver too
 * counts at most maxPerSecond in each of its seconds.
 */
const GRANT_GUARD_MS = 100;

/** A claim's want: `n` sends of a webhook limited to `max` per second. */
export interface RateWant {
  webhookId: string;
  n: number;
  max: number;
}

/** The epoch second holding `now`, and when the next one begins. */
export function rateWindow(now: Date): { second: number; nextAt: Date } {
  const second = Math.floor(now.getTime() / 1000);
  return { second, nextAt: new Date((second + 1) * 1000) };
}

/**
 * Takes up to each want's `n` sends from its webhook's count in the second holding `now`; answers
 * how many each may send now (webhook id → granted). A node whose clock is behind counts in the
 * newest window seen (never opens an older one).
 */
export async function takeSends(q: Queryable, wants: RateWant[], now: Date): Promise<Map<string, number>> {
  if (wants.length === 0) return new Map();
  const { second, nextAt } = rateWindow(now);
  if (nextAt.getTime() - now.getTime() <= GRANT_GUARD_MS) return new Map(wants.map((w) => [w.webhookId, 0]));
  const ids = wants.map((w) => w.webhookId);
  await q.query(
    `INSERT INTO webhook_send_windows (webhook_id, second, sent, granted) SELECT id, 0, 0, 0 FROM unnest($1::text[]) AS u(id)
     ON CONFLICT (webhook_id) DO NOTHING`,
    [ids],
  );
  // The row's lock orders concurrent takers; in SET, r.* is the row before this update.
  const r = await q.query<{ webhook_id: string; granted: number }>(
    `UPDATE webhook_send_windows r SET
       sent = CASE WHEN r.second >= $4 THEN greatest(r.sent, least(r.sent + u.n, u.max)) ELSE least(u.n, u.max) END,
       granted = CASE WHEN r.second >= $4 THEN greatest(0, least(r.sent + u.n, u.max) - r.sent) ELSE least(u.n, u.max) END,
       second = greatest(r.second, $4)
     FROM unnest($1::text[], $2::int[], $3::int[]) AS u(id, n, max)
     WHERE r.webhook_id = u.id
     RETURNING r.webhook_id, r.granted`,
    [ids, wants.map((w) => w.n), wants.map((w) => w.max), second],
  );
  return new Map(r.rows.map((x) => [x.webhook_id, x.granted]));
}
