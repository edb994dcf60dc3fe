// The ingestion routes' bodies in flight (docs/security.md "Bodies in flight"): the rate limit is
// taken before the body is read, and the bytes read or inflated at once are bounded per caller
// (429 with Retry-After) and per node (503 with Retry-After), counted as they arrive and released
// when a request is answered or its client goes away. Over a real port, with gzip bodies held open.
import assert from "node:assert/strict";
import http from "node:http";
import { describe, it } from "node:test";
import { gzipSync } from "node:zlib";
import { GENEROUS_LIMITS, metricOf } from "../helpers/app.js";
import { publishableKey } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { waitFor } from "../webhooks/receiver.js";

const MIB = 1024 * 1024;
const PER_KEY = 2 * MIB;
const TOTAL = 3 * MIB;

let pub: string;
const { t, p } = useProject(
  {
    ...GENEROUS_LIMITS,
    MAX_BODY_BYTES: String(MIB),
    INGEST_INFLIGHT_BYTES_PER_KEY: String(PER_KEY),
    INGEST_INFLIGHT_BYTES: String(TOTAL),
    RATE_LIMIT_EVENTS_PER_MINUTE: "3",
  },
  {},
  async () => {
    pub = (await publishableKey(t.rest, p)).secret;
  },
);

/** A batch of 9 events of ~0.9 MB in all (each under the 1 MB event limit). */
const batchJson = (type: string) =>
  JSON.stringify({ events: Array.from({ length: 9 }, () => ({ type, data: { pad: "x".repeat(100_000) } })) });
/** The same gzipped: a few KB. */
const batchOf = (type: string) => gzipSync(batchJson(type));

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/**
 * A request whose body is written now (all of `first`), the rest later with `finish()`: a gzip body
 * without its 8-byte trailer is fully inflated by the server but not finished.
 */
function open(path: string, key: string, first: Buffer) {
  const url = new URL(path, t.url);
  const req = http.request(url, {
    method: "POST",
    agent: false,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-encoding": "gzip" },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on("error", reject);
  });
  req.write(first);
  return { req, answer };
}

/** A gzip batch sent whole except its trailer: held in flight until `finish`. */
function held(type: string, key: string) {
  const gz = batchOf(type);
  const r = open("/v1/events/batch", key, gz.subarray(0, gz.length - 8));
  return { ...r, finish: () => r.req.end(gz.subarray(gz.length - 8)) };
}

async function whole(path: string, key: string, body: Buffer): Promise<Answer> {
  const r = open(path, key, body);
  r.req.end();
  return r.answer;
}

const inflight = async () => (await metricOf(t.app, "vigil_ingest_inflight_bytes").get()).values[0]?.value ?? 0;
const reach = (min: number) => waitFor(async () => (await inflight()) >= min, `${min} bytes in flight`);
const stored = async (type: string) =>
  Number(
    (
      await t.app.deps.db.query("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND type = $2", [
        p.projectId,
        type,
      ])
    ).rows[0].n,
  );

describe("ingestion bodies in flight", () => {
  it("bounds the bytes held per key (429) and per node (503), releases them on answer and on abort", async () => {
    const ONE = 900_000; // what one batch inflates to, about
    const a1 = held("fl.a1", pub);
    const a2 = held("fl.a2", pub);
    await reach(2 * ONE);
    // A third body of the same key would pass its share: refused, and nothing of it stays held.
    const over = await whole("/v1/events/batch", pub, batchOf("fl.a3"));
    assert.equal(over.status, 429);
    assert.equal(over.body.error.code, "rate_limited");
    assert.equal(over.headers["retry-after"], "1");
    assert.ok((await inflight()) <= PER_KEY);
    // Over Connect the same share applies.
    const rpc = await fetch(`${t.url}/vigil.v1.EventService/IngestEventBatch`, {
      method: "POST",
      headers: { authorization: `Bearer ${pub}`, "content-type": "application/json" },
      body: batchJson("fl.a3c"),
    });
    assert.equal(rpc.status, 429);
    assert.equal(((await rpc.json()) as { code: string }).code, "resource_exhausted");
    assert.equal(rpc.headers.get("retry-after"), "1");
    assert.ok((await inflight()) <= PER_KEY);
    // Another key has its own share, until the node's total is reached.
    const b1 = held("fl.b1", p.key);
    await reach(3 * ONE);
    const full = await whole("/v1/events/batch", p.key, batchOf("fl.b2"));
    assert.equal(full.status, 503);
    assert.equal(full.body.error.code, "unavailable");
    assert.equal(full.headers["retry-after"], "1");
    assert.ok((await inflight()) <= TOTAL);
    // A client that goes away gives its bytes back.
    a2.req.destroy();
    await a2.answer.catch(() => undefined);
    await waitFor(async () => (await inflight()) < 2.5 * ONE, "the aborted body released");
    const again = await whole("/v1/events/batch", pub, batchOf("fl.a4"));
    assert.equal(again.status, 202, JSON.stringify(again.body));
    // Under the bound every body is stored; once answered nothing is held.
    a1.finish();
    b1.finish();
    const [ra, rb] = await Promise.all([a1.answer, b1.answer]);
    assert.equal(ra.status, 202, JSON.stringify(ra.body));
    assert.equal(rb.status, 202, JSON.stringify(rb.body));
    assert.equal(ra.body.data.accepted, 9);
    for (const type of ["fl.a1", "fl.b1", "fl.a4"]) assert.equal(await stored(type), 9, type);
    for (const type of ["fl.a2", "fl.a3", "fl.a3c", "fl.b2"]) assert.equal(await stored(type), 0, type);
    await waitFor(async () => (await inflight()) === 0, "nothing in flight");
  });

  it("answers the rate limit before reading the body", async () => {
    let status = 0;
    for (let i = 0; i < 10 && status !== 429; i++)
      status = (await t.rest.post("/v1/events", { type: "fl.limit" }, { key: pub })).status;
    assert.equal(status, 429);
    // A body that never ends: the answer comes from the headers alone.
    const r = open("/v1/events", pub, gzipSync(JSON.stringify({ type: "fl.limit" })).subarray(0, 10));
    const answer = await Promise.race([
      r.answer,
      new Promise<undefined>((resolve) => setTimeout(resolve, 10_000, undefined)),
    ]);
    r.req.destroy();
    assert.ok(answer, "no answer while the body was still open: the limit waited for the body");
    assert.equal(answer.status, 429);
    assert.equal(answer.body.error.code, "rate_limited");
    assert.equal(answer.headers["retry-after"] !== undefined, true);
  });
});
