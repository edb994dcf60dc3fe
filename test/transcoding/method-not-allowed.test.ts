import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { doc, type Json } from "../clients/openapi-check.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { useProject } from "../helpers/use.js";

// decisions.md "Corrections from the second round": a path that exists answers a method it does not
// serve with 405 and an `Allow` header naming the ones it does; an unknown path stays a 404. Every
// path of the document, the reference's own and the public status pages'.

const { t, p } = useProject(GENEROUS_LIMITS);

const fill = (path: string) => path.replace(/\{(\w+)\}/g, (_, v: string) => (v === "projectId" ? p.projectId : "x1"));
const allowOf = (h: Headers) => (h.get("allow") ?? "").split(/,\s*/).filter(Boolean);

describe("a method a path does not serve", () => {
  it("is a 405 naming the path's methods in Allow, on every path of the document", async () => {
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      const documented = Object.keys(item).map((v) => v.toUpperCase());
      // `DELETE .../monitors/overview` is `DELETE .../monitors/{monitorId}` of a monitor "overview".
      const servedElsewhere = (verb: string) =>
        Object.entries(doc.paths as Record<string, Json>).some(
          ([other, ops]) =>
            other !== path &&
            verb.toLowerCase() in ops &&
            new RegExp(`^${other.replace(/\{\w+\}/g, "[^/]+")}$`).test(fill(path)),
        );
      for (const verb of ["PUT", "DELETE", "PATCH"].filter((v) => !documented.includes(v) && !servedElsewhere(v))) {
        const r = await t.rest.req(verb, fill(path), { key: p.key });
        assert.equal(r.status, 405, `${verb} ${path}: ${r.text}`);
        assert.equal(r.body.error.code, "method_not_allowed", `${verb} ${path}`);
        for (const v of documented) assert.ok(allowOf(r.headers).includes(v), `${verb} ${path}: Allow lacks ${v}`);
        assert.ok(!allowOf(r.headers).includes(verb), `${verb} ${path}: Allow names it`);
      }
    }
  });

  it("is a 405 on the reference and the public status page too", async () => {
    for (const path of ["/docs", "/openapi.json", "/status/some-page", "/v1/status/some-page"]) {
      const r = await t.rest.req("POST", path, { body: {} });
      assert.equal(r.status, 405, `POST ${path}: ${r.text}`);
      assert.ok(
        allowOf(r.headers).includes("GET") && !allowOf(r.headers).includes("POST"),
        `${path}: ${r.headers.get("allow")}`,
      );
      // The HTML page answers its errors as HTML.
      if (!path.startsWith("/status/")) assert.equal(r.body.error.code, "method_not_allowed", path);
    }
  });

  it("leaves an unknown path a 404", async () => {
    const r = await t.rest.req("GET", "/v1/no-such-thing", { key: p.key });
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, "not_found");
  });
});
