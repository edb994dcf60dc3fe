import type { Db } from "../storage/db.js";

// API-key lookups batched per event-loop turn: concurrent requests share one indexed query
// (`key_hash = ANY($1)`). Every lookup still reads the database after its request arrived, so a
// revoked key fails on the very next request on every node; no cache can serve a stale answer.

export interface KeyRow {
  id: string;
  project_id: string;
  environment: string;
}

type Waiter = { resolve: (row: KeyRow | undefined) => void; reject: (err: unknown) => void };

export class KeyLookup {
  private pending = new Map<string, Waiter[]>();
  private scheduled = false;

  constructor(private readonly db: Db) {}

  find(hash: string): Promise<KeyRow | undefined> {
    return new Promise((resolve, reject) => {
      const list = this.pending.get(hash);
      if (list) list.push({ resolve, reject });
      else this.pending.set(hash, [{ resolve, reject }]);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    try {
      const r = await this.db.query<KeyRow & { key_hash: string }>({
        name: "auth_keys_lookup",
        text: "SELECT key_hash, id, project_id, environment FROM api_keys WHERE key_hash = ANY($1::text[]) AND revoked_at IS NULL",
        values: [[...batch.keys()]],
      });
      const byHash = new Map(r.rows.map((row) => [row.key_hash, row]));
      for (const [hash, waiters] of batch) {
        const row = byHash.get(hash);
        for (const w of waiters) w.resolve(row);
      }
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
    }
  }
}
