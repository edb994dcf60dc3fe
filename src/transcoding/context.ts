import type { IncomingHttpHeaders } from "node:http";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ContextValues, HandlerContext } from "@connectrpc/connect";

// A HandlerContext for REST calls, made for the hot path: request headers are read straight from
// Node's parsed (lower-cased) header object instead of being copied and re-validated into a fetch
// Headers, the response headers are created only when a handler touches them, and the signal is the
// process's shutdown signal itself (nothing to link per request, so nothing to unlink).

class NodeRequestHeaders {
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
    for (const [k, v] of Object.entries(this.h)) if (v !== undefined && !k.startsWith(":")) cb(Array.isArray(v) ? v.join(", ") : v, k);
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
}

export interface RestContext extends HandlerContext {
  /** The response headers if a handler created any. */
  readonly touchedResponseHeader: Headers | undefined;
}

export function restContext(init: RestContextInit): RestContext {
  let response: Headers | undefined;
  let trailer: Headers | undefined;
  return {
    service: init.service,
    method: init.method,
    signal: init.shutdownSignal ?? neverAborted,
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
