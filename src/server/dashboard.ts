import { readdirSync, readFileSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

// The dashboard (web/, docs/dashboard.md): a single-page application built by Vite into
// DASHBOARD_DIR (default web/dist), served by Vigil on its own port so `npm start` is the whole
// installation. Its paths are few and fixed: `/` and the client routes below answer index.html
// (the application routes in the browser), `/assets/*` the hashed bundles (immutable), everything
// else goes on to the API. The files are read into memory, with a gzip copy of each (the whole
// build is a few hundred KB), again when a page load finds a newer index.html; a missing build
// answers a page that says how to make it. With PUBLIC_URL set, index.html carries it in a
// `<meta name="vigil-public-url">` (the ping URLs a monitor's page shows are on the public address).

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** web/dist of this installation (the `npm run build:web` output). */
export const DEFAULT_DASHBOARD_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../web/dist");

/** The application's own routes (web/src/app.tsx): each answers index.html. */
const CLIENT_ROUTES = /^\/(?:|login|signup|projects(?:\/[^/]+)*)\/?$/;
const ASSET = /^\/assets\/[\w.-]+$/;

/** The API and the dashboard share an origin: the dashboard may call nothing else. */
const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".json": "application/json",
};

interface File {
  type: string;
  body: Buffer;
  gzip?: Buffer;
}

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Vigil</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3rem">
<h1>The dashboard is not built</h1>
<p>Run <code>npm run build:web</code> (or <code>npm start</code>, which builds it first), then reload.
The API is served at <a href="/docs">/docs</a> either way.</p>
</body></html>
`;

export interface Dashboard {
  /** True when Vigil answers this path with the dashboard (GET/HEAD only). */
  matches(pathname: string, method: string | undefined): boolean;
  serve(req: Req, res: Res, pathname: string): void;
}

/** index.html with PUBLIC_URL in a meta element, for the page to read (web/src/ui/ping-keys.ts). */
function withPublicUrl(html: Buffer, publicUrl: string | undefined): Buffer {
  if (!publicUrl) return html;
  const attr = publicUrl.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);
  const text = html.toString("utf8");
  const at = text.indexOf("</head>");
  if (at < 0) return html;
  return Buffer.from(`${text.slice(0, at)}<meta name="vigil-public-url" content="${attr}">${text.slice(at)}`);
}

export function createDashboard(dir: string, publicUrl?: string): Dashboard {
  let files: Map<string, File> | undefined;
  let builtAt = 0;
  /** The build in memory; a page load (not an asset) notices a new build (`npm run build:web`). */
  const load = (page: boolean): Map<string, File> | undefined => {
    if (files && !page) return files;
    let mtime: number;
    try {
      const st = statSync(path.join(dir, "index.html"));
      if (!st.isFile()) return undefined;
      mtime = st.mtimeMs;
    } catch {
      return files; // not built (yet): tried again on the next page load
    }
    if (files && mtime === builtAt) return files;
    builtAt = mtime;
    const out = new Map<string, File>();
    const walk = (rel: string) => {
      for (const name of readdirSync(path.join(dir, rel))) {
        const r = rel ? `${rel}/${name}` : name;
        const full = path.join(dir, r);
        if (statSync(full).isDirectory()) walk(r);
        else {
          const type = TYPES[path.extname(name)] ?? "application/octet-stream";
          const body = r === "index.html" ? withPublicUrl(readFileSync(full), publicUrl) : readFileSync(full);
          const compressible = /^(text\/|image\/svg|application\/json)/.test(type) && body.length > 512;
          out.set(`/${r}`, { type, body, gzip: compressible ? gzipSync(body, { level: 9 }) : undefined });
        }
      }
    };
    walk("");
    files = out;
    return files;
  };

  return {
    matches(pathname, method) {
      if (method !== "GET" && method !== "HEAD") return false;
      return CLIENT_ROUTES.test(pathname) || ASSET.test(pathname) || pathname === "/favicon.svg";
    },
    serve(req, res, pathname) {
      req.resume();
      const isFile = ASSET.test(pathname) || pathname === "/favicon.svg";
      const all = load(!isFile);
      res.setHeader("x-content-type-options", "nosniff");
      if (!all) {
        res.setHeader("cache-control", "no-store");
        send(req, res, 503, { type: TYPES[".html"], body: Buffer.from(NOT_BUILT) });
        return;
      }
      const asset = isFile ? all.get(pathname) : all.get("/index.html");
      if (!asset) {
        res.setHeader("cache-control", "no-store");
        const body = Buffer.from(JSON.stringify({ error: { code: "not_found", message: `${pathname} not found` } }));
        send(req, res, 404, { type: "application/json", body });
        return;
      }
      if (asset.type.startsWith("text/html")) {
        // The page itself is never cached (it names the current bundles); it runs only our scripts.
        res.setHeader("cache-control", "no-cache");
        res.setHeader("content-security-policy", DASHBOARD_CSP);
        res.setHeader("x-frame-options", "DENY");
        res.setHeader("referrer-policy", "same-origin");
      } else res.setHeader("cache-control", "public, max-age=31536000, immutable");
      send(req, res, 200, asset);
    },
  };
}

function send(req: Req, res: Res, status: number, file: File): void {
  const gzip = file.gzip && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
  const body = gzip ? file.gzip! : file.body;
  const headers: Record<string, string | number> = { "content-type": file.type, "content-length": body.length };
  if (file.gzip) headers.vary = "accept-encoding";
  if (gzip) headers["content-encoding"] = "gzip";
  res.writeHead(status, headers);
  if (req.method === "HEAD") res.end();
  else res.end(body);
}
