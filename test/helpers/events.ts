import assert from "node:assert/strict";
import type { RestClient } from "./rest.js";

/** Ingests `events` through `POST /v1/events/batch`, 1000 at a time, asserting every one accepted. */
export async function ingest(rest: RestClient, key: string, events: unknown[]): Promise<void> {
  for (let i = 0; i < events.length; i += 1000) {
    const r = await rest.post("/v1/events/batch", { events: events.slice(i, i + 1000) }, { key });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.rejected, 0, r.text);
  }
}

/**
 * Every event of `GET /v1/projects/self/events?limit=<limit><query>`, following nextCursor page by
 * page; checks each page's status and that hasMore and nextCursor agree.
 */
export async function pageAllEvents(rest: RestClient, key: string, query: string, limit: number): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 5000; i++) {
    const r: any = await rest.get(
      `/v1/projects/self/events?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { key },
    );
    assert.equal(r.status, 200, r.text);
    out.push(...r.body.data);
    assert.equal(r.body.pagination.hasMore, r.body.pagination.nextCursor !== null);
    if (!r.body.pagination.hasMore) return out;
    cursor = r.body.pagination.nextCursor;
  }
  throw new Error("pagination did not end");
}
