// The input half of the security battery, generated from the route table: every REST route gets
// hostile values in every path variable and every body field its input message declares (NUL,
// lone surrogates, prototype-member names, 1e400, wrong JSON types, nested junk), and every write
// route a non-JSON body with a session cookie. A new route or field is covered the moment it
// exists. Nothing may answer 5xx, hang, or leak a secret, a hash, SQL or a stack trace.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ScalarType, type DescField } from "@bufbuild/protobuf";
import { routesFor, type Route } from "../../src/transcoding/routes.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, pingKey, project, signup, type ProjectFixture } from "../helpers/fixtures.js";
import type { Res } from "../helpers/rest.js";
import { assertNoLeak } from "./leaks.js";
import { useApp } from "../helpers/use.js";

let a: ProjectFixture;
let ping: { secret: string };
let routes: Route[];
const seen: Res[] = [];

const PROTO_NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "prototype"];
const INF = "__INFINITY__";

const { t } = useApp(GENEROUS_LIMITS, {}, async () => {
  a = await project(t.rest);
  // A ping URL's key is in its path: a real one, so its body rules are reached.
  ping = await pingKey(t.rest, a);
  routes = routesFor(t.app.features.flatMap((f) => f.services.map((s) => s.desc)));
});

const label = (r: Route) => `${r.verb} ${r.template}`;
const hasBody = (r: Route) => r.verb === "POST" || r.verb === "PATCH" || r.verb === "PUT";
const pathVars = (r: Route) => r.segments.flatMap((s) => ("variable" in s ? [s.variable] : []));

/** A path for the route; `encoded` values go in as given (already percent-encoded). */
function pathFor(route: Route, values: Record<string, string>, encoded = false): string {
  return (
    "/" +
    route.segments
      .map((s) =>
        "literal" in s
          ? s.literal
          : values[s.variable] !== undefined
            ? encoded
              ? values[s.variable]
              : encodeURIComponent(values[s.variable])
            : s.variable === "project_id"
              ? a.projectId
              : s.variable === "ping_key"
                ? ping.secret
                : "x1",
      )
      .join("/")
  );
}

/** JSON text with `INF` placeholders written as the number 1e400 (JSON.stringify cannot). */
const jsonText = (v: unknown) => JSON.stringify(v).replaceAll(`"${INF}"`, "1e400");

/** Hostile values for one field, by its declared type. */
function valuesFor(f: DescField): unknown[] {
  const strings = ["\u0000", "a\u0000b", "\ud800", ...PROTO_NAMES, "x".repeat(100_000)];
  const numbers = [INF, -1e308 * 10, 2 ** 64, -(2 ** 63) - 1, 1.5, -1, "12", "abc"];
  const junk = [null, true, [], {}, [[[]]], { __proto__: { polluted: 1 } }, JSON.parse('{"__proto__":{"polluted":1}}')];
  const structs = [
    { "\u0000": 1 },
    { k: "\u0000" },
    { k: INF },
    { constructor: { prototype: 1 }, __proto__: 1 },
    JSON.parse('{"__proto__":{"x":1},"toString":1}'),
  ];
  let base: unknown[];
  switch (f.fieldKind) {
    case "scalar":
      base = f.scalar === ScalarType.STRING ? strings : f.scalar === ScalarType.BOOL ? ["true", 1] : numbers;
      break;
    case "enum":
      base = [...PROTO_NAMES, 99];
      break;
    case "message":
      base =
        f.message.typeName === "google.protobuf.Struct" || f.message.typeName === "google.protobuf.Value"
          ? [...structs, ...strings.slice(0, 3), INF]
          : [...structs, { cursor: "\u0000" }, { limit: INF }];
      break;
    case "list":
      base =
        f.listKind === "scalar" && f.scalar === ScalarType.STRING
          ? strings.map((s) => [s])
          : [[INF], [{ k: "\u0000" }], structs, [PROTO_NAMES[0]]];
      break;
    case "map":
      base = structs;
      break;
  }
  return [...base, ...junk];
}

async function send(
  route: Route,
  path: string,
  raw: string | undefined,
  opts: { contentType?: string; cookie?: string; key?: string } = {},
): Promise<Res> {
  const r = await t.rest.req(route.verb, path, {
    raw,
    contentType: opts.contentType ?? (raw !== undefined ? "application/json" : undefined),
    cookie: opts.cookie ?? a.owner.cookie,
    key: opts.key,
  });
  seen.push(r);
  assert.ok(r.status < 500, `${label(route)} ${path} ${raw?.slice(0, 200) ?? ""}: answered ${r.status} ${r.text}`);
  if (r.status >= 400) errorBody(r);
  return r;
}

describe("security battery: hostile input on every route", () => {
  it("covers the routes the service registers", () => {
    assert.ok(routes.length >= 40, `only ${routes.length} routes`);
  });

  it("NUL and lone surrogates in any path variable are a 400 naming it; prototype names are a clean 4xx", async () => {
    for (const route of routes) {
      for (const v of pathVars(route)) {
        // NUL, and the UTF-8 bytes of a lone surrogate (not valid UTF-8 at all) and a bare 0xff.
        for (const bad of ["a%00", "%00", "%ED%A0%80x", "%FF"]) {
          const r = await send(route, pathFor(route, { [v]: bad }, true), hasBody(route) ? "{}" : undefined);
          if (bad.includes("%00")) {
            assert.equal(r.status, 400, `${label(route)} with ${JSON.stringify(bad)} in ${v}: ${r.status} ${r.text}`);
            assert.equal((errorBody(r).details as { field: string }[])[0].field, v);
          } else assert.ok(r.status === 400 || r.status === 404, `${label(route)} with ${bad} in ${v}: ${r.status}`); // not UTF-8: no such path
        }
        for (const name of PROTO_NAMES)
          await send(route, pathFor(route, { [v]: name }), hasBody(route) ? "{}" : undefined);
      }
    }
  });

  it("hostile query parameters on reading routes never cause a 5xx", async () => {
    for (const route of routes.filter((r) => r.verb === "GET")) {
      const vars = new Set(pathVars(route));
      for (const f of route.method.input.fields.filter((x) => !vars.has(x.name))) {
        for (const v of ["\u0000", "1e400", "-1", "99999999999999999999", ...PROTO_NAMES, "x".repeat(5000)]) {
          const r = await send(
            route,
            `${pathFor(route, {})}?${encodeURIComponent(f.jsonName)}=${encodeURIComponent(v)}`,
            undefined,
          );
          if (v === "\u0000") assert.equal(r.status, 400, `${label(route)} ?${f.jsonName}=NUL: ${r.status}`);
        }
      }
    }
  });

  it("hostile values in every body field, as a session and as an API key, never cause a 5xx", async () => {
    let sent = 0;
    for (const route of routes.filter(hasBody)) {
      const vars = new Set(pathVars(route));
      const fields = route.method.input.fields.filter((f) => !vars.has(f.name));
      for (const f of fields) {
        for (const v of valuesFor(f)) {
          const body = jsonText({ [f.jsonName]: v });
          await send(route, pathFor(route, {}), body);
          if (
            route.segments.some((s) => "variable" in s && s.variable === "project_id") ||
            route.template === "/v1/events" ||
            route.template === "/v1/events/batch"
          ) {
            await send(route, pathFor(route, {}), body, { key: a.key });
          }
          sent++;
        }
      }
      // The body itself of the wrong JSON type, and nested junk.
      for (const raw of ["[]", "null", "1e400", '"x"', "[".repeat(10_000), '{"a":'.repeat(5000), "{}".padEnd(3, " ")])
        await send(route, pathFor(route, {}), raw);
    }
    assert.ok(sent > 300, `only ${sent} hostile bodies`);
  });

  it('a body that is JSON but no object (null, [], 5, "x", true) is a 400 on every route that takes a body', async () => {
    // A session of its own: the owner's was signed out by POST /v1/auth/logout above.
    const { cookie } = await signup(t.rest, "bodies");
    for (const route of routes.filter((r) => hasBody(r) && r.body === "*")) {
      for (const raw of ["null", "[]", "5", '"x"', "true"]) {
        const r = await send(route, pathFor(route, {}), raw, { cookie });
        assert.equal(r.status, 400, `${label(route)} with body ${raw}: ${r.status} ${r.text}`);
        assert.deepEqual(
          errorBody(r),
          { code: "validation_failed", message: "request body must be a JSON object" },
          `${label(route)} with body ${raw}`,
        );
      }
    }
  });

  it("a session write with a non-JSON content type is a 415 on every write route", async () => {
    // A valid session (credentials are checked first): the owner's was signed out by POST /v1/auth/logout above.
    const { cookie } = await signup(t.rest, "media");
    for (const route of routes.filter(hasBody)) {
      for (const contentType of [
        "application/x-www-form-urlencoded",
        "text/plain",
        "multipart/form-data; boundary=x",
      ]) {
        const r = await send(route, pathFor(route, {}), "a=b", { contentType, cookie });
        assert.equal(r.status, 415, `${label(route)} as ${contentType}: ${r.status} ${r.text}`);
        assert.equal(errorBody(r).code, "unsupported_media_type");
      }
    }
  });

  it("never leaks a secret, a hash, SQL or a stack trace", () => {
    assert.ok(seen.length > 1000, `only ${seen.length} responses`);
    for (const r of seen) assertNoLeak(r.text, [a.key, a.owner.password]);
  });
});
