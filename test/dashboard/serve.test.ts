// How Vigil serves the dashboard (src/server/dashboard.ts): index.html for the application's
// routes with a strict CSP, hashed assets cacheable forever and gzipped, nothing else captured
// (the API, the docs and status pages keep their paths), no write verbs, and a missing build
// answered with a page that says how to make it.
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { gunzipSync } from "node:zlib";
import { startTestApp } from "../helpers/app.js";
import { useApp } from "../helpers/use.js";

const { t } = useApp();

const get = (p: string, headers: Record<string, string> = {}, method = "GET") =>
  fetch(`${t.url}${p}`, { method, headers: { "accept-encoding": "identity", ...headers } });

describe("the dashboard's files", () => {
  it("answers index.html with a strict CSP on every application route", async () => {
    for (const p of ["/", "/login", "/signup", "/projects", "/projects/abc/events", "/projects/abc/uptime/def/"]) {
      const r = await get(p);
      assert.equal(r.status, 200, p);
      assert.match(r.headers.get("content-type") ?? "", /^text\/html/);
      const csp = r.headers.get("content-security-policy") ?? "";
      assert.match(csp, /script-src 'self'/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /unsafe/);
      assert.equal(r.headers.get("cache-control"), "no-cache");
      const html = await r.text();
      assert.match(html, /<div id="app"><\/div>/);
      // No inline script: everything the page runs is a file of the build.
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/);
    }
  });

  it("serves the hashed assets immutable, gzipped when asked, and HEAD without a body", async () => {
    const html = await (await get("/")).text();
    const js = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(js, "index.html names its bundle");
    const plain = await get(js);
    assert.equal(plain.status, 200);
    assert.match(plain.headers.get("content-type") ?? "", /^text\/javascript/);
    assert.equal(plain.headers.get("cache-control"), "public, max-age=31536000, immutable");
    const body = Buffer.from(await plain.arrayBuffer());
    const zipped = await fetch(`${t.url}${js}`, { headers: { "accept-encoding": "gzip" } });
    // fetch inflates transparently; the header says it travelled compressed.
    assert.equal(zipped.headers.get("content-encoding"), "gzip");
    assert.deepEqual(Buffer.from(await zipped.arrayBuffer()), body);
    const raw = await import("node:http").then(
      (http) =>
        new Promise<Buffer>((resolve, reject) =>
          http
            .get(`${t.url}${js}`, { headers: { "accept-encoding": "gzip" } }, (res) => {
              const chunks: Buffer[] = [];
              res.on("data", (c) => chunks.push(c));
              res.on("end", () => resolve(Buffer.concat(chunks)));
            })
            .on("error", reject),
        ),
    );
    assert.ok(raw.length < body.length / 2, `gzip ${raw.length} of ${body.length} bytes`);
    assert.deepEqual(gunzipSync(raw), body);
    const head = await get(js, {}, "HEAD");
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  });

  it("bundles the stand-in for validate.proto's descriptor, not the descriptor (web/src/validate-stub.ts)", async () => {
    const html = await (await get("/")).text();
    const js = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1];
    const body = await (await get(js)).text();
    // Both embeddings start with the file's name; only the stand-in ends after its syntax.
    const starts = body.match(/ChtidWYvdmFsaWRhdGUvdmFsaWRhdGUucHJvdG8[A-Za-z0-9+/=]*/g) ?? [];
    assert.deepEqual(starts, ["ChtidWYvdmFsaWRhdGUvdmFsaWRhdGUucHJvdG8SDGJ1Zi52YWxpZGF0ZWIGcHJvdG8y"]);
  });

  it("leaves the API, the docs and unknown paths alone, and never takes a write", async () => {
    assert.equal((await get("/v1/projects")).status, 401);
    assert.equal((await get("/health")).status, 200);
    assert.equal((await get("/docs")).status, 200);
    const missing = await get("/assets/nope-123.js");
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, "not_found");
    for (const p of [
      "/assets/../package.json",
      "/assets/%2e%2e%2fpackage.json",
      "/projects/../../etc/passwd",
      "/wp-admin",
    ]) {
      const r = await get(p);
      assert.notEqual(r.status, 200, p);
      assert.ok(r.status >= 400 && r.status < 500, `${p}: ${r.status}`);
    }
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const r = await fetch(`${t.url}/projects`, {
        method,
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.ok(r.status >= 400 && r.status < 500, `${method} /projects: ${r.status}`);
      assert.match(r.headers.get("content-type") ?? "", /json/);
    }
  });

  it("answers a page that says how to build it when the build is missing (503, the API still up)", async () => {
    const empty = await mkdtemp(path.join(os.tmpdir(), "vigil-no-dashboard-"));
    const app = await startTestApp({ DASHBOARD_DIR: empty });
    try {
      const r = await fetch(`${app.url}/projects`);
      assert.equal(r.status, 503);
      assert.match(await r.text(), /npm run build:web/);
      assert.equal((await fetch(`${app.url}/health`)).status, 200);
    } finally {
      await app.close();
    }
  });
});
