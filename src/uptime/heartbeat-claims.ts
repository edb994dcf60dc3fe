import type { PoolClient } from "pg";
import { claimKey, rowKey, storedClaims, type ClaimRow } from "../events/claims.js";
import type { HeartbeatClaim } from "./heartbeat-sql.js";

// Heartbeats' client ids (decisions.md "Idempotent ingestion"; the claims are events/claims.ts,
// kind `heartbeat`): which heartbeats of a group repeat an id, and the claims the two write paths
// of heartbeats.ts insert right after their monitors' locks.

/** What of a heartbeat request (heartbeats.ts) its client id needs. */
interface WithClientId {
  projectId: string;
  clientId?: string;
}

/**
 * A heartbeat's claim key. Heartbeats are sent with secret or ping keys or sessions only (a
 * publishable key is refused at the gate): their claims are in the `secret` namespace (heartbeat-sql.ts's insert
 * leaves `key_kind` to that default). A ping key shares it: it may send any heartbeat of its project
 * anyway, and reads nothing but the monitor its heartbeat answers with.
 */
export const heartbeatKey = (projectId: string, clientId: string): string =>
  claimKey(projectId, "heartbeat", "secret", clientId);

/** A heartbeat found to repeat a client id once its claim was tried (answered by write()). */
export const REPEAT = Symbol("repeat");

/** The client ids (claim keys) that occur more than once in the batch, or undefined when none does. */
export function repeatedIds(batch: { req: WithClientId }[]): Set<string> | undefined {
  let seen: Set<string> | undefined;
  let twice: Set<string> | undefined;
  for (const b of batch) {
    if (b.req.clientId === undefined) continue;
    const k = heartbeatKey(b.req.projectId, b.req.clientId);
    if ((seen ??= new Set()).has(k)) (twice ??= new Set()).add(k);
    else seen.add(k);
  }
  return twice;
}

/** The fast path's claims in the one order every writer inserts them (events/claims.ts). */
export function sortedHeartbeatClaims(claims: HeartbeatClaim[]): HeartbeatClaim[] {
  return claims
    .map((x) => ({ x, k: heartbeatKey(x.projectId, x.clientId) }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map((e) => e.x);
}

/**
 * The heartbeats that repeat a client id: a later one of the same id in `reqs`, or one whose id is
 * stored already (a plain read). `claims`: the ids still to claim, each once.
 */
export async function knownRepeats(
  c: PoolClient,
  reqs: WithClientId[],
): Promise<{ repeats: Set<number>; claims: ClaimRow[] }> {
  const repeats = new Set<number>();
  const first = new Map<string, number>();
  const claims: ClaimRow[] = [];
  reqs.forEach((r, i) => {
    if (r.clientId === undefined) return;
    const k = heartbeatKey(r.projectId, r.clientId);
    if (first.has(k)) repeats.add(i);
    else {
      first.set(k, i);
      claims.push({
        projectId: r.projectId,
        kind: "heartbeat",
        keyKind: "secret",
        clientId: r.clientId,
        recordId: null,
      });
    }
  });
  if (claims.length === 0) return { repeats, claims };
  const stored = await storedClaims(c, claims);
  for (const k of stored) repeats.add(first.get(k)!);
  return { repeats, claims: claims.filter((x) => !stored.has(rowKey(x))) };
}
