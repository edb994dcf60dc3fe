// HTTP/2 sessions are bounded (docs/security.md "Connections"): the server advertises in SETTINGS,
// and enforces, how many streams one session may have open at once and how large one request's
// header list may be. Streams beyond the bound, and header lists over it, are refused (RST_STREAM)
// instead of growing the session's memory; the session keeps serving the streams within it.
import assert from "node:assert/strict";
import http2 from "node:http2";
import { after, before, describe, it } from "node:test";
import { GENEROUS_LIMITS, startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { FRAME, H2_ERROR, headersFrame, rawHttp2 } from "../helpers/h2frames.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A header list over the bound: the stream is reset, REFUSED_STREAM or ENHANCE_YOUR_CALM (by where nghttp2 sees it). */
const REFUSED = new RegExp(
  `^reset (${http2.constants.NGHTTP2_REFUSED_STREAM}|${http2.constants.NGHTTP2_ENHANCE_YOUR_CALM})$`,
);

async function remoteSettings(url: string): Promise<http2.Settings> {
  const session = http2.connect(url);
  session.on("error", () => undefined);
  try {
    return await new Promise<http2.Settings>((resolve) => session.once("remoteSettings", resolve));
  } finally {
    session.destroy();
  }
}

/** A GET on `session` with an extra header of `size` bytes: its status, or the stream's error code. */
function getWithHeader(session: http2.ClientHttp2Session, size: number): Promise<string> {
  return new Promise((resolve) => {
    const req = session.request({ ":path": "/health", "x-padding": "a".repeat(size) });
    req.on("response", (h) => resolve(String(h[":status"])));
    req.on("error", () => resolve(`reset ${req.rstCode}`));
    req.on("close", () => resolve(`reset ${req.rstCode}`));
    req.resume();
    req.end();
  });
}

/**
 * Opens `count` streams at once on a raw session that ignores the advertised bound (POSTs whose
 * bodies never come, so every one stays open), and asserts that the server took no more than
 * `limit` of them: each one beyond is reset, or left out by the GOAWAY with which Node ends a
 * session that breaks the bound it acknowledged (its last stream id is the last one taken; the
 * streams within the bound close with the session).
 */
async function assertStreamsBounded(t: TestApp, key: string, count: number, limit: number): Promise<void> {
  const raw = await rawHttp2(t.port);
  try {
    const ids = Array.from({ length: count }, (_, i) => 2 * i + 1);
    raw.send(
      ids.map((id) =>
        headersFrame(id, {
          ":method": "POST",
          ":scheme": "http",
          ":authority": `127.0.0.1:${t.port}`,
          ":path": "/v1/events",
          "content-type": "application/json",
          authorization: `Bearer ${key}`,
        }),
      ),
    );
    const beyond = ids.slice(limit);
    const refused = (id: number) => {
      const goaway = raw.received.find((f) => f.type === FRAME.GOAWAY);
      const lastTaken = goaway ? goaway.payload.readUInt32BE(0) & 0x7fffffff : Infinity;
      return id > lastTaken || raw.received.some((f) => f.type === FRAME.RST_STREAM && f.stream === id);
    };
    const deadline = Date.now() + 10_000;
    while (!beyond.every(refused) && Date.now() < deadline) await sleep(20);
    assert.deepEqual(
      beyond.filter((id) => !refused(id)),
      [],
      `streams beyond the first ${limit} were taken`,
    );
    const beyondSet = new Set(beyond);
    const answered = raw.received.filter((f) => f.type === FRAME.HEADERS && beyondSet.has(f.stream));
    assert.deepEqual(answered, [], "a stream beyond the bound was answered");
    for (const f of raw.received.filter((x) => x.type === FRAME.RST_STREAM && beyondSet.has(x.stream))) {
      const code = f.payload.readUInt32BE(0);
      assert.ok(code === H2_ERROR.REFUSED_STREAM || code === H2_ERROR.PROTOCOL_ERROR, `reset with ${code}`);
    }
  } finally {
    raw.close();
  }
}

/**
 * A client keeping to the bound (Node's, once it knows the server's SETTINGS: it holds the streams
 * beyond the bound until others end) sending `count` requests at once on one session.
 */
async function manyOnOneSession(url: string, count: number): Promise<string[]> {
  const session = http2.connect(url);
  session.on("error", () => undefined);
  await new Promise((resolve) => session.once("remoteSettings", resolve));
  try {
    return await Promise.all(Array.from({ length: count }, () => getWithHeader(session, 10)));
  } finally {
    session.destroy();
  }
}

describe("HTTP/2 SETTINGS, defaults", () => {
  let t: TestApp;
  let p: ProjectFixture;
  before(async () => {
    t = await startTestApp(GENEROUS_LIMITS);
    p = await project(t.rest);
  });
  after(() => t?.close());

  it("advertises at most 100 concurrent streams and a 64 KiB header list (not Node's unbounded defaults)", async () => {
    const s = await remoteSettings(t.url);
    assert.equal(s.maxConcurrentStreams, 100);
    assert.equal(s.maxHeaderListSize, 65_536);
  });

  it("takes no more than 100 streams at once on one session; a client keeping to the bound is served in full", async () => {
    await assertStreamsBounded(t, p.key, 250, 100);
    const answers = await manyOnOneSession(t.url, 250);
    assert.deepEqual(new Set(answers), new Set(["200"]));
  });

  it("refuses a header list over 64 KiB (REFUSED_STREAM) and keeps serving the session", async () => {
    const session = http2.connect(t.url);
    session.on("error", () => undefined);
    try {
      assert.equal(await getWithHeader(session, 60_000), "200");
      assert.match(await getWithHeader(session, 70_000), REFUSED);
      assert.equal(await getWithHeader(session, 100), "200");
    } finally {
      session.destroy();
    }
  });
});

describe("HTTP/2 SETTINGS, configured", () => {
  let t: TestApp;
  let p: ProjectFixture;
  before(async () => {
    t = await startTestApp({
      ...GENEROUS_LIMITS,
      HTTP2_MAX_CONCURRENT_STREAMS: "5",
      HTTP2_MAX_HEADER_LIST_BYTES: "4096",
    });
    p = await project(t.rest);
  });
  after(() => t?.close());

  it("advertises and enforces HTTP2_MAX_CONCURRENT_STREAMS and HTTP2_MAX_HEADER_LIST_BYTES", async () => {
    const s = await remoteSettings(t.url);
    assert.equal(s.maxConcurrentStreams, 5);
    assert.equal(s.maxHeaderListSize, 4096);
    await assertStreamsBounded(t, p.key, 12, 5);
    assert.deepEqual(new Set(await manyOnOneSession(t.url, 20)), new Set(["200"]));
    const session = http2.connect(t.url);
    session.on("error", () => undefined);
    try {
      assert.equal(await getWithHeader(session, 3000), "200");
      assert.match(await getWithHeader(session, 5000), REFUSED);
      assert.equal(await getWithHeader(session, 100), "200");
    } finally {
      session.destroy();
    }
  });
});
