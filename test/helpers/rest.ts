// A small REST client for tests: real HTTP over the loopback port, nothing mocked.

export interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface ReqOpts {
  body?: unknown;
  /** Raw body (sent as is); pair with contentType. */
  raw?: string | Buffer;
  contentType?: string;
  key?: string;
  cookie?: string;
  headers?: Record<string, string>;
}

export class RestClient {
  constructor(readonly baseUrl: string) {}

  async req<T = any>(method: string, path: string, opts: ReqOpts = {}): Promise<Res<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    if (opts.cookie) headers.cookie = opts.cookie;
    let body: string | Uint8Array | undefined;
    if (opts.raw !== undefined) {
      body = opts.raw;
      if (opts.contentType) headers["content-type"] = opts.contentType;
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = opts.contentType ?? "application/json";
    } else if (!opts.key && method !== "GET" && method !== "DELETE") {
      // A write without an API key is cookie-borne: like the dashboard, send it as JSON (the
      // cross-site request rule refuses anything else with 415).
      body = "{}";
      headers["content-type"] = "application/json";
    }
    const r = await fetch(this.baseUrl + path, { method, headers, body: body as BodyInit | undefined });
    const text = await r.text();
    let parsed: any = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: r.status, body: parsed, headers: r.headers, text };
  }

  get = <T = any>(path: string, o?: ReqOpts) => this.req<T>("GET", path, o);
  post = <T = any>(path: string, body?: unknown, o?: ReqOpts) => this.req<T>("POST", path, { ...o, body });
  patch = <T = any>(path: string, body?: unknown, o?: ReqOpts) => this.req<T>("PATCH", path, { ...o, body });
  del = <T = any>(path: string, o?: ReqOpts) => this.req<T>("DELETE", path, o);
}

/** The `vigil_session=...` pair from a Set-Cookie header. */
export function sessionCookie(res: Res): string {
  const c = res.headers.getSetCookie().find((x) => x.startsWith("vigil_session="));
  if (!c) throw new Error(`no session cookie in response (status ${res.status})`);
  return c.split(";")[0];
}
