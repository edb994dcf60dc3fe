// One security battery run on every REST route the service registers (derived from the RPCs'
// google.api.http rules, so a new route is covered the moment it exists).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ScalarType } from "@bufbuild/protobuf";
import { isPublic } from "../../src/server/gate.js";
import { routesFor, type Route } from "../../src/transcoding/routes.js";
import { errorBody, tenants, type Account, type ProjectFixture } from "../helpers/fixtures.js";
import type { Res } from "../helpers/rest.js";
import { useApp } from "../helpers/use.js";

// The routes that take no credentials: the RPCs marked (vigil.v1.no_credentials) (src/server/gate.ts isPublic).
const isPublicRoute = (route: Route) => isPublic(route.method);

let a: ProjectFixture;
let b: ProjectFixture;
let stranger: Account;
let revokedKey: string;
let routes: Route[];
const seen: Res[] = [];

function pathFor(route: Route, projectId: string, filler = "x1"): string {
  // A numeric path field (an exit code) takes a number, so that the route is reached at all.
  const numeric = (name: string) => {
    const f = route.method.input.fields.find((x) => x.name === name);
    return f?.fieldKind === "scalar" && f.scalar !== ScalarType.STRING && f.scalar !== ScalarType.BYTES;
  };
  return (
    "/" +
    route.segments
      .map((s) =>
        "literal" in s
          ? s.literal
          : s.variable === "project_id"
            ? encodeURIComponent(projectId)
            : numeric(s.variable)
              ? "1"
              : encodeURIComponent(filler),
      )
      .join("/")
  );
}

async function call(
  route: Route,
  path: string,
  opts: { key?: string; cookie?: string; headers?: Record<string, string> },
): Promise<Res> {
  const hasBody = route.verb === "POST" || route.verb === "PATCH" || route.verb === "PUT";
  const r = await t.rest.req(route.verb, path, { ...opts, body: hasBody ? {} : undefined });
  seen.push(r);
  assert.ok(r.status < 500, `${route.verb} ${path} answered ${r.status}: ${r.text}`);
  return r;
}

const { t } = useApp({}, {}, async () => {
  ({ a, b, stranger, revokedKey } = await tenants(t.rest));
  routes = routesFor(t.app.features.flatMap((f) => f.services.map((s) => s.desc)));
});

const label = (r: Route) => `${r.verb} ${r.template}`;

describe("security battery over every route", () => {
  it("covers the routes the service registers", () => {
    assert.ok(routes.length >= 17, `only ${routes.length} routes`);
  });

  it("refuses missing, malformed, unknown and revoked credentials with 401", async () => {
    for (const route of routes) {
      if (isPublicRoute(route)) continue;
      const path = pathFor(route, "self");
      for (const headers of [
        {} as Record<string, string>,
        { authorization: "Basic Zm9vOmJhcg==" },
        { authorization: "Bearer vk_" + "0".repeat(40) },
        { authorization: `Bearer ${revokedKey}` },
        { cookie: "vigil_session=forged.signature" },
      ]) {
        const r = await call(route, path, { headers });
        assert.equal(r.status, 401, `${label(route)} with ${JSON.stringify(headers)}: ${r.status} ${r.text}`);
        assert.equal(errorBody(r).code, "unauthenticated");
      }
    }
  });

  it("checks credentials before the media type: a write without credentials is a 401 whatever its content type", async () => {
    for (const route of routes) {
      if (isPublicRoute(route) || !["POST", "PATCH", "PUT"].includes(route.verb)) continue;
      const path = pathFor(route, "self");
      for (const [what, opts] of [
        ["no content type, no body", { raw: Buffer.alloc(0) }],
        ["a form body", { raw: "a=b", contentType: "application/x-www-form-urlencoded" }],
        ["a text/plain body", { raw: "{}", contentType: "text/plain" }],
      ] as const) {
        const r = await t.rest.req(route.verb, path, opts);
        seen.push(r);
        assert.equal(r.status, 401, `${label(route)} without credentials, ${what}: ${r.status} ${r.text}`);
        assert.equal(errorBody(r).code, "unauthenticated");
      }
    }
  });

  it("never lets one tenant's API key reach another tenant's project", async () => {
    for (const route of routes) {
      if (!route.segments.some((s) => "variable" in s && s.variable === "project_id")) continue;
      const r = await call(route, pathFor(route, b.projectId), { key: a.key });
      assert.ok(r.status === 404 || r.status === 403, `${label(route)}: ${r.status} ${r.text}`);
      errorBody(r);
    }
  });

  it("never lets a non-member session see a project (404, ids are not probed)", async () => {
    for (const route of routes) {
      if (!route.segments.some((s) => "variable" in s && s.variable === "project_id")) continue;
      const r = await call(route, pathFor(route, b.projectId), { cookie: stranger.cookie });
      assert.equal(r.status, 404, `${label(route)}: ${r.status} ${r.text}`);
      assert.equal(errorBody(r).code, "not_found");
    }
  });

  it("answers hostile ids with a clean 4xx", async () => {
    const hostile = [
      "'; DROP TABLE events; --",
      "..%2F..%2Fetc%2Fpasswd",
      "\\\\x00",
      "💥".repeat(50),
      "a".repeat(5000),
      "{{7*7}}",
      "null",
    ];
    for (const route of routes) {
      for (const h of hostile) {
        const r = await call(route, pathFor(route, "self", h), { key: a.key });
        if (r.status >= 400) errorBody(r);
      }
      for (const h of hostile) {
        if (!route.segments.some((s) => "variable" in s && s.variable === "project_id")) break;
        const r = await call(route, pathFor(route, h), { cookie: a.owner.cookie });
        assert.ok(r.status >= 400 && r.status < 500, `${label(route)} with project ${h}: ${r.status}`);
        errorBody(r);
      }
    }
  });

  it("never returns a full API key, a key hash, a password or a stack trace", () => {
    for (const r of seen) {
      assert.ok(
        !r.text.includes(a.key) && !r.text.includes(b.key) && !r.text.includes(revokedKey),
        "an API key secret leaked",
      );
      assert.ok(!/[0-9a-f]{64}/.test(r.text), "something hash-like leaked");
      assert.ok(!/scrypt\$/.test(r.text), "a password hash leaked");
      assert.ok(!r.text.includes(a.owner.password), "a password leaked");
      assert.ok(!/\bat .+\.(ts|js):\d+/.test(r.text), "a stack trace leaked");
      assert.ok(!/\b(SELECT|INSERT|UPDATE|DELETE)\b.+\b(FROM|INTO|SET)\b/.test(r.text), "SQL leaked");
      assert.ok(!/postgres(ql)?:\/\//.test(r.text), "a database URL leaked");
    }
  });
});
