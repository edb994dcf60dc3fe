// `Content-Encoding: gzip` request bodies on the ingestion routes (events, events/batch, metrics,
// metrics/batch, heartbeats), over a real port: decompressed as a stream under MAX_BODY_BYTES, a
// real bomb refused with 413 quickly, corrupt gzip a 400, other encodings and other routes 415.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { readGzipBody, type AnyRequest } from "../../src/transcoding/body.js";
import { errorBody, publishableKey } from "../helpers/fixtures.js";
import type { Res } from "../helpers/rest.js";
import { useProject } from "../helpers/use.js";

const MAX = 10 * 1024 * 1024; // the default MAX_BODY_BYTES
let pub: string;

const { t, p } = useProject({}, {}, async () => {
  pub = (await publishableKey(t.rest, p)).secret;
});

function send(
  path: string,
  body: Buffer,
  opts: { key?: string; encoding?: string; headers?: Record<string, string>; verb?: string } = {},
): Promise<Res> {
  return t.rest.req(opts.verb ?? "POST", path, {
    raw: body,
    contentType: "application/json",
    key: opts.key === undefined ? p.key : opts.key || undefined,
    headers: { "content-encoding": opts.encoding ?? "gzip", ...opts.headers },
  });
}

const gz = (v: unknown) => gzipSync(Buffer.from(typeof v === "string" ? v : JSON.stringify(v)));

let big: Buffer | undefined;
const bigBomb = () => (big ??= gzipSync(Buffer.alloc(256 * 1024 * 1024)));

async function countOf(type: string): Promise<number> {
  const r = await t.rest.get(`/v1/projects/self/events?type=${type}`, { key: p.key });
  return r.body.data.length;
}

describe("gzip request bodies on the ingestion routes", () => {
  it("are decompressed on events, events/batch, metrics, metrics/batch and heartbeats", async () => {
    const one = await send("/v1/events", gz({ type: "gz.one", data: { n: 1 } }));
    assert.equal(one.status, 202, one.text);
    const batch = await send("/v1/events/batch", gz({ events: [{ type: "gz.batch" }, { type: "gz.batch" }] }));
    assert.equal(batch.status, 202, batch.text);
    assert.equal(batch.body.data.accepted, 2);
    const metric = await send("/v1/projects/self/metrics", gz({ type: "increment", name: "gz.m", value: 2 }));
    assert.equal(metric.status, 201, metric.text);
    const metrics = await send(
      "/v1/projects/self/metrics/batch",
      gz({ metrics: [{ type: "increment", name: "gz.m", value: 3 }] }),
    );
    assert.ok(metrics.status === 201 || metrics.status === 202, metrics.text);
    const hb = await send("/v1/projects/self/heartbeats/gz-cron", gz({ expectedIntervalMs: 60_000 }));
    assert.ok(hb.status === 200 || hb.status === 202, hb.text);
    assert.equal(hb.body.data.monitor.expectedIntervalMs, 60_000);
    // x-gzip and any case; identity and no header are plain bodies.
    assert.equal((await send("/v1/events", gz({ type: "gz.one" }), { encoding: "X-GZIP" })).status, 202);
    assert.equal((await send("/v1/events", gz({ type: "gz.one" }), { encoding: " Gzip " })).status, 202);
    const plain = Buffer.from(JSON.stringify({ type: "gz.one" }));
    assert.equal((await send("/v1/events", plain, { encoding: "identity" })).status, 202);
    assert.equal(await countOf("gz.one"), 4);
    assert.equal(await countOf("gz.batch"), 2);
    const cur = await t.rest.post("/v1/projects/self/metrics/current", { name: "gz.m" }, { key: p.key });
    assert.equal(cur.status, 200, cur.text);
    assert.match(cur.text, /5/);
  });

  it("bounds the DECOMPRESSED size: exactly MAX_BODY_BYTES passes, one byte more is 413", async () => {
    const head = JSON.stringify({ type: "gz.edge" });
    const exact = gz(head + " ".repeat(MAX - head.length));
    assert.ok(exact.length < 100_000);
    const ok = await send("/v1/events", exact);
    assert.equal(ok.status, 202, ok.text);
    const over = await send("/v1/events", gz(head + " ".repeat(MAX - head.length + 1)));
    assert.equal(over.status, 413, over.text);
    assert.equal(errorBody(over).code, "payload_too_large");
    assert.match(errorBody(over).message, /decompressed/);
  });

  it("refuses a real bomb (20 MB of zeros, ~20 KB gzipped) with 413, quickly, over each route", async () => {
    const bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024));
    assert.ok(bomb.length < 64 * 1024, `bomb is ${bomb.length} bytes`);
    // 256 MB of zeros (~250 KB gzipped).
    const big = bigBomb();
    for (const path of [
      "/v1/events",
      "/v1/events/batch",
      "/v1/projects/self/metrics",
      "/v1/projects/self/heartbeats/x",
    ]) {
      for (const body of [bomb, big]) {
        const started = Date.now();
        const r = await send(path, body);
        const ms = Date.now() - started;
        assert.equal(r.status, 413, `${path}: ${r.text}`);
        assert.equal(errorBody(r).code, "payload_too_large");
        assert.ok(ms < 3000, `${path}: ${ms} ms`);
      }
    }
    // The service is fine afterwards.
    assert.equal((await send("/v1/events", gz({ type: "gz.after" }))).status, 202);
  });

  it("a bomb from a browser gets a 413 it can read (CORS), and no key means no inflating at all", async () => {
    const bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024));
    const r = await send("/v1/events", bomb, { key: pub, headers: { origin: "https://app.example.com" } });
    assert.equal(r.status, 413, r.text);
    assert.equal(r.headers.get("access-control-allow-origin"), "https://app.example.com");
    const anon = await send("/v1/events", bomb, { key: "" });
    assert.equal(anon.status, 401, anon.text);
  });

  it("answers corrupt, truncated or mislabelled gzip with 400 invalid_body", async () => {
    const good = gz({ type: "gz.bad" });
    const corrupt = Buffer.from(good);
    corrupt[good.length - 6] ^= 0xff; // the CRC32 trailer
    const header = Buffer.from(good);
    header[3] = 0xff; // reserved flag bits
    for (const body of [
      corrupt,
      header,
      good.subarray(0, good.length - 4), // truncated
      Buffer.from(JSON.stringify({ type: "gz.bad" })), // plain JSON labelled gzip
      Buffer.from([0x1f, 0x8b, 0x08, 0x00]),
      Buffer.from("\u0000\u0000\u0000"),
    ]) {
      const r = await send("/v1/events", body);
      assert.equal(r.status, 400, r.text);
      assert.equal(errorBody(r).code, "invalid_body");
      assert.match(errorBody(r).message, /gzip/);
    }
    assert.equal(await countOf("gz.bad"), 0);
    // Valid gzip of invalid JSON is the usual 400.
    const notJson = await send("/v1/events", gz("{nope"));
    assert.equal(notJson.status, 400, notJson.text);
    assert.equal(errorBody(notJson).code, "invalid_json");
  });

  it("refuses other encodings (415) and gzip on every other route (415)", async () => {
    for (const encoding of ["br", "deflate", "compress", "gzip, gzip", "gzip, br", "zstd", "*"]) {
      const r = await send("/v1/events", gz({ type: "gz.enc" }), { encoding });
      assert.equal(r.status, 415, `${encoding}: ${r.text}`);
      assert.equal(errorBody(r).code, "unsupported_media_type");
    }
    for (const [verb, path, body] of [
      ["POST", "/v1/projects/self/events/query", {}],
      ["POST", "/v1/projects/self/metrics/query", { name: "gz.m" }],
      ["PATCH", `/v1/projects/${p.projectId}`, { name: "zipped" }],
    ] as const) {
      const r = await send(path, gz(body), { verb, key: path.includes("self") ? p.key : "", headers: {} });
      const withCookie =
        r.status === 401
          ? await t.rest.req(verb, path, {
              raw: gz(body),
              contentType: "application/json",
              cookie: p.owner.cookie,
              headers: { "content-encoding": "gzip" },
            })
          : r;
      assert.equal(withCookie.status, 415, `${verb} ${path}: ${withCookie.text}`);
      assert.match(errorBody(withCookie).message, /ingestion routes only/);
    }
    assert.equal(await countOf("gz.enc"), 0);
  });

  it("stops reading and inflating at the cap: most of a bomb is never even read", async () => {
    const compressed = bigBomb();
    const CHUNK = 4096;
    let pulled = 0;
    const req = new Readable({
      read() {
        if (pulled >= compressed.length) this.push(null);
        else {
          this.push(compressed.subarray(pulled, pulled + CHUNK));
          pulled += CHUNK;
        }
      },
    });
    Object.assign(req, { headers: {}, resume: () => req }); // no drain after the refusal: count what was read
    // The cap (1 MiB) is above the compressed size (~250 KB): only the inflated bytes can stop it early.
    await assert.rejects(readGzipBody(req as unknown as AnyRequest, 1024 * 1024), (e: any) => e.status === 413);
    assert.ok(pulled < compressed.length / 2, `read ${pulled} of ${compressed.length} compressed bytes`);
    // Without a cap in the way, the same reader inflates everything (the count above is meaningful).
    pulled = 0;
    const small = gzipSync(Buffer.alloc(200_000));
    const whole = new Readable({
      read() {
        if (pulled >= small.length) this.push(null);
        else {
          this.push(small.subarray(pulled, pulled + CHUNK));
          pulled += CHUNK;
        }
      },
    });
    Object.assign(whole, { headers: {} });
    assert.equal((await readGzipBody(whole as unknown as AnyRequest, 1024 * 1024)).length, 200_000);
  });
});
