import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before } from "node:test";
import { later } from "../helpers/later.js";

// A real local HTTP receiver for webhook tests (node:http on 127.0.0.1). Each path answers with a
// programmable reply; every request is recorded with its raw body.

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  at: number;
}

interface Reply {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait before answering (a slow receiver). */
  delayMs?: number;
}

export type Responder = (req: Received, nth: number) => Reply;

export class Receiver {
  readonly requests: Received[] = [];
  private readonly responders = new Map<string, Responder>();
  private server!: http.Server;
  url = "";

  static async start(): Promise<Receiver> {
    const r = new Receiver();
    r.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const path = (req.url ?? "/").split("?")[0];
        const rec: Received = {
          method: req.method ?? "",
          path,
          headers: req.headers,
          raw: Buffer.concat(chunks).toString("utf8"),
          at: Date.now(),
        };
        r.requests.push(rec);
        const nth = r.requests.filter((x) => x.path === path).length;
        const reply: Reply = (r.responders.get(path) ?? (() => ({ status: 200, body: "ok" })))(rec, nth);
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(reply.status ?? 200, reply.headers ?? {});
          res.end(reply.body ?? "");
        };
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    r.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => r.server.listen(0, "127.0.0.1", resolve));
    r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}`;
    return r;
  }

  on(path: string, responder: Responder): string {
    this.responders.set(path, responder);
    return this.url + path;
  }

  at(path: string): Received[] {
    return this.requests.filter((x) => x.path === path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/** Polls until `fn` returns a truthy value (bounded; no timing assertions). */
export async function waitFor<T>(fn: () => T | Promise<T>, what: string, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A local receiver for this file: started before its tests, closed after them (after the file's app,
 * when called after useApp/useProject: hooks run in the order they were registered).
 */
export function useReceiver(): Receiver {
  let rx: Receiver | undefined;
  before(async () => {
    rx = await Receiver.start();
  });
  after(() => rx?.close());
  return later(() => rx, "the receiver");
}

/**
 * A local receiver started on first use, so that settings naming it (PAGERDUTY_EVENTS_URL) can be
 * given to useProject as an env function awaiting it, whatever order the before() hooks run in;
 * closed after the file's tests.
 */
export function useLazyReceiver(): () => Promise<Receiver> {
  let started: Promise<Receiver> | undefined;
  after(async () => (await started?.catch(() => undefined))?.close());
  return () => (started ??= Receiver.start());
}
