// The request edge, over REST, Connect, gRPC-web and gRPC: credentials before the body, the
// cross-site rules, refusals of undecodable or unstorable input, and the body limit.
import assert from "node:assert/strict";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { describe, it } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { IngestEventRequestSchema } from "../../gen/vigil/v1/events_pb.js";
import { ProjectService } from "../../gen/vigil/v1/projects_pb.js";
import { errorBody } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

const { t, p } = useProject({ MAX_BODY_BYTES: String(64 * 1024) });

/** Sends only the headers of a request that declares a large body, and returns the status it gets. */
function headersOnly(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      t.url + path,
      {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(60 * 1024), ...headers },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.setTimeout(5000, () => req.destroy(new Error("no answer before the body was complete: the body was awaited")));
    req.write("{"); // the body never completes: only an answer given before reading it can arrive
    req.flushHeaders();
  });
}

/** One gRPC call over HTTP/2 with a hand-made body; resolves with the grpc-status it ends with. */
function grpcRaw(
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
  end = true,
): Promise<{ status: string | undefined; message: string | undefined }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(t.url);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${p.key}`,
      ...headers,
    });
    let status: string | undefined;
    let message: string | undefined;
    // Resolve on the status itself: with the request side still open, the stream may never close.
    const done = () => {
      session.destroy();
      resolve({ status, message });
    };
    stream.on("response", (h) => {
      if (h["grpc-status"] !== undefined) {
        ({ "grpc-status": status, "grpc-message": message } = h as Record<string, string>);
        done();
      }
    });
    stream.on("trailers", (h) => {
      ({ "grpc-status": status, "grpc-message": message } = h as Record<string, string>);
      done();
    });
    stream.on("data", () => undefined);
    stream.on("close", done);
    stream.on("error", reject);
    stream.setTimeout(5000, () => stream.destroy(new Error("no answer within 5 s")));
    if (end) stream.end(body);
    else stream.write(body);
  });
}

const frame = (msg: Uint8Array, flags = 0) => {
  const b = Buffer.alloc(5 + msg.length);
  b[0] = flags;
  b.writeUInt32BE(msg.length, 1);
  Buffer.from(msg).copy(b, 5);
  return b;
};

/** An IngestEventRequest whose data nests `depth` objects deep. */
function deepEvent(depth: number): Uint8Array {
  let data: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < depth; i++) data = { d: data };
  return toBinary(IngestEventRequestSchema, create(IngestEventRequestSchema, { type: "deep", data: data as never }));
}

describe("credentials are checked before the body is read", () => {
  it("REST: a write without credentials, or with unknown ones, is refused while its body is still arriving", async () => {
    for (const headers of [
      {},
      { authorization: "Bearer vk_" + "0".repeat(40) },
      { cookie: "vigil_session=forged.sig" },
    ] as Record<string, string>[]) {
      const r = await headersOnly("/v1/events", headers);
      assert.equal(r.status, 401, r.body);
      assert.equal(JSON.parse(r.body).error.code, "unauthenticated");
    }
  });

  it("Connect: the same, before the message is read", async () => {
    const r = await headersOnly("/vigil.v1.EventService/IngestEvent", {
      "connect-protocol-version": "1",
      authorization: "Bearer vk_" + "1".repeat(40),
    });
    assert.equal(r.status, 401, r.body);
    assert.equal(JSON.parse(r.body).code, "unauthenticated");
  });

  it("gRPC: UNAUTHENTICATED while the request stream is still open", async () => {
    const r = await grpcRaw(
      "/vigil.v1.EventService/IngestEvent",
      frame(new Uint8Array(10)).subarray(0, 8),
      { authorization: "Bearer vk_" + "2".repeat(40) },
      false,
    );
    assert.equal(r.status, String(Code.Unauthenticated));
  });

  it("public routes (sign-up, login, health) still answer without credentials", async () => {
    assert.equal((await t.rest.get("/health")).status, 200);
    const r = await t.rest.post("/v1/auth/login", { email: "nobody@example.com", password: "wrong password" });
    assert.equal(r.status, 401);
    assert.equal(errorBody(r).code, "invalid_credentials");
  });
});

describe("cross-site request forgery", () => {
  it("a cookie write that is not JSON is a 415, also with an empty body", async () => {
    for (const contentType of ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"]) {
      const r = await t.rest.req("POST", `/v1/projects/${p.projectId}/members`, {
        raw: "",
        contentType,
        cookie: p.owner.cookie,
      });
      assert.equal(r.status, 415, `${contentType}: ${r.text}`);
      assert.equal(errorBody(r).code, "unsupported_media_type");
    }
    const none = await t.rest.req("POST", `/v1/projects/${p.projectId}/api-keys`, { raw: "", cookie: p.owner.cookie });
    assert.equal(none.status, 415, none.text);
  });

  it("query parameters never fill body fields (members, keys, webhooks, login)", async () => {
    const cases: [string, string][] = [
      [`/v1/projects/${p.projectId}/members?email=m@example.com&role=admin`, p.owner.cookie],
      [`/v1/projects/${p.projectId}/api-keys?name=x&environment=production`, p.owner.cookie],
      [`/v1/projects/${p.projectId}/webhooks?name=x&url=https://example.com&events=a`, p.owner.cookie],
    ];
    for (const [path, cookie] of cases) {
      const r = await t.rest.req("POST", path, { body: {}, cookie });
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.equal(errorBody(r).code, "validation_failed");
    }
    const login = await t.rest.post(
      `/v1/auth/login?email=${encodeURIComponent(p.owner.email)}&password=${encodeURIComponent(p.owner.password)}`,
      {},
    );
    assert.equal(login.status, 400, login.text);
    assert.equal(login.headers.getSetCookie().length, 0);
    const members = await t.rest.get(`/v1/projects/${p.projectId}/members`, { cookie: p.owner.cookie });
    assert.equal(members.body.data.length, 1, "no member was added");
  });

  it("refuses cookie writes that a browser marks cross-site, and sign-in from another origin", async () => {
    const cross: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      { origin: "https://evil.example" },
      { origin: "null" },
    ];
    for (const headers of cross) {
      const r = await t.rest.req("POST", `/v1/projects/${p.projectId}/api-keys`, {
        body: { name: "x", environment: "production" },
        cookie: p.owner.cookie,
        headers,
      });
      assert.equal(r.status, 403, `${JSON.stringify(headers)}: ${r.text}`);
      assert.equal(errorBody(r).code, "forbidden");
      const del = await t.rest.req("DELETE", `/v1/projects/${p.projectId}`, { cookie: p.owner.cookie, headers });
      assert.equal(del.status, 403, del.text);
      const login = await t.rest.post(
        "/v1/auth/login",
        { email: p.owner.email, password: p.owner.password },
        { headers },
      );
      assert.equal(login.status, 403, login.text);
    }
    const same = new URL(t.url).host;
    for (const headers of [{ "sec-fetch-site": "same-origin" }, { origin: `http://${same}` }, {}] as Record<
      string,
      string
    >[]) {
      const r = await t.rest.req("POST", `/v1/projects/${p.projectId}/api-keys`, {
        body: { name: "x", environment: "production" },
        cookie: p.owner.cookie,
        headers,
      });
      assert.equal(r.status, 201, `${JSON.stringify(headers)}: ${r.text}`);
    }
  });

  it("API-key requests are not cookie-borne: an Origin does not stop them", async () => {
    const r = await t.rest.post(
      "/v1/events",
      { type: "from-a-page" },
      { key: p.key, headers: { origin: "https://shop.example", "sec-fetch-site": "cross-site" } },
    );
    assert.equal(r.status, 202, r.text);
  });

  it("Connect cookie writes from another site are refused too", async () => {
    const r = await fetch(`${t.url}/vigil.v1.ProjectService/CreateProject`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "connect-protocol-version": "1",
        cookie: p.owner.cookie,
        origin: "https://evil.example",
      },
      body: JSON.stringify({ name: "x", platform: "node" }),
    });
    assert.equal(r.status, 403);
    assert.equal(((await r.json()) as { code: string }).code, "permission_denied");
  });
});

describe("input that cannot be decoded or stored", () => {
  it("REST: invalid UTF-8 in a body is a 400, not replaced and stored", async () => {
    const raw = Buffer.concat([
      Buffer.from('{"type":"utf8","data":{"s":"'),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from('"}}'),
    ]);
    const r = await t.rest.req("POST", "/v1/events", { raw, contentType: "application/json", key: p.key });
    assert.equal(r.status, 400, r.text);
    assert.equal(errorBody(r).code, "invalid_json");
  });

  it("REST: NUL in path ids, query parameters and body strings is a 400 naming the field", async () => {
    const cases: [string, string, unknown, string][] = [
      ["GET", `/v1/projects/${p.projectId}/monitors/a%00b`, undefined, "monitor_id"],
      ["GET", `/v1/projects/x%00/events`, undefined, "project_id"],
      ["GET", `/v1/projects/${p.projectId}/events?type=a%00`, undefined, "type"],
      ["GET", `/v1/projects/${p.projectId}/events?search=%00`, undefined, "search"],
      ["PATCH", `/v1/projects/${p.projectId}`, { name: "a\u0000b" }, "name"],
      ["POST", `/v1/projects/${p.projectId}/api-keys`, { name: "k\u0000", environment: "production" }, "name"],
      [
        "POST",
        `/v1/projects/${p.projectId}/webhooks`,
        { name: "w", url: "https://example.com/\u0000", events: ["a"] },
        "url",
      ],
      [
        "POST",
        `/v1/projects/${p.projectId}/webhooks`,
        { name: "w", url: "https://example.com/", events: ["a\u0000"] },
        "events[0]",
      ],
      [
        "POST",
        `/v1/projects/${p.projectId}/analytics/count`,
        { filters: { and: [{ field: "type", operator: "equals", value: "a\u0000" }] } },
        "filters",
      ],
      ["POST", `/v1/projects/${p.projectId}/events/query`, { pagination: { cursor: "\u0000" } }, "pagination.cursor"],
      ["POST", "/v1/events", { type: "x", data: { k: "a\ud800" } }, "data.k"],
    ];
    for (const [verb, path, body, field] of cases) {
      const r = await t.rest.req(verb, path, { body, cookie: p.owner.cookie });
      assert.equal(r.status, 400, `${verb} ${path}: ${r.text}`);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed", r.text);
      const named = (e.details as { field: string }[])[0].field;
      assert.ok(named === field || named.startsWith(field), `${verb} ${path}: named ${named}, expected ${field}`);
    }
  });

  it("Connect and gRPC-web: NUL and non-finite numbers are INVALID_ARGUMENT", async () => {
    for (const transport of [
      createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
      createGrpcWebTransport({ baseUrl: t.url, httpVersion: "1.1" }),
    ]) {
      const client = createClient(ProjectService, transport);
      await assert.rejects(
        client.createProject({ name: "a\u0000", platform: "node" }, { headers: { cookie: p.owner.cookie } }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument && /name/.test(e.rawMessage),
      );
    }
  });

  it("Connect binary: garbage, truncated, invalid UTF-8 and 65+ levels of nesting are 400 invalid_argument", async () => {
    const good = toBinary(IngestEventRequestSchema, create(IngestEventRequestSchema, { type: "ok" }));
    const badUtf8 = Buffer.from(good);
    badUtf8[badUtf8.length - 1] = 0xff; // inside the string "ok"
    for (const [label, body] of [
      ["garbage", Buffer.from("\xff\xff\xff\xff\xff\xffgarbage", "latin1")],
      ["truncated", Buffer.from(good).subarray(0, good.length - 1)],
      ["invalid UTF-8", badUtf8],
      ["70 levels", Buffer.from(deepEvent(70))],
    ] as const) {
      const r = await fetch(`${t.url}/vigil.v1.EventService/IngestEvent`, {
        method: "POST",
        headers: {
          "content-type": "application/proto",
          "connect-protocol-version": "1",
          authorization: `Bearer ${p.key}`,
        },
        body,
      });
      const text = await r.text();
      assert.equal(r.status, 400, `${label}: ${r.status} ${text}`);
      assert.equal(JSON.parse(text).code, "invalid_argument", label);
    }
  });

  it("gRPC: the same bodies end with status INVALID_ARGUMENT, never INTERNAL", async () => {
    const good = toBinary(IngestEventRequestSchema, create(IngestEventRequestSchema, { type: "ok" }));
    const badUtf8 = Buffer.from(good);
    badUtf8[badUtf8.length - 1] = 0xff;
    const bodies: [string, Buffer][] = [
      ["garbage message", frame(Buffer.from("\xff\xff\xff\xff\xff\xff", "latin1"))],
      ["truncated frame", frame(good).subarray(0, 7)],
      ["frame longer than the body", Buffer.concat([Buffer.from([0, 0, 0, 1, 0]), Buffer.from(good)])],
      ["invalid UTF-8", frame(badUtf8)],
      ["70 levels", frame(deepEvent(70))],
      ["compressed flag, garbage", frame(Buffer.from("not gzip"), 1)],
    ];
    for (const [label, body] of bodies) {
      const r = await grpcRaw(
        "/vigil.v1.EventService/IngestEvent",
        body,
        label.startsWith("compressed") ? { "grpc-encoding": "gzip" } : {},
      );
      assert.equal(r.status, String(Code.InvalidArgument), `${label}: ${r.status} ${r.message}`);
    }
    const ok = await grpcRaw("/vigil.v1.EventService/IngestEvent", frame(good));
    assert.equal(ok.status, "0", ok.message);
  });

  it("gRPC through a real client: NUL is INVALID_ARGUMENT naming the field", async () => {
    // (A lone surrogate cannot travel in protobuf: the client encodes it as U+FFFD.)
    const client = createClient(ProjectService, createGrpcTransport({ baseUrl: t.url }));
    for (const name of ["a\u0000", "\u0000"]) {
      await assert.rejects(
        client.createProject({ name, platform: "node" }, { headers: { cookie: p.owner.cookie } }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument && /'name'/.test(e.rawMessage),
      );
    }
  });
});

describe("the body limit", () => {
  it("is a 413 over REST and Connect, RESOURCE_EXHAUSTED over gRPC", async () => {
    const big = JSON.stringify({ type: "big", data: { s: "x".repeat(70 * 1024) } });
    const rest = await t.rest.req("POST", "/v1/events", { raw: big, contentType: "application/json", key: p.key });
    assert.equal(rest.status, 413, rest.text);
    assert.equal(errorBody(rest).code, "payload_too_large");
    const connect = await fetch(`${t.url}/vigil.v1.EventService/IngestEvent`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "connect-protocol-version": "1",
        authorization: `Bearer ${p.key}`,
      },
      body: big,
    });
    assert.equal(connect.status, 413);
    assert.equal(((await connect.json()) as { code: string }).code, "resource_exhausted");
    const grpc = await grpcRaw("/vigil.v1.EventService/IngestEvent", frame(Buffer.alloc(70 * 1024)));
    assert.equal(grpc.status, String(Code.ResourceExhausted));
  });

  it("is a 413 for a chunked body (no content-length) over HTTP/1.1: answered, not a dropped connection", async () => {
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port: t.port,
          method: "POST",
          path: "/v1/events",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${p.key}`,
            "transfer-encoding": "chunked",
          },
          timeout: 10_000,
        },
        (res) => {
          let body = "";
          res.on("data", (c) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("timeout", () => req.destroy(new Error("no answer within 10 s")));
      req.on("error", reject);
      const chunk = "x".repeat(16 * 1024);
      req.write('{"type":"big","data":{"s":"');
      for (let i = 0; i < 6; i++) req.write(chunk);
      req.end('"}}');
    });
    assert.equal(r.status, 413, r.body);
    assert.equal(JSON.parse(r.body).error.code, "payload_too_large");
  });

  it("the service still answers after all of the above", async () => {
    const r = await t.rest.post("/v1/events", { type: "after" }, { key: p.key });
    assert.equal(r.status, 202, r.text);
    const s = net.connect(t.port, "127.0.0.1");
    await new Promise((resolve) => s.once("connect", resolve));
    s.destroy();
  });
});
