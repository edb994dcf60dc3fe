// Slow clients are dropped (docs/security.md): real raw sockets and HTTP/2 sessions against a real
// Vigil with short timeouts, while ordinary REST, Connect and gRPC requests keep being answered.
import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { describe, it } from "node:test";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { HealthService } from "../../gen/vigil/v1/health_pb.js";
import { startTestApp } from "../helpers/app.js";
import { useProject } from "../helpers/use.js";

const SNIFF = 600;
const HEADERS = 600;
const REQUEST = 2500;
const KEEPALIVE = 600; // Node closes an idle keep-alive socket 1 s after the advertised timeout
const H2_IDLE = 800;
const SLACK = 1500; // timers fire on a check interval, and the machine is shared

const { t, p } = useProject({
  HTTP_SNIFF_TIMEOUT_MS: String(SNIFF),
  HTTP_HEADERS_TIMEOUT_MS: String(HEADERS),
  HTTP_REQUEST_TIMEOUT_MS: String(REQUEST),
  HTTP_KEEPALIVE_TIMEOUT_MS: String(KEEPALIVE),
  HTTP2_IDLE_TIMEOUT_MS: String(H2_IDLE),
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Raw {
  socket: net.Socket;
  received(): string;
  /** Resolves with the ms from connect to close. */
  closed: Promise<number>;
}

async function raw(port = t.port): Promise<Raw> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const started = Date.now();
  let data = "";
  socket.on("data", (d) => (data += d.toString("latin1")));
  socket.on("error", () => undefined);
  const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - started)));
  return { socket, received: () => data, closed };
}

/** Writes `text` one byte every `everyMs` until the socket closes. */
function trickle(socket: net.Socket, text: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return clearInterval(timer);
    socket.write(text[i++]);
  }, everyMs);
  socket.once("close", () => clearInterval(timer));
}

async function closedWithin<T>(what: string, closed: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still open after ${ms} ms`)), ms)),
  );
  try {
    return await Promise.race([closed, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ordinary traffic over every protocol; each must succeed. */
async function ordinaryRequests(): Promise<void> {
  const health = await t.rest.get("/health");
  assert.equal(health.status, 200);
  const ev = await t.rest.post("/v1/events", { type: "ordinary" }, { key: p.key });
  assert.equal(ev.status, 202);
  const grpc = createClient(HealthService, createGrpcTransport({ baseUrl: t.url }));
  assert.equal((await grpc.check({})).status, "ok");
  const events = createClient(EventService, createGrpcTransport({ baseUrl: t.url }));
  await events.ingestEvent({ type: "ordinary-grpc" }, { headers: { authorization: `Bearer ${p.key}` } });
  const connect = createClient(HealthService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }));
  assert.equal((await connect.check({})).status, "ok");
}

const h1Head = (path: string, extra = "") =>
  `POST ${path} HTTP/1.1\r\nHost: vigil\r\nAuthorization: Bearer ${p.key}\r\nContent-Type: application/json\r\n${extra}`;

describe("slow clients are dropped", () => {
  it("a connection that sends nothing is closed by the sniff timeout", async () => {
    const c = await raw();
    const ms = await closedWithin("idle connection", c.closed, SNIFF + SLACK);
    assert.ok(ms >= SNIFF - 50, `closed after ${ms} ms, before the sniff timeout`);
    assert.equal(c.received(), "");
  });

  it("one byte that could start the HTTP/2 preface is closed by the sniff timeout", async () => {
    const c = await raw();
    c.socket.write("P");
    await closedWithin("one byte 'P'", c.closed, SNIFF + SLACK);
  });

  it("one byte of an HTTP/1.1 request is answered 408 by the header timeout", async () => {
    const c = await raw();
    c.socket.write("G");
    const ms = await closedWithin("one byte 'G'", c.closed, HEADERS + SLACK);
    assert.ok(ms >= HEADERS - 50, `closed after ${ms} ms`);
    assert.match(c.received(), /^HTTP\/1\.1 408 /);
  });

  it("headers trickling one byte at a time are cut by the header timeout", async () => {
    const c = await raw();
    c.socket.write("GET /health HTTP/1.1\r\nHost: vigil\r\n");
    trickle(c.socket, "X-Slow: " + "a".repeat(1000) + "\r\n\r\n", 50);
    const ms = await closedWithin("trickling headers", c.closed, HEADERS + SLACK);
    assert.ok(ms >= HEADERS - 50, `closed after ${ms} ms`);
    assert.match(c.received(), /^HTTP\/1\.1 408 /);
  });

  it("a body trickling one byte at a time is cut by the request timeout", async () => {
    const body = JSON.stringify({ type: "slow", data: { pad: "x".repeat(200) } });
    const c = await raw();
    c.socket.write(h1Head("/v1/events", `Content-Length: ${body.length}\r\n\r\n`));
    trickle(c.socket, body, 100);
    const ms = await closedWithin("trickling body", c.closed, REQUEST + SLACK);
    assert.ok(ms >= REQUEST - 50, `closed after ${ms} ms`);
    assert.match(c.received(), /^HTTP\/1\.1 408 /);
  });

  it("an idle keep-alive connection is closed by the keep-alive timeout", async () => {
    const c = await raw();
    c.socket.write("GET /health HTTP/1.1\r\nHost: vigil\r\n\r\n");
    while (!c.received().includes("\r\n\r\n")) await sleep(10);
    assert.match(c.received(), /^HTTP\/1\.1 200 /);
    await closedWithin("idle keep-alive", c.closed, KEEPALIVE + 1000 + SLACK);
  });

  it("only the HTTP/2 preface is closed by the HTTP/2 idle timeout", async () => {
    const c = await raw();
    c.socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    await closedWithin("HTTP/2 preface only", c.closed, H2_IDLE + SLACK);
  });

  it("an idle HTTP/2 session is closed (GOAWAY) by the HTTP/2 idle timeout", async () => {
    const session = http2.connect(t.url);
    session.on("error", () => undefined);
    const closed = new Promise<void>((resolve) => session.once("close", () => resolve()));
    const req = session.request({ ":method": "GET", ":path": "/health" });
    req.resume();
    const status = await new Promise<number>((resolve) => req.once("response", (h) => resolve(Number(h[":status"]))));
    assert.equal(status, 200);
    await new Promise((r) => req.once("close", r));
    await closedWithin("idle HTTP/2 session", closed, H2_IDLE + SLACK);
  });

  it("an HTTP/2 stream whose body trickles is cancelled by the request timeout", async () => {
    const session = http2.connect(t.url);
    session.on("error", () => undefined);
    try {
      const body = JSON.stringify({ type: "slow", data: { pad: "x".repeat(200) } });
      const req = session.request({
        ":method": "POST",
        ":path": "/v1/events",
        "content-type": "application/json",
        authorization: `Bearer ${p.key}`,
        "content-length": String(body.length),
      });
      req.on("error", () => undefined);
      req.resume();
      let i = 0;
      const timer = setInterval(() => i < body.length && !req.destroyed && req.write(body[i++]), 100);
      const started = Date.now();
      await closedWithin("trickling HTTP/2 body", new Promise((r) => req.once("close", r)), REQUEST + SLACK);
      clearInterval(timer);
      assert.ok(Date.now() - started >= REQUEST - 100, `closed after ${Date.now() - started} ms`);
      assert.equal(req.rstCode, http2.constants.NGHTTP2_CANCEL);
    } finally {
      session.destroy();
    }
  });

  it("an HTTP/2 session with an open stream is not idle, however quiet the stream", async () => {
    const session = http2.connect(t.url);
    session.on("error", () => undefined);
    try {
      const body = JSON.stringify({ type: "quiet-stream" });
      const req = session.request({
        ":method": "POST",
        ":path": "/v1/events",
        "content-type": "application/json",
        authorization: `Bearer ${p.key}`,
      });
      const chunks: Buffer[] = [];
      req.on("data", (d) => chunks.push(d));
      const status = new Promise<number>((resolve, reject) => {
        req.once("response", (h) => resolve(Number(h[":status"])));
        req.once("error", reject);
        req.once("close", () => reject(new Error(`stream closed without an answer (rstCode ${req.rstCode})`)));
      });
      const ended = new Promise((r) => req.once("end", r));
      req.write(body.slice(0, 5));
      await sleep(H2_IDLE + 700); // longer than the idle timeout, shorter than the request timeout
      if (!req.closed) req.end(body.slice(5));
      assert.equal(await status, 202);
      await ended;
      assert.match(Buffer.concat(chunks).toString(), /"data"/);
    } finally {
      session.destroy();
    }
  });

  it("many slow clients at once are all dropped while ordinary requests are answered", async () => {
    const slow: Promise<number>[] = [];
    for (let i = 0; i < 10; i++) {
      const idle = await raw();
      slow.push(idle.closed);
      const headers = await raw();
      headers.socket.write("GET /health HTTP/1.1\r\n");
      trickle(headers.socket, "X-Slow: " + "a".repeat(1000), 50);
      slow.push(headers.closed);
      const preface = await raw();
      preface.socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
      slow.push(preface.closed);
    }
    await ordinaryRequests();
    await closedWithin("30 slow clients", Promise.all(slow), Math.max(SNIFF, HEADERS, H2_IDLE) + SLACK);
    await ordinaryRequests();
  });
});

describe("connection cap", () => {
  it("closes connections beyond HTTP_MAX_CONNECTIONS as they arrive, and serves again once below it", async () => {
    const capped = await startTestApp({ HTTP_MAX_CONNECTIONS: "3", HTTP_SNIFF_TIMEOUT_MS: "20000" });
    try {
      const held = [await raw(capped.port), await raw(capped.port), await raw(capped.port)];
      await sleep(100);
      const refused = await raw(capped.port);
      await closedWithin("the 4th connection", refused.closed, 1000);
      assert.equal(refused.received(), "");
      for (const h of held) assert.ok(!h.socket.destroyed, "a connection under the cap was closed");
      held[0].socket.destroy();
      await held[0].closed;
      await sleep(50);
      const c = await raw(capped.port);
      c.socket.write("GET /health HTTP/1.1\r\nHost: vigil\r\nConnection: close\r\n\r\n");
      await closedWithin("a request under the cap", c.closed, 5000);
      assert.match(c.received(), /^HTTP\/1\.1 200 /);
      for (const h of held) h.socket.destroy();
    } finally {
      await capped.close();
    }
  });
});
