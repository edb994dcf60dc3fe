import assert from "node:assert/strict";
import type { RestClient } from "./rest.js";

/**
 * Every event of `GET /v1/projects/self/events?limit=<limit><query>`, following nextCursor page by
 * page; checks each page's status and that hasMore and nextCursor agree.
 */
export async function pageAllEvents(rest: RestClient, key: string, query: string, limit: number): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 5000; i++) {
    const r: any = await rest.get(`/v1/projects/self/events?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
    assert.equal(r.status, 200, r.text);
    out.push(...r.body.data);
    assert.equal(r.body.pagination.hasMore, r.body.pagination.nextCursor !== null);
    if (!r.body.pagination.hasMore) return out;
    cursor = r.body.pagination.nextCursor;
  }
  throw new Error("pagination did not end");
}
