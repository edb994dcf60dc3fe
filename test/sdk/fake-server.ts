import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach } from "node:test";
import { gunzipSync } from "node:zlib";
import { Vigil, type VigilError, type VigilOptions } from "../../sdk/src/index.js";

// A real local HTTP server standing in for Vigil in the SDK's tests: every request is recorded with
// its parsed body and arrival time, and each answer is programmable, including faults — a status
// with headers, a connection reset before any answer, or no answer at all (a hung server).

export interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  raw: string;
  wireBytes: number;
  body: any;
  at: number;
  /** Requests in progress when this one arrived (itself included). */
  concurrent: number;
}

export type Fault =
  { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number } | "reset" | "hang";

/** Default answer: what Vigil answers to a batch (202 for events, 201 for metrics), every item accepted. */
export function accept(req: Seen): Fault {
  if (req.path === "/v1/events/batch") {
    const events = (req.body?.events ?? []).map((e: any) => ({ id: `evt_${e.id}`, type: e.type }));
    return {
      status: 202,
      body: { data: { events, received: events.length, accepted: events.length, rejected: 0, errors: [] } },
    };
  }
  if (req.path.endsWith("/metrics/batch")) {
    return { status: 201, body: { data: { accepted: req.body?.metrics?.length ?? 0, rejected: 0, errors: [] } } };
  }
  if (req.path.includes("/heartbeats/")) {
    return {
      status: 202,
      body: {
        data: {
          accepted: true,
          monitor: { id: "mon_1", name: "x", type: "heartbeat", status: "up", lastHeartbeatAt: null },
          statusChanged: false,
        },
      },
    };
  }
  return { status: 404, body: { error: { code: "not_found", message: "no route" } } };
}

export class FakeServer {
  readonly seen: Seen[] = [];
  url = "";
  /** Decides each answer; `n` counts requests from 1. Default: accept. */
  answer: (req: Seen, n: number) => Fault = accept;
  /** Answer preflights and allow any origin (what Vigil does for an allowed origin), for pages. */
  cors = false;
  private server!: http.Server;
  private active = 0;
  private readonly hung = new Set<http.ServerResponse>();

  static start(): Promise<FakeServer> {
    return new FakeServer().listen();
  }

  async listen(): Promise<this> {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const f = this;
    f.server = http.createServer((req, res) => {
      if (f.cors && req.headers.origin) {
        res.setHeader("access-control-allow-origin", req.headers.origin);
        res.setHeader("vary", "Origin");
        if (req.method === "OPTIONS") {
          res.writeHead(204, {
            "access-control-allow-methods": "POST",
            "access-control-allow-headers": "authorization, content-type, content-encoding",
            "access-control-max-age": "86400",
          });
          return res.end();
        }
      }
      f.active++;
      const concurrent = f.active;
      res.on("close", () => f.active--);
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const bytes = Buffer.concat(chunks);
        // A gzipped body is recorded decompressed (`raw`), its size on the wire in `wireBytes`.
        const raw = (req.headers["content-encoding"] === "gzip" ? gunzipSync(bytes) : bytes).toString("utf8");
        let body: any;
        try {
          body = JSON.parse(raw);
        } catch {
          body = undefined;
        }
        const u = new URL(req.url ?? "/", "http://x");
        const seen: Seen = {
          method: req.method ?? "",
          path: u.pathname,
          query: u.searchParams,
          headers: req.headers,
          raw,
          wireBytes: bytes.length,
          body,
          at: Date.now(),
          concurrent,
        };
        f.seen.push(seen);
        const a = f.answer(seen, f.seen.length);
        if (a === "reset") return req.socket.destroy();
        if (a === "hang") return void f.hung.add(res);
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(a.status, { "content-type": "application/json", ...a.headers });
          res.end(a.body === undefined ? "" : JSON.stringify(a.body));
        };
        if (a.delayMs) setTimeout(send, a.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => f.server.listen(0, "127.0.0.1", resolve));
    f.url = `http://127.0.0.1:${(f.server.address() as AddressInfo).port}`;
    return f;
  }

  /** Events received (every request's items, duplicates included). */
  events(): any[] {
    return this.seen.filter((s) => s.path === "/v1/events/batch").flatMap((s) => s.body?.events ?? []);
  }

  /** Waits until `pred` holds (polling every 5 ms), failing after `ms`. */
  async until(pred: () => boolean, ms = 5000, what = "condition"): Promise<void> {
    const end = Date.now() + ms;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what} (${this.seen.length} requests seen)`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async close(): Promise<void> {
    for (const r of this.hung) r.socket?.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * One FakeServer for a test file (started before its tests, closed after, emptied and answering
 * `accept` again before each), and a client factory against it: `defaults`, then each call's options.
 */
export function useFakeServer(defaults: Partial<VigilOptions> = {}) {
  const f = new FakeServer();
  before(() => f.listen());
  after(() => f.close());
  beforeEach(() => {
    f.seen.length = 0;
    f.answer = accept;
  });
  function client(opts: Partial<VigilOptions> = {}) {
    const errors: VigilError[] = [];
    const vigil = new Vigil({ apiKey: "vk_test", apiUrl: f.url, onError: (e) => errors.push(e), ...defaults, ...opts });
    return { vigil, errors };
  }
  return { f, client };
}
