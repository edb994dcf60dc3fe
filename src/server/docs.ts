import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { methodNotAllowed, toRestError } from "../shared/errors.js";

// The API reference: GET /openapi.json (gen/openapi.json, written by `npm run generate`) and
// GET /docs, Swagger UI served offline: its bundle and stylesheet come from node_modules
// (swagger-ui-dist) through Vigil, started by our own script, under a CSP that allows nothing
// from elsewhere. Public, like /health: the document holds no secret.

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const OPENAPI_PATH = path.join(root, "gen", "openapi.json");
/** Resolved on first use: a missing package answers 404 on /docs, it does not stop the service. */
const uiDir = () => path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

/** Swagger UI sets styles through the CSSOM (allowed without 'unsafe-inline') and its stylesheet inlines icons as data: URIs. */
const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const INIT_JS = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    displayOperationId: true,
    tryItOutEnabled: false,
  });
});
`;

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Vigil API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script>
</body>
</html>
`;

interface Asset {
  type: string;
  body: () => Buffer;
}

function once(load: () => Buffer): () => Buffer {
  let b: Buffer | undefined;
  return () => (b ??= load());
}

const fromUi = (file: string) => once(() => readFileSync(path.join(uiDir(), file)));

const ASSETS: Record<string, Asset> = {
  "/openapi.json": { type: "application/json; charset=utf-8", body: once(() => readFileSync(OPENAPI_PATH)) },
  "/docs": { type: "text/html; charset=utf-8", body: once(() => Buffer.from(HTML)) },
  "/docs/assets/init.js": { type: "text/javascript; charset=utf-8", body: once(() => Buffer.from(INIT_JS)) },
  "/docs/assets/swagger-ui-bundle.js": { type: "text/javascript; charset=utf-8", body: fromUi("swagger-ui-bundle.js") },
  "/docs/assets/swagger-ui.css": { type: "text/css; charset=utf-8", body: fromUi("swagger-ui.css") },
  "/docs/assets/favicon-32x32.png": { type: "image/png", body: fromUi("favicon-32x32.png") },
};

/** True when the path is one of the reference's (the caller then leaves the request to `serveDocs`). */
export const isDocsPath = (pathname: string) => pathname in ASSETS || pathname === "/docs/";

export function serveDocs(req: Req, res: Res, pathname: string): void {
  req.resume();
  const verb = req.method ?? "GET";
  const asset = ASSETS[pathname === "/docs/" ? "/docs" : pathname];
  if (verb !== "GET" && verb !== "HEAD") {
    const { status, body, headers } = toRestError(methodNotAllowed(pathname, verb, ["GET", "HEAD"]));
    res.setHeader("allow", headers.get("allow")!);
    send(res, status, "application/json", Buffer.from(JSON.stringify(body)));
    return;
  }
  let body: Buffer;
  try {
    body = asset.body();
  } catch {
    // gen/openapi.json missing (npm run generate not run) or swagger-ui-dist not installed.
    send(
      res,
      404,
      "application/json",
      Buffer.from(
        JSON.stringify({ error: { code: "not_found", message: `${pathname} is not available on this installation` } }),
      ),
    );
    return;
  }
  res.setHeader("x-content-type-options", "nosniff");
  res.setHeader("cache-control", "no-cache");
  if (pathname === "/openapi.json") res.setHeader("access-control-allow-origin", "*");
  if (asset.type.startsWith("text/html")) {
    res.setHeader("content-security-policy", DOCS_CSP);
    res.setHeader("x-frame-options", "DENY");
    res.setHeader("referrer-policy", "no-referrer");
  }
  send(res, 200, asset.type, verb === "HEAD" ? undefined : body, body.length);
}

function send(res: Res, status: number, type: string, body: Buffer | undefined, length = body?.length ?? 0): void {
  res.writeHead(status, { "content-type": type, "content-length": length });
  if (body) res.end(body);
  else res.end();
}
