import { Coalescer } from "../shared/coalesce.js";
import type { Db } from "../storage/db.js";

// API-key lookups batched per event-loop turn (shared/coalesce.ts): concurrent requests share one
// indexed query (`key_hash = ANY($1)`). Every lookup still reads the database after its request
// arrived, so a revoked key fails on the very next request on every node; no cache can serve a
// stale answer. Batches do not wait for each other (each turn's batch is its own query).

export interface KeyRow {
  id: string;
  project_id: string;
  environment: string;
  /** principal.ts `KeyKind`: secret, publishable (vk_pub_...) or ping (vk_ping_...). */
  kind: "secret" | "publishable" | "ping";
  /** The project's allowed origins (read with the key: no second round trip). */
  allowed_origins: string[];
}

export class KeyLookup {
  private readonly batches: Coalescer<string, KeyRow | undefined>;

  constructor(private readonly db: Db) {
    this.batches = new Coalescer({ wait: "turn", concurrency: Infinity, flush: (hashes) => this.flush(hashes) });
  }

  find(hash: string): Promise<KeyRow | undefined> {
    return this.batches.submit(hash);
  }

  private async flush(hashes: string[]): Promise<(KeyRow | undefined)[]> {
    const r = await this.db.query<KeyRow & { key_hash: string }>({
      name: "auth_keys_lookup",
      text: "SELECT k.key_hash, k.id, k.project_id, k.environment, k.kind, p.allowed_origins FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.key_hash = ANY($1::text[]) AND k.revoked_at IS NULL",
      values: [[...new Set(hashes)]],
    });
    const byHash = new Map(r.rows.map((row) => [row.key_hash, row]));
    return hashes.map((h) => byHash.get(h));
  }
}
