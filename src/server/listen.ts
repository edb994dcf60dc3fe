import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { ConnectionLimits } from "../config/index.js";

// One port for HTTP/1.1 (REST, Connect) and cleartext HTTP/2 (gRPC, Connect): the first bytes of
// each connection decide. HTTP/2 prior-knowledge connections open with the "PRI * HTTP/2.0" preface.
//
// Slow clients are dropped (docs/security.md): a connection that has not sent enough bytes to be
// told apart within the sniff timeout; an HTTP/1.1 request whose headers, or whole request (body
// included), take longer than their timeouts; an idle keep-alive connection; an HTTP/2 session with
// no open stream for the idle timeout; an HTTP/2 stream whose request has not ended within the
// request timeout. Connections beyond the cap (counted over every port that shares `count`) are
// closed as they arrive. An HTTP/2 session is bounded in streams open at once, header list size and
// buffered memory (HTTP2_MAX_* settings).

type Handler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

export interface Listener {
  port: number;
  close(): Promise<void>;
}

/** Open connections, shared by the listeners of one app so the cap is a total. */
export interface ConnectionCount {
  open: number;
}

const PREFACE = Buffer.from("PRI * HTTP/2.0");
const { NGHTTP2_CANCEL, NGHTTP2_STREAM_STATE_HALF_CLOSED_REMOTE, NGHTTP2_STREAM_STATE_CLOSED } = http2.constants;

export async function listen(
  handler: Handler,
  host: string,
  port: number,
  limits: ConnectionLimits,
  count: ConnectionCount = { open: 0 },
): Promise<Listener> {
  const h1 = http.createServer(
    {
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: checkEvery(limits),
    },
    handler,
  );
  // Node checks header and request timeouts only for connections it tracks, and it starts tracking
  // when the server emits "listening" (lib/_http_server.js, setupConnectionsTracking). This server
  // never listens itself (it is handed sockets below), so start the tracking by hand; without it no
  // header or request timeout ever fires and closeIdleConnections() does nothing.
  h1.emit("listening");
  // Explicit bounds, advertised in SETTINGS and enforced by nghttp2 (Node's defaults advertise no
  // stream limit and 4 GiB of headers): a stream beyond the limit, or a header list over its size, is
  // reset (REFUSED_STREAM) instead of growing the session's memory.
  const h2 = http2.createServer(
    {
      maxSessionMemory: limits.http2MaxSessionMemoryMb,
      settings: {
        maxConcurrentStreams: limits.http2MaxConcurrentStreams,
        maxHeaderListSize: limits.http2MaxHeaderListBytes,
      },
    },
    handler,
  );
  h2.on("session", (session) => http2Idle(session, limits.http2IdleTimeoutMs));
  h2.on("stream", (stream) => http2RequestTimeout(stream, limits.requestTimeoutMs));

  const sockets = new Set<net.Socket>();
  const tcp = net.createServer((socket) => {
    if (limits.maxConnections > 0 && count.open >= limits.maxConnections) {
      socket.destroy();
      return;
    }
    count.open++;
    sockets.add(socket);
    socket.on("error", () => socket.destroy());
    const sniffTimer =
      limits.sniffTimeoutMs > 0 ? setTimeout(() => socket.destroy(), limits.sniffTimeoutMs) : undefined;
    socket.on("close", () => {
      count.open--;
      sockets.delete(socket);
      clearTimeout(sniffTimer);
    });
    let seen = Buffer.alloc(0);
    const sniff = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read()) !== null) seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, PREFACE.length);
      const prefixMatches = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (prefixMatches && seen.length < PREFACE.length) return; // undecided: wait for more bytes
      clearTimeout(sniffTimer);
      socket.off("readable", sniff);
      socket.unshift(seen);
      (prefixMatches ? h2 : h1).emit("connection", socket);
    };
    socket.on("readable", sniff);
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(port, host, () => resolve());
  });
  let inflight = 0;
  const track = (_req: unknown, res: http.ServerResponse | http2.Http2ServerResponse) => {
    inflight++;
    res.once("close", () => inflight--);
  };
  h1.on("request", track);
  h2.on("request", track);

  return {
    port: (tcp.address() as net.AddressInfo).port,
    async close() {
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      // Finish what is in flight (up to 10 s), closing idle keep-alive connections as they free up.
      const deadline = Date.now() + 10_000;
      while (inflight > 0 && Date.now() < deadline) {
        h1.closeIdleConnections();
        await new Promise((r) => setTimeout(r, 20));
      }
      h1.closeAllConnections();
      h1.close(); // stops the timeout checks
      h2.close();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

/** How often Node looks for expired header/request timeouts: a fraction of the shorter one. */
function checkEvery(limits: ConnectionLimits): number {
  const timeouts = [limits.headersTimeoutMs, limits.requestTimeoutMs].filter((t) => t > 0);
  if (timeouts.length === 0) return 30_000;
  return Math.max(10, Math.min(1000, Math.floor(Math.min(...timeouts) / 4)));
}

/**
 * Closes a session that has had no open stream for `idleMs`. A session with a stream open (a long
 * server-streaming call, a slow handler) is never idle, however quiet its stream is.
 */
function http2Idle(session: http2.ServerHttp2Session, idleMs: number): void {
  if (idleMs <= 0) return;
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      if (open > 0 || session.destroyed) return;
      session.close(); // GOAWAY: the client opens a new connection for its next call
      setTimeout(() => session.destroy(), Math.min(idleMs, 1000)).unref();
    }, idleMs);
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      if (--open === 0 && !session.closed && !session.destroyed) arm();
    });
  });
  session.once("close", () => clearTimeout(timer));
  arm();
}

/** Cancels a stream whose request (headers and body) has not ended within `timeoutMs`. */
function http2RequestTimeout(stream: http2.ServerHttp2Stream, timeoutMs: number): void {
  if (timeoutMs <= 0) return;
  const timer = setTimeout(() => {
    if (stream.destroyed || stream.closed) return;
    const state = stream.state.state;
    if (state === NGHTTP2_STREAM_STATE_HALF_CLOSED_REMOTE || state === NGHTTP2_STREAM_STATE_CLOSED) return;
    stream.close(NGHTTP2_CANCEL);
  }, timeoutMs);
  stream.once("close", () => clearTimeout(timer));
}
