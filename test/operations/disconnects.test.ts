// A client that goes away is not a server error: no line at warn level or above, no 5xx in the
// metrics, over REST, Connect and gRPC, whether it leaves while sending its body or while its
// request runs (a real statement waiting on a lock the test holds).
import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { Writable } from "node:stream";
import { after, before, beforeEach, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type HandlerContext } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import pg from "pg";
import pino from "pino";
import { AnalyticsService } from "../../gen/vigil/v1/analytics_pb.js";
import { CheckRequestSchema, HealthService } from "../../gen/vigil/v1/health_pb.js";
import { bind, guardImpl } from "../../src/shared/feature.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { lockRollups } from "../helpers/db.js";
import { project, type ProjectFixture, publishableKey } from "../helpers/fixtures.js";
import { H2_ERROR, frame, FRAME, headersFrame, rawHttp2, rstFrame } from "../helpers/h2frames.js";

const TIME = { start: "2024-05-06T08:00:00Z", end: "2024-05-06T09:00:00Z" };
const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
let t: TestApp;
let p: ProjectFixture;
let admin: pg.Client;

before(async () => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split("\n")) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  t = await startTestApp(
    { ANALYTICS_SLOT_INTERVAL_MS: "0", ANALYTICS_BLOCK_INTERVAL_MS: "0" },
    { log: pino({ level: "debug" }, sink) },
  );
  p = await project(t.rest);
  admin = new pg.Client({ connectionString: t.databaseUrl });
  await admin.connect();
});
after(async () => {
  await admin.end();
  await t.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let from = 0;
/** Lines at warn level or above since the current test began. */
const loud = () =>
  lines
    .slice(from)
    .filter((l) => l.level >= 40)
    .map((l) => ({
      level: l.level,
      msg: l.msg,
      err: (l.err as { message?: string } | undefined)?.message,
      grpcCode: l.grpcCode,
      status: l.status,
      route: l.route,
    }));

/** The series of vigil_http_requests_total whose labels include `label`, as exposed. */
async function series(label: string | RegExp): Promise<string[]> {
  const text = await (await fetch(`${t.metricsUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter(
      (l) =>
        l.startsWith("vigil_http_requests_total") && (typeof label === "string" ? l.includes(label) : label.test(l)),
    );
}
const fivexx = () => series(/status="5\d\d"/);

async function until(what: string, check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const waiting = async () =>
  (
    await admin.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%analytics_rollups%'",
    )
  ).rows[0].n as number;

/** Sends the head and part of a body over a raw socket, then drops the connection. */
async function abortMidBody(head: string, declared: number, partial: string): Promise<void> {
  const s = net.connect(t.port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => s.once("connect", resolve).once("error", reject));
  s.on("error", () => undefined);
  s.write(`${head}Content-Length: ${declared}\r\n\r\n${partial}`);
  await sleep(150);
  s.destroy();
  await sleep(200);
}

/** Starts `call`, waits until its statement waits on the lock, aborts it, then releases the lock. */
async function abortWhileRunning(call: (signal: AbortSignal) => Promise<unknown>): Promise<void> {
  const release = await lockRollups(t.databaseUrl);
  try {
    const ac = new AbortController();
    const done = call(ac.signal).catch(() => "aborted");
    await until("the statement to wait on the lock", async () => (await waiting()) === 1);
    ac.abort();
    assert.equal(await done, "aborted");
    await until("the statement to be cancelled", async () => (await waiting()) === 0);
  } finally {
    await release();
  }
  await sleep(200);
}

describe("client disconnects", () => {
  beforeEach(() => {
    from = lines.length;
  });

  it("a REST client that leaves while sending its body logs nothing at warn or above", async () => {
    await abortMidBody(
      `POST /v1/events HTTP/1.1\r\nHost: vigil\r\nAuthorization: Bearer ${p.key}\r\nContent-Type: application/json\r\n`,
      1000,
      '{"type":"a","data":{"x":"',
    );
    assert.deepEqual(loud(), []);
  });

  it("a Connect client that leaves while sending its body logs nothing at warn or above", async () => {
    await abortMidBody(
      `POST /vigil.v1.EventService/IngestEvent HTTP/1.1\r\nHost: vigil\r\nAuthorization: Bearer ${p.key}\r\nContent-Type: application/json\r\n`,
      1000,
      '{"type":"a","data":{"x":"',
    );
    assert.deepEqual(loud(), []);
  });

  it("an HTTP/2 client that resets its stream mid-body logs nothing at warn or above", async () => {
    for (const [path, type] of [
      ["/v1/events", "application/json"],
      ["/vigil.v1.EventService/IngestEvent", "application/grpc"],
    ]) {
      const session = http2.connect(t.url);
      session.on("error", () => undefined);
      const req = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": type,
        authorization: `Bearer ${p.key}`,
        te: "trailers",
      });
      req.on("error", () => undefined);
      req.write(Buffer.from(type === "application/json" ? '{"type":"a","data":{"x":"' : [0, 0, 0, 1, 0, 10, 1]));
      await sleep(150);
      req.close(http2.constants.NGHTTP2_CANCEL);
      await sleep(200);
      session.destroy();
    }
    assert.deepEqual(loud(), []);
  });

  it("HTTP/2 streams reset while their body is read (a publishable key, REST and Connect) log nothing at warn or above and count as 499, no 5xx", async () => {
    const key = (await publishableKey(t.rest, p)).secret;
    const before5xx = await fivexx();
    // An event refused (no type), so that no stream that escapes its reset stores one (the
    // pipeline's work would outlive this test and wait on the next test's lock).
    const body = Buffer.from(JSON.stringify({ type: "", data: { x: "y".repeat(300) } }));
    const paths = ["/v1/events", "/vigil.v1.EventService/IngestEvent"];

    // 1. Deterministic, over raw frames: the streams' headers, then (once the handlers read the
    // bodies) in ONE write each stream's body bytes followed by its RST_STREAM(CANCEL), so the server
    // meets the reset with body bytes still unread: what a busy server sees under a flood of resets.
    const raw = await rawHttp2(t.port);
    const ids = Array.from({ length: 60 }, (_, i) => 2 * i + 1);
    raw.send(
      ids.map((id, i) =>
        headersFrame(id, {
          ":method": "POST",
          ":scheme": "http",
          ":authority": `127.0.0.1:${t.port}`,
          ":path": paths[i % 2],
          "content-type": "application/json",
          authorization: `Bearer ${key}`,
        }),
      ),
    );
    await sleep(500); // the key checked, each handler waiting for its body
    raw.send(ids.flatMap((id) => [frame(FRAME.DATA, 0, id, body), rstFrame(id, H2_ERROR.CANCEL)]));
    await sleep(300);
    raw.close();

    // 2. The same through Node's own client: many streams with their body sent, all reset at once.
    const session = http2.connect(t.url);
    session.on("error", () => undefined);
    const streams = Array.from({ length: 300 }, (_, i) => {
      const req = session.request({
        ":method": "POST",
        ":path": paths[i % 2],
        "content-type": "application/json",
        authorization: `Bearer ${key}`,
      });
      req.on("error", () => undefined);
      req.on("response", () => undefined);
      req.end(body);
      return req;
    });
    await sleep(30);
    const closed = streams.map((req) => new Promise((resolve) => req.once("close", resolve)));
    for (const req of streams) req.close(http2.constants.NGHTTP2_CANCEL);
    await Promise.all(closed);
    session.destroy();
    await sleep(300);

    assert.equal((await t.rest.get("/health")).status, 200);
    assert.deepEqual(loud(), []);
    assert.deepEqual(await fivexx(), before5xx);
    const reset = await series('status="499"');
    assert.ok(
      reset.some((l) => l.includes('route="/v1/events"')),
      `no 499 counted for the reset REST streams: ${reset}`,
    );
  });

  it("a REST client that leaves while its query runs: the statement is cancelled, nothing logged at warn or above", async () => {
    await abortWhileRunning((signal) =>
      fetch(`${t.url}/v1/projects/${p.projectId}/analytics/count`, {
        method: "POST",
        headers: { authorization: `Bearer ${p.key}`, "content-type": "application/json" },
        body: JSON.stringify({ time: TIME }),
        signal,
      }),
    );
    assert.deepEqual(loud(), []);
  });

  it("Connect and gRPC clients that cancel while their query runs log nothing at warn or above", async () => {
    for (const transport of [
      createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
      createGrpcTransport({ baseUrl: t.url }),
    ]) {
      const client = createClient(AnalyticsService, transport);
      await abortWhileRunning((signal) =>
        client.count({ projectId: p.projectId, time: TIME }, { signal, headers: { authorization: `Bearer ${p.key}` } }),
      );
    }
    assert.deepEqual(loud(), []);
  });

  it("guardImpl: a handler failing after its client left is Canceled, logged at debug; a lost database is unavailable, logged as a warning; anything else internal, logged as an error", async () => {
    const seen: { level: number; msg: string }[] = [];
    const log = pino(
      { level: "debug" },
      new Writable({ write: (c, _e, cb) => (seen.push(JSON.parse(String(c))), cb()) }),
    );
    let failure = new Error("Connection terminated");
    const guarded = guardImpl(bind(HealthService, { check: () => Promise.reject(failure) }), log);
    const left = new AbortController();
    left.abort(new Error("client disconnected"));
    const cancelled = await Promise.resolve(
      guarded.impl.check(create(CheckRequestSchema), { signal: left.signal } as HandlerContext),
    ).catch((e: unknown) => e);
    assert.ok(cancelled instanceof ConnectError && cancelled.code === Code.Canceled, String(cancelled));
    assert.deepEqual(
      seen.map((l) => [l.level, l.msg]),
      [[20, "request cancelled"]],
    );
    const call = () =>
      Promise.resolve(
        guarded.impl.check(create(CheckRequestSchema), { signal: new AbortController().signal } as HandlerContext),
      ).catch((e: unknown) => e);
    const lost = await call();
    assert.ok(lost instanceof ConnectError && lost.code === Code.Unavailable, String(lost));
    failure = Object.assign(new Error("a bug"), { code: "42703" });
    const failed = await call();
    assert.ok(failed instanceof ConnectError && failed.code === Code.Internal, String(failed));
    assert.deepEqual(
      seen.slice(1).map((l) => [l.level, l.msg]),
      [
        [40, "database unreachable"],
        [50, "unhandled error in handler"],
      ],
    );
  });

  it("none of them is counted as a 5xx", async () => {
    assert.deepEqual(await fivexx(), []);
    // The server still answers normally afterwards.
    assert.equal((await t.rest.get("/health")).status, 200);
  });
});
