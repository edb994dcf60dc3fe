import http from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

// A fault-injecting HTTP proxy for the SDK tests: it sits between a client and a real Vigil and,
// request by request as its policy decides, passes the request through or breaks it in one of the
// ways a real network and a real server do:
//
//   pass         forwarded; the answer relayed
//   429          answered 429 with `Retry-After: <retryAfter>` (not forwarded)
//   500          answered 500 (not forwarded)
//   drop-before  the client's connection destroyed before anything is forwarded
//   drop-after   forwarded and ANSWERED by the server (it committed), then the client's connection
//                destroyed: the answer is lost, the client can only retry
//   500-after    forwarded and answered by the server, then a 500 sent to the client instead
//   delay        held `delayMs` before being forwarded (a client that timed out meanwhile has sent
//                its retry, which may reach the server first: the original then arrives as a repeat)
//
// When the server cannot be reached (killed, restarting) or its connection breaks mid-request, the
// client's connection is destroyed too, as a direct connection would be. Each request is logged
// with the fault, the server's status (when it answered) and the client ids in its JSON body.

export type Fault = "pass" | "429" | "500" | "drop-before" | "drop-after" | "500-after" | "delay";

interface ProxiedRequest {
  method: string;
  path: string;
  fault: Fault;
  /** The server's status when it answered; undefined when the request never reached it or it broke. */
  upstreamStatus?: number;
  /** Client ids of the body's items (`events[].id`, `metrics[].id`) or of the body itself (`id`); gzip read. */
  ids: string[];
  origin?: string;
  contentType?: string;
  contentEncoding?: string;
  at: number;
  /** The Retry-After value sent with a 429. */
  retryAfter?: string;
}

/** Decides each request's fault: its method, path, number (from 0) and the client ids of its body. */
export type Policy = (req: { method: string; path: string; n: number; ids: string[] }) => Fault;

export interface FaultProxy {
  url: string;
  port: number;
  log: ProxiedRequest[];
  /** Requests currently forwarded to the server and not yet answered by it. */
  inflight(): number;
  setPolicy(policy: Policy): void;
  /** The Retry-After header value of the 429s (default "1"). */
  retryAfter: string;
  /** How long a `delay` fault holds a request before forwarding it (default 1000 ms). */
  delayMs: number;
  close(): Promise<void>;
}

function idsOf(body: Buffer, encoding: string | undefined): string[] {
  try {
    const j = JSON.parse((encoding === "gzip" ? gunzipSync(body) : body).toString("utf8"));
    const items: unknown[] = Array.isArray(j?.events) ? j.events : Array.isArray(j?.metrics) ? j.metrics : [j];
    return items.flatMap((x) =>
      x && typeof x === "object" && typeof (x as { id?: unknown }).id === "string" ? [(x as { id: string }).id] : [],
    );
  } catch {
    return [];
  }
}

export async function startFaultProxy(upstream: string, policy: Policy = () => "pass"): Promise<FaultProxy> {
  const target = new URL(upstream);
  let current = policy;
  let n = 0;
  let inflight = 0;
  const log: ProxiedRequest[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const proxy: FaultProxy = {
    url: "",
    port: 0,
    log,
    inflight: () => inflight,
    setPolicy: (p) => (current = p),
    retryAfter: "1",
    delayMs: 1000,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => undefined);
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const method = req.method ?? "GET";
      const path = req.url ?? "/";
      const ids = idsOf(body, req.headers["content-encoding"]);
      const fault = current({ method, path, n: n++, ids });
      const entry: ProxiedRequest = {
        method,
        path,
        fault,
        ids,
        origin: req.headers.origin,
        contentType: req.headers["content-type"],
        contentEncoding: req.headers["content-encoding"],
        at: Date.now(),
      };
      log.push(entry);
      const kill = () => req.socket.destroy();
      const json = (status: number, headers: Record<string, string>, code: string) =>
        res
          .writeHead(status, { "content-type": "application/json", ...headers })
          .end(JSON.stringify({ error: { code, message: `injected by the fault proxy (${fault})` } }));
      if (fault === "429") {
        entry.retryAfter = proxy.retryAfter;
        return json(429, { "retry-after": proxy.retryAfter }, "rate_limited");
      }
      if (fault === "500") return json(500, {}, "internal");
      if (fault === "drop-before") return kill();
      if (fault === "delay") setTimeout(forward, proxy.delayMs);
      else forward();

      function forward() {
        inflight++;
        let settled = false;
        const done = () => {
          if (!settled) inflight--;
          settled = true;
        };
        const headers = { ...req.headers, host: target.host, connection: "close" };
        const up = http.request(
          { host: target.hostname, port: target.port, method, path, headers, agent: false },
          (ures) => {
            const rchunks: Buffer[] = [];
            ures.on("data", (c: Buffer) => rchunks.push(c));
            ures.on("error", () => (done(), kill()));
            ures.on("end", () => {
              done();
              entry.upstreamStatus = ures.statusCode;
              if (fault === "drop-after") return kill();
              if (fault === "500-after") return json(500, {}, "internal");
              const h = { ...ures.headers };
              delete h.connection;
              delete h["keep-alive"];
              delete h["transfer-encoding"];
              res.writeHead(ures.statusCode ?? 502, h).end(Buffer.concat(rchunks));
            });
          },
        );
        up.on("error", () => (done(), kill()));
        up.end(body);
      }
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  proxy.port = (server.address() as AddressInfo).port;
  proxy.url = `http://127.0.0.1:${proxy.port}`;
  return proxy;
}

/** A seeded pseudo-random generator (mulberry32): fault sequences and random cases that repeat run to run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
