import assert from "node:assert/strict";
import http from "node:http";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { AnalyticsService } from "../../gen/vigil/v1/analytics_pb.js";
import { IdentityService } from "../../gen/vigil/v1/identity_pb.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";
import { ingest } from "../helpers/events.js";
import { useProject } from "../helpers/use.js";
import { loadVigil } from "../clients/grpc-js-util.js";

// POST /v1/projects/:id/events/export (AnalyticsService.ExportEvents, a stream of google.api.HttpBody)
// and GET .../users/:userId/export (IdentityService.ExportUser, the same kind of stream), over REST,
// Connect and gRPC (@grpc/grpc-js).

let other: ProjectFixture;
const { t, p } = useProject({}, {}, async () => {
  await ingest(t.rest, p.key, EVENTS);
  other = await project(t.rest);
  await ingest(t.rest, other.key, [{ type: "theirs", userId: "u1", timestamp: "2024-03-01T00:00:00Z" }]);
});

const TRICKY = 'a,b "quoted"\r\nnext line\nand ünïcode';
const EVENTS: { type: string; timestamp: string; userId?: string; data?: object; tags?: object }[] = [
  { type: "signup", userId: "u1", timestamp: "2024-03-01T10:00:00Z", data: { plan: "pro", note: TRICKY } },
  {
    type: "order.paid",
    userId: "u1",
    timestamp: "2024-03-02T10:00:00Z",
    data: { amount: 12.5, items: [1, 2], note: "first\r\nsecond" },
  },
  { type: "order.paid", userId: "u2", timestamp: "2024-03-03T10:00:00Z", data: { amount: 7 }, tags: { env: "prod" } },
  { type: "visit", timestamp: "2024-03-04T10:00:00Z", data: JSON.parse('{"__proto__":"p","constructor":"c"}') },
  { type: "order.paid", userId: "u1", timestamp: "2024-03-05T10:00:00Z", data: { amount: 1 } },
];

const path = () => `/v1/projects/${p.projectId}/events/export`;

/** Every event of events/query (newest first), as the event list writes them. */
async function queried(body: object): Promise<unknown[]> {
  const r = await t.rest.post(
    `/v1/projects/${p.projectId}/events/query`,
    { ...body, pagination: { limit: 100 } },
    { key: p.key },
  );
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

const ndjson = (text: string): { timestamp: string; type: string; userId: string | null }[] =>
  text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));

/** A minimal RFC 4180 reader (quoted fields, doubled quotes, CRLF records), independent of the writer. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    let cell = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        assert.ok(q >= 0, "unterminated quoted field");
        cell += text.slice(i, q);
        i = q + 1;
        if (text[i] === '"') {
          cell += '"';
          i++;
        } else break;
      }
    } else {
      const m = /^[^,\r\n"]*/.exec(text.slice(i))![0];
      cell = m;
      i += m.length;
    }
    row.push(cell);
    if (text[i] === ",") i++;
    else if (text.startsWith("\r\n", i)) {
      rows.push(row);
      row = [];
      i += 2;
    } else assert.fail(`unexpected character at ${i}: ${JSON.stringify(text.slice(i, i + 10))}`);
  }
  assert.equal(row.length, 0, "the last record ends with CRLF");
  return rows;
}

type HttpBodyChunk = { contentType: string; data: Buffer };

/** Every HttpBody chunk of a server stream read with @grpc/grpc-js, and its error if it ended in one. */
function readHttpBodyStream(
  client: grpc.Client,
  method: string,
  req: object,
  key: string,
): Promise<{ chunks: HttpBodyChunk[]; err?: grpc.ServiceError }> {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${key}`);
  return new Promise((resolve) => {
    const chunks: HttpBodyChunk[] = [];
    const call = (
      client as unknown as Record<string, (r: object, m: grpc.Metadata) => grpc.ClientReadableStream<never>>
    )[method](req, md);
    call.on("data", (c: HttpBodyChunk) => chunks.push(c));
    call.on("error", (err: grpc.ServiceError) => resolve({ chunks, err }));
    call.on("end", () => resolve({ chunks }));
  });
}

describe("events export over REST", () => {
  it("NDJSON: every event, oldest first, in the event list's shape", async () => {
    const r = await t.rest.post(path(), {}, { key: p.key });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get("content-type"), "application/x-ndjson");
    const lines = ndjson(r.text);
    assert.equal(lines.length, EVENTS.length);
    assert.deepEqual(lines, (await queried({})).reverse());
    assert.deepEqual(
      lines.map((e) => e.timestamp),
      EVENTS.map((e) => new Date(e.timestamp).toISOString()),
    );
  });

  it("the canonical filters and time window of events/query", async () => {
    const body = {
      filters: { field: "type", operator: "equals", value: "order.paid" },
      time: { start: "2024-03-02T00:00:00Z", end: "2024-03-04T00:00:00Z" },
    };
    const r = await t.rest.post(path(), body, { key: p.key });
    assert.equal(r.status, 200, r.text);
    const lines = ndjson(r.text);
    assert.deepEqual(
      lines.map((e) => [e.type, e.userId]),
      [
        ["order.paid", "u1"],
        ["order.paid", "u2"],
      ],
    );
    assert.deepEqual(lines, (await queried(body)).reverse());
    const none = await t.rest.post(
      path(),
      { filters: { field: "type", operator: "equals", value: "nope" } },
      { key: p.key },
    );
    assert.equal(none.status, 200);
    assert.equal(none.text, "");
  });

  it("CSV: header row, chosen columns, RFC 4180 quoting of commas, quotes and newlines", async () => {
    const columns = [
      "timestamp",
      "type",
      "userId",
      "data.note",
      "data.amount",
      "data.items",
      "tags.env",
      "data.__proto__",
    ];
    const r = await t.rest.post(path(), { format: "csv", columns }, { key: p.key });
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get("content-type") ?? "", /^text\/csv/);
    const rows = parseCsv(r.text);
    assert.deepEqual(rows[0], columns);
    assert.deepEqual(rows.slice(1), [
      ["2024-03-01T10:00:00.000Z", "signup", "u1", TRICKY, "", "", "", ""],
      ["2024-03-02T10:00:00.000Z", "order.paid", "u1", "first\r\nsecond", "12.5", "[1,2]", "", ""],
      ["2024-03-03T10:00:00.000Z", "order.paid", "u2", "", "7", "", "prod", ""],
      ["2024-03-04T10:00:00.000Z", "visit", "", "", "", "", "", "p"],
      ["2024-03-05T10:00:00.000Z", "order.paid", "u1", "", "1", "", "", ""],
    ]);
    assert.ok(r.text.includes(`"${TRICKY.replaceAll('"', '""')}"`), "the tricky cell is quoted with doubled quotes");
    assert.ok(r.text.includes('"first\r\nsecond"'), "a cell with only a line break is quoted");
  });

  it("CSV: the default columns", async () => {
    const r = await t.rest.post(path(), { format: "csv" }, { key: p.key });
    assert.equal(r.status, 200, r.text);
    const rows = parseCsv(r.text);
    assert.deepEqual(rows[0], ["id", "type", "timestamp", "userId", "groupId", "sourceId"]);
    assert.equal(rows.length, EVENTS.length + 1);
  });

  it("a bad format, bad columns or columns with ndjson are a 400 naming the field", async () => {
    const cases: [object, string][] = [
      [{ format: "xml" }, "format"],
      [{ format: "CSV" }, "format"],
      [{ format: 1 }, "format"],
      [{ format: "ndjson", columns: ["id"] }, "columns"],
      [{ columns: ["id"] }, "columns"],
      [{ format: "csv", columns: ["nope"] }, "columns.0"],
      [{ format: "csv", columns: ["id", "data."] }, "columns.1"],
      [{ format: "csv", columns: ["data.a b"] }, "columns.0"],
      [{ format: "csv", columns: ["constructor"] }, "columns.0"],
      [{ format: "csv", columns: ["id", "id"] }, "columns"],
      [{ format: "csv", columns: Array.from({ length: 101 }, (_, i) => `data.c${i}`) }, "columns"],
      [{ format: "csv", columns: "id" }, "columns"],
      [{ format: "csv", pagination: { limit: 1 } }, "pagination"],
      [{ filters: { field: "type", operator: "bogus", value: 1 } }, "filters"],
      [{ time: { start: "yesterday" } }, "time"],
    ];
    for (const [body, field] of cases) {
      const r = await t.rest.post(path(), body, { key: p.key });
      assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.status} ${r.text}`);
      assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
      const e = errorBody(r);
      const named = JSON.stringify(e.details ?? "") + e.message;
      assert.ok(named.includes(field), `${JSON.stringify(body).slice(0, 80)} should name ${field}: ${r.text}`);
    }
  });

  it("another tenant's project is a 404, a missing key 401, NUL in a filter 400", async () => {
    const r = await t.rest.post(`/v1/projects/${other.projectId}/events/export`, {}, { key: p.key });
    assert.equal(r.status, 404, r.text);
    assert.equal(errorBody(r).code, "not_found");
    assert.ok(!r.text.includes("theirs"));
    assert.equal((await t.rest.post(path(), {}, {})).status, 401);
    const nul = await t.rest.post(
      path(),
      { filters: { field: "type", operator: "equals", value: "a\u0000b" } },
      { key: p.key },
    );
    assert.equal(nul.status, 400, nul.text);
  });
});

describe("events export over Connect and gRPC", () => {
  const decode = (chunks: { contentType: string; data: Uint8Array }[]) =>
    Buffer.concat(chunks.map((c) => Buffer.from(c.data))).toString("utf8");

  for (const [name, transport] of [
    ["Connect", () => createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })],
    ["gRPC (connect-es)", () => createGrpcTransport({ baseUrl: t.url })],
  ] as const) {
    it(`${name}: the same NDJSON and CSV as REST; errors are codes`, async () => {
      const client = createClient(AnalyticsService, transport());
      const headers = { authorization: `Bearer ${p.key}` };
      const chunks = [];
      for await (const c of client.exportEvents({ projectId: p.projectId }, { headers })) chunks.push(c);
      assert.equal(chunks[0].contentType, "application/x-ndjson");
      const rest = await t.rest.post(path(), {}, { key: p.key });
      assert.equal(decode(chunks), rest.text);
      const csv = [];
      for await (const c of client.exportEvents({ projectId: p.projectId, format: "csv" }, { headers })) csv.push(c);
      assert.match(csv[0].contentType, /^text\/csv/);
      assert.equal(decode(csv), (await t.rest.post(path(), { format: "csv" }, { key: p.key })).text);
      const fail = async (req: object) => {
        try {
          for await (const _ of client.exportEvents(req, { headers })) void _;
        } catch (e) {
          return ConnectError.from(e as Error);
        }
        assert.fail("expected an error");
      };
      assert.equal((await fail({ projectId: p.projectId, format: "xml" })).code, Code.InvalidArgument);
      assert.equal((await fail({ projectId: other.projectId })).code, Code.NotFound);
    });
  }

  it("@grpc/grpc-js: a server stream of HttpBody chunks", async () => {
    const Analytics = loadVigil().AnalyticsService;
    const client = new Analytics(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure());
    try {
      const read = (req: object) => readHttpBodyStream(client, "exportEvents", req, p.key);
      const ok = await read({ projectId: p.projectId, format: "csv", columns: ["type", "data.note"] });
      assert.equal(ok.err, undefined);
      assert.match(ok.chunks[0].contentType, /^text\/csv/);
      const rows = parseCsv(Buffer.concat(ok.chunks.map((c) => c.data)).toString("utf8"));
      assert.deepEqual(rows[1], ["signup", TRICKY]);
      assert.equal(rows.length, EVENTS.length + 1);
      const bad = await read({ projectId: p.projectId, format: "csv", columns: ["__proto__"] });
      assert.equal(bad.err?.code, grpc.status.INVALID_ARGUMENT);
      const theirs = await read({ projectId: other.projectId });
      assert.equal(theirs.err?.code, grpc.status.NOT_FOUND);
    } finally {
      client.close();
    }
  });
});

describe("a big export", () => {
  it("streams in chunks; a client that stops reading mid-stream does not hang the server", async () => {
    const big = await project(t.rest);
    const pad = "x".repeat(2000);
    await ingest(
      t.rest,
      big.key,
      Array.from({ length: 6000 }, (_, i) => ({
        type: "bulk",
        timestamp: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(),
        data: { i, pad },
      })),
    );
    // A reader that takes the headers and a little of the body, then stops reading and leaves.
    const url = new URL(`/v1/projects/${big.projectId}/events/export`, t.url);
    const got = await new Promise<number>((resolve, reject) => {
      const req = http.request(url, {
        method: "POST",
        headers: { authorization: `Bearer ${big.key}`, "content-type": "application/json" },
      });
      req.on("response", (res) => {
        assert.equal(res.statusCode, 200);
        let n = 0;
        res.on("data", (c: Buffer) => {
          n += c.length;
          if (n > 64 * 1024) {
            res.pause();
            // Stall a while (the server must wait on backpressure, not buffer the whole export), then go.
            setTimeout(() => {
              req.destroy();
              resolve(n);
            }, 300);
          }
        });
        res.on("error", () => undefined);
      });
      req.on("error", (e) =>
        e.message.includes("aborted") || e.message.includes("socket hang up") ? undefined : reject(e),
      );
      req.end("{}");
    });
    assert.ok(got > 0);
    // The server goes on answering, the whole export still works, and its query is not left running.
    const full = await t.rest.post(
      `/v1/projects/${big.projectId}/events/export`,
      { format: "csv", columns: ["data.i"] },
      { key: big.key },
    );
    assert.equal(full.status, 200);
    const rows = parseCsv(full.text);
    assert.equal(rows.length, 6001);
    assert.deepEqual(
      rows.slice(1).map((r) => Number(r[0])),
      Array.from({ length: 6000 }, (_, i) => i),
    );
    const deadline = Date.now() + 5000;
    for (;;) {
      const r = await t.rest.post(`/v1/projects/${p.projectId}/events/export`, {}, { key: p.key });
      assert.equal(r.status, 200);
      const pg = await import("pg");
      const c = new pg.default.Client({ connectionString: t.databaseUrl });
      await c.connect();
      const active = await c.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%ORDER BY e.ts ASC, e.id ASC%' AND pid <> pg_backend_pid()",
      );
      await c.end();
      if (active.rows[0].n === 0) break;
      assert.ok(Date.now() < deadline, "an export query is still running after its client left");
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});

const userPath = (projectId: string, id: string) => `/v1/projects/${projectId}/users/${encodeURIComponent(id)}/export`;

describe("user export", () => {
  it("NDJSON: the user record on the first line, then all their events, oldest first, in the event list's shape", async () => {
    const r = await t.rest.get(userPath(p.projectId, "u1"), { key: p.key });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get("content-type"), "application/x-ndjson");
    assert.ok(r.text.endsWith("\n"));
    const [user, ...events] = r.text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l));
    const record = await t.rest.get(`/v1/projects/${p.projectId}/users/u1`, { key: p.key });
    assert.deepEqual(user, record.body.data);
    assert.equal(user.externalId, "u1");
    assert.equal(user.eventCount, 3);
    const list = (await queried({ filters: { field: "userId", operator: "equals", value: "u1" } })).reverse();
    assert.deepEqual(
      events.map((e: { type: string }) => e.type),
      ["signup", "order.paid", "order.paid"],
    );
    assert.deepEqual(events, list);
    // By the user record's id too.
    const byId = await t.rest.get(userPath(p.projectId, user.id), { key: p.key });
    assert.equal(byId.text, r.text);
  });

  it("a user without events: the record alone", async () => {
    const made = await t.rest.post(
      `/v1/projects/${p.projectId}/identify`,
      { externalId: "quiet", properties: { plan: "free" } },
      { cookie: p.owner.cookie },
    );
    assert.equal(made.status, 200, made.text);
    const r = await t.rest.get(userPath(p.projectId, "quiet"), { key: p.key });
    assert.equal(r.status, 200, r.text);
    const lines = r.text.split("\n").filter((l) => l !== "");
    assert.equal(lines.length, 1);
    assert.equal(JSON.parse(lines[0]).externalId, "quiet");
  });

  it("an unknown user, another tenant's user and hostile ids are a JSON 404", async () => {
    for (const id of ["nobody", "__proto__", "constructor", "x".repeat(300)]) {
      const r = await t.rest.get(userPath(p.projectId, id), { key: p.key });
      assert.equal(r.status, 404, `${id.slice(0, 20)}: ${r.text}`);
      assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
      assert.equal(errorBody(r).code, "not_found");
    }
    const theirs = await t.rest.get(userPath(other.projectId, "u1"), { key: p.key });
    assert.equal(theirs.status, 404);
    assert.ok(!theirs.text.includes("theirs"));
    assert.equal((await t.rest.get(userPath(p.projectId, "u1"), {})).status, 401);
  });

  for (const [name, transport] of [
    ["Connect", () => createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })],
    ["gRPC (connect-es)", () => createGrpcTransport({ baseUrl: t.url })],
  ] as const) {
    it(`${name}: a stream of HttpBody chunks, the same bytes as REST; an unknown user is NOT_FOUND`, async () => {
      const client = createClient(IdentityService, transport());
      const headers = { authorization: `Bearer ${p.key}` };
      const chunks = [];
      for await (const c of client.exportUser({ projectId: p.projectId, userId: "u1" }, { headers })) chunks.push(c);
      assert.equal(chunks[0].contentType, "application/x-ndjson");
      const text = Buffer.concat(chunks.map((c) => Buffer.from(c.data))).toString("utf8");
      assert.equal(text, (await t.rest.get(userPath(p.projectId, "u1"), { key: p.key })).text);
      try {
        for await (const _ of client.exportUser({ projectId: p.projectId, userId: "nobody" }, { headers })) void _;
        assert.fail("expected an error");
      } catch (e) {
        assert.equal(ConnectError.from(e as Error).code, Code.NotFound);
      }
    });
  }

  it("@grpc/grpc-js: a server stream of HttpBody chunks", async () => {
    const Identity = loadVigil().IdentityService;
    const client = new Identity(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure());
    try {
      const read = (req: object) => readHttpBodyStream(client, "exportUser", req, p.key);
      const ok = await read({ projectId: p.projectId, userId: "u1" });
      assert.equal(ok.err, undefined);
      assert.equal(ok.chunks[0].contentType, "application/x-ndjson");
      const lines = ndjson(Buffer.concat(ok.chunks.map((c) => c.data)).toString("utf8"));
      assert.deepEqual(
        lines.map((l) => l.type ?? "user"),
        ["user", "signup", "order.paid", "order.paid"],
      );
      const theirs = await read({ projectId: other.projectId, userId: "u1" });
      assert.equal(theirs.err?.code, grpc.status.NOT_FOUND);
    } finally {
      client.close();
    }
  });

  it("streams: the first line arrives while the export is still being read (an event sent after it is in it)", async () => {
    const big = await project(t.rest);
    const pad = "x".repeat(3000);
    const start = Date.UTC(2024, 0, 1);
    const N = 10_000;
    // Within one hour (0.3 s apart): the late event below falls in an hour the user already has.
    await ingest(
      t.rest,
      big.key,
      Array.from({ length: N }, (_, i) => ({
        type: "bulk",
        userId: "heavy",
        timestamp: new Date(start + i * 300).toISOString(),
        data: { i, pad },
      })),
    );
    const url = new URL(userPath(big.projectId, "heavy"), t.url);
    const text = await new Promise<string>((resolve, reject) => {
      const req = http.request(url, { headers: { authorization: `Bearer ${big.key}` } });
      req.on("response", (res) => {
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers["content-type"], "application/x-ndjson");
        const parts: Buffer[] = [];
        let sentLate = false;
        res.on("data", (c: Buffer) => {
          parts.push(c);
          if (sentLate || !Buffer.concat(parts).includes(0x0a)) return;
          sentLate = true;
          // The first line (the record) is here: stop reading, send one more event of this user, later
          // than all the others, then read on. A built answer was read before its first byte went out,
          // so it cannot hold that event; a streamed one reads its batches as the client takes them.
          res.pause();
          const first = JSON.parse(Buffer.concat(parts).toString("utf8").split("\n")[0]);
          assert.equal(first.externalId, "heavy");
          assert.equal(first.eventCount, N);
          t.rest
            .post(
              "/v1/events",
              { type: "late", userId: "heavy", timestamp: new Date(start + 55 * 60_000).toISOString() },
              { key: big.key },
            )
            .then((r) => {
              assert.equal(r.status, 202, r.text);
              res.resume();
            }, reject);
        });
        res.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    });
    const lines = text.split("\n").filter((l) => l !== "");
    assert.equal(lines.length, 1 + N + 1);
    const events = lines.slice(1).map((l) => JSON.parse(l));
    assert.deepEqual(
      events.slice(0, N).map((e) => e.data.i),
      Array.from({ length: N }, (_, i) => i),
    );
    assert.equal(events[N].type, "late", "the event sent after the first line is the last line");
  });
});

describe("REST streaming of HttpBody (streamBody)", () => {
  it("pulls the next chunk only once the socket drains, and closes the stream when the client leaves", async () => {
    const { streamBody } = await import("../../src/transcoding/rest.js");
    let pulled = 0;
    let finished = false;
    let served: Promise<unknown> = Promise.resolve();
    async function* chunks() {
      try {
        for (; pulled < 200;) {
          pulled++;
          yield { contentType: "application/x-ndjson", data: Buffer.alloc(1024 * 1024, 0x61) };
        }
      } finally {
        finished = true;
      }
    }
    const server = http.createServer((_req, res) => {
      served = streamBody(res, chunks()).catch((e: unknown) => e);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const port = (server.address() as { port: number }).port;
      await new Promise<void>((resolve, reject) => {
        const req = http.request({ port, host: "127.0.0.1", method: "GET" });
        req.on("response", (res) => {
          assert.equal(res.headers["content-type"], "application/x-ndjson");
          let n = 0;
          res.on("data", (c: Buffer) => {
            n += c.length;
            if (n > 64 * 1024 && !res.isPaused()) {
              res.pause();
              setTimeout(() => {
                // Backpressure: a paused reader holds the stream to what the socket buffers can take.
                assert.ok(pulled < 40, `${pulled} chunks pulled for a reader that stopped after 64 KB`);
                req.destroy();
                resolve();
              }, 500);
            }
          });
          res.on("error", () => undefined);
        });
        req.on("error", (e) => (/aborted|hang up/.test(e.message) ? undefined : reject(e)));
        req.end();
      });
      const deadline = Date.now() + 3000;
      while (!finished && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.ok(finished, "the handler's stream was not closed after its client left");
      await served;
      assert.ok(pulled < 40, `${pulled} chunks pulled`);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
