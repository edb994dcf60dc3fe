import type { IncomingHttpHeaders } from "node:http";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ContextValues, HandlerContext } from "@connectrpc/connect";

// A HandlerContext for REST calls, made for the hot path: request headers are read straight from
// Node's parsed (lower-cased) header object instead of being copied and re-validated into a fetch
// Headers, the response headers are created only when a handler touches them, and the signal is
// made only when a handler asks for it: it aborts when the client goes away before the answer is
// written (so long statements can be cancelled) or when the process shuts down.

/** Node's parsed request headers behind the read side of a fetch `Headers` (get, has, forEach). */
export class NodeRequestHeaders {
  constructor(private readonly h: IncomingHttpHeaders) {}

  get(name: string): string | null {
    const v = this.h[name.toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(", ") : v;
  }

  has(name: string): boolean {
    return this.h[name.toLowerCase()] !== undefined;
  }

  forEach(cb: (value: string, key: string) => void): void {
    for (const [k, v] of Object.entries(this.h))
      if (v !== undefined && !k.startsWith(":")) cb(Array.isArray(v) ? v.join(", ") : v, k);
  }
}

const neverAborted = new AbortController().signal;

export interface RestContextInit {
  service: DescService;
  method: DescMethod;
  requestMethod: string;
  url: string;
  headers: IncomingHttpHeaders;
  values: ContextValues;
  shutdownSignal?: AbortSignal;
  /** The response: its early close (the client went away) aborts `signal`. */
  response?: { once(event: "close", cb: () => void): unknown; readonly writableFinished: boolean };
}

export interface RestContext extends HandlerContext {
  /** The response headers if a handler created any. */
  readonly touchedResponseHeader: Headers | undefined;
}

export function restContext(init: RestContextInit): RestContext {
  let response: Headers | undefined;
  let trailer: Headers | undefined;
  let signal: AbortSignal | undefined;
  const makeSignal = (): AbortSignal => {
    const res = init.response;
    if (!res) return init.shutdownSignal ?? neverAborted;
    const ac = new AbortController();
    const shutdown = init.shutdownSignal;
    const onShutdown = () => ac.abort(shutdown?.reason);
    shutdown?.addEventListener("abort", onShutdown, { once: true });
    res.once("close", () => {
      shutdown?.removeEventListener("abort", onShutdown);
      if (!res.writableFinished) ac.abort(new Error("client disconnected"));
    });
    return ac.signal;
  };
  return {
    service: init.service,
    method: init.method,
    get signal() {
      return (signal ??= makeSignal());
    },
    timeoutMs: () => undefined,
    requestMethod: init.requestMethod,
    requestHeader: new NodeRequestHeaders(init.headers) as unknown as Headers,
    get responseHeader() {
      return (response ??= new Headers());
    },
    get responseTrailer() {
      return (trailer ??= new Headers());
    },
    get touchedResponseHeader() {
      return response;
    },
    protocolName: "rest",
    values: init.values,
    url: init.url,
  };
}
