// The public reading side of status pages over the real port (decisions.md: Status pages): the
// JSON's exact shape, the same page over REST, Connect and @grpc/grpc-js, a monitor going down and
// up, incidents with their updates, nothing of the project leaking into any public answer, 404s for
// unknown and unpublished slugs, the snapshot cache (one build per interval whatever the readers),
// ETag/304, gzip, the per-address rate limit, hostile slugs, and the HTML, badges and feed.
import assert from "node:assert/strict";
import http from "node:http";
import { gunzipSync } from "node:zlib";
import { after, describe, it } from "node:test";
import { equals, fromJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { GetStatusPageResponseSchema, StatusService } from "../../gen/vigil/v1/status_pb.js";
import { GENEROUS_LIMITS, metricOf, startTestApp, type TestApp } from "../helpers/app.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { grpcError, loadVigil, unary } from "../clients/grpc-js-util.js";
import { sleep, waitFor } from "../uptime/util.js";

const REFRESH_MS = 200;
const { t, p } = useProject({ ...GENEROUS_LIMITS, STATUS_PAGE_REFRESH_MS: String(REFRESH_MS) });
const others: TestApp[] = [];
const grpcClients: grpc.Client[] = [];
after(async () => {
  for (const c of grpcClients) c.close();
  for (const a of others) await a.close();
});

// Values that must never appear in a public answer.
const META = "meta-value-7f3a";
const TAG = "tag-value-c91e";
const HB_META = "heartbeat-content-55d0";

interface Mon {
  id: string;
  slug: string;
}

async function monitor(app: TestApp, f: ProjectFixture, name: string, slug: string): Promise<Mon> {
  const r = await app.rest.post(
    `/v1/projects/${f.projectId}/monitors`,
    { name, slug, expectedIntervalMs: 3_600_000, gracePeriodMs: 0, metadata: { owner: META }, tags: { team: TAG } },
    { key: f.key },
  );
  assert.equal(r.status, 201, r.text);
  return { id: r.body.data.id, slug };
}

async function heartbeat(app: TestApp, f: ProjectFixture, slug: string, status: "up" | "down" = "up") {
  const r = await app.rest.post(
    `/v1/projects/${f.projectId}/heartbeats/${slug}`,
    { status, metadata: { note: HB_META } },
    { key: f.key },
  );
  assert.equal(r.status, 200, r.text);
}

interface PageInput {
  slug: string;
  title: string;
  description?: string;
  published?: boolean;
  monitors: { monitorId: string; name?: string; section?: string }[];
}

/** A page of the project, made by its owner over the management routes (PageService). */
async function page(app: TestApp, f: ProjectFixture, input: PageInput): Promise<string> {
  const r = await app.rest.post(
    `/v1/projects/${f.projectId}/pages`,
    { published: true, ...input },
    { cookie: f.owner.cookie },
  );
  assert.equal(r.status, 201, r.text);
  return r.body.data.id;
}

async function setPublished(pageId: string, published: boolean) {
  const r = await t.rest.patch(
    `/v1/projects/${p.projectId}/pages/${pageId}`,
    { published },
    { cookie: p.owner.cookie },
  );
  assert.equal(r.status, 200, r.text);
}

async function incidentUpdate(app: TestApp, f: ProjectFixture, incidentId: string, message: string) {
  const r = await app.rest.post(
    `/v1/projects/${f.projectId}/incidents/${incidentId}/updates`,
    { message },
    { key: f.key },
  );
  assert.equal(r.status, 201, r.text);
}

/** A GET over node:http: the path goes as written (fetch would resolve `..`) and nothing is decompressed. */
function raw(
  url: string,
  path: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer; text: string; json: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const body = Buffer.concat(chunks);
        const text = body.toString();
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text, json });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

const builds = async (app: TestApp) =>
  (await metricOf(app.app, "vigil_status_page_builds_total").get()).values.reduce((n, v) => n + v.value, 0);

const today = () => new Date().toISOString().slice(0, 10);

const keysOf = (o: object) => Object.keys(o).sort();

describe("GET /v1/status/:slug", () => {
  it("answers exactly decisions.md's shape: 90 days per monitor, incidents with updates", async () => {
    const api = await monitor(t, p, "svc-api-internal", "svc-api-hidden");
    const web = await monitor(t, p, "Website", "svc-web-hidden");
    await heartbeat(t, p, api.slug);
    await heartbeat(t, p, web.slug);
    await heartbeat(t, p, web.slug, "down");
    const incidents = (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${web.id}/incidents`, { key: p.key }))
      .body.data;
    assert.equal(incidents.length, 1);
    await incidentUpdate(t, p, incidents[0].id, "Investigating");
    await incidentUpdate(t, p, incidents[0].id, "Fix deployed");
    await page(t, p, {
      slug: "acme-shape",
      title: "Acme",
      description: "Acme's services",
      monitors: [{ monitorId: api.id, name: "API", section: "Core" }, { monitorId: web.id }],
    });

    const r = await t.rest.get("/v1/status/acme-shape");
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(keysOf(r.body), ["data"]);
    const d = r.body.data;
    assert.deepEqual(keysOf(d), ["description", "incidents", "maintenances", "monitors", "status", "title"]);
    assert.deepEqual(d.maintenances, { active: [], upcoming: [] }, "no maintenance window (docs/uptime.md)");
    assert.equal(d.title, "Acme");
    assert.equal(d.description, "Acme's services");
    assert.equal(d.status, "degraded", "one up, one down");
    assert.equal(d.monitors.length, 2);
    for (const m of d.monitors) {
      assert.deepEqual(keysOf(m), ["days", "name", "section", "status", "uptimePercentage24h"]);
      assert.equal(m.days.length, 90);
      for (const day of m.days) {
        assert.deepEqual(keysOf(day), ["date", "downtimeMs", "status", "uptimePercentage"]);
        assert.match(day.date, /^\d{4}-\d{2}-\d{2}$/);
        assert.equal(typeof day.downtimeMs, "number");
      }
      for (let k = 1; k < 90; k++) assert.ok(m.days[k - 1].date < m.days[k].date, "oldest first");
      assert.equal(m.days[89].date, today(), "the last day is today (UTC)");
      assert.equal(m.days[0].status, "unknown", "before the monitor existed");
      assert.equal(m.days[0].uptimePercentage, null);
    }
    const [a, w] = d.monitors;
    assert.deepEqual([a.name, a.section, a.status], ["API", "Core", "up"]);
    assert.equal(a.uptimePercentage24h, 100);
    assert.equal(a.days[89].status, "up");
    assert.deepEqual([w.name, w.section, w.status], ["Website", null, "down"]);
    assert.equal(w.days[89].status, "down");
    assert.ok(w.days[89].downtimeMs >= 0);
    assert.ok(w.uptimePercentage24h <= 100);

    assert.equal(d.incidents.length, 1);
    const i = d.incidents[0];
    assert.deepEqual(keysOf(i), [
      "description",
      "endedAt",
      "impact",
      "kind",
      "startedAt",
      "status",
      "title",
      "updates",
    ]);
    assert.equal(i.title, "Website is down");
    assert.equal(i.status, "open");
    // A monitor's incident (docs/uptime.md "Manual incidents": kinds and impacts).
    assert.equal(i.kind, "monitor");
    assert.equal(i.impact, "major");
    assert.equal(i.endedAt, null);
    assert.equal(i.description, null);
    assert.equal(i.startedAt, incidents[0].startedAt);
    assert.deepEqual(
      i.updates.map((u: object) => keysOf(u)),
      [
        ["at", "message", "status"],
        ["at", "message", "status"],
      ],
    );
    assert.deepEqual(
      i.updates.map((u: { message: string }) => u.message),
      ["Investigating", "Fix deployed"],
    );
  });

  it("gives the same page over REST, Connect, gRPC (connect-es) and @grpc/grpc-js", async () => {
    const m = await monitor(t, p, "Same everywhere", "svc-same");
    await heartbeat(t, p, m.slug);
    await page(t, p, { slug: "acme-same", title: "Same", monitors: [{ monitorId: m.id, section: "All" }] });
    const rest = await t.rest.get("/v1/status/acme-same");
    assert.equal(rest.status, 200, rest.text);
    const fromRest = fromJson(GetStatusPageResponseSchema, rest.body);
    for (const transport of [
      createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
      createGrpcTransport({ baseUrl: t.url }),
    ]) {
      const res = await createClient(StatusService, transport).getStatusPage({ slug: "acme-same" });
      assert.ok(equals(GetStatusPageResponseSchema, res, fromRest), "the RPC's message is the REST JSON's");
    }
    const c = new (loadVigil().StatusService)(t.url.replace("http://", ""), grpc.credentials.createInsecure());
    grpcClients.push(c);
    const { res } = await unary(c, "getStatusPage")({ slug: "acme-same" });
    assert.equal(res.data.title, "Same");
    assert.equal(res.data.status, "operational");
    assert.equal(res.data.monitors[0].name, "Same everywhere");
    assert.equal(res.data.monitors[0].section, "All");
    assert.equal(res.data.monitors[0].days.length, 90);
    assert.equal(res.data.monitors[0].days[89].date, today());
    assert.deepEqual(res.data.incidents, []);
  });

  it("turns down when a monitor goes down, and operational again after a heartbeat; the day keeps the downtime", async () => {
    const m = await monitor(t, p, "Flappy", "svc-flappy");
    await heartbeat(t, p, m.slug);
    await page(t, p, { slug: "acme-flappy", title: "Flappy", monitors: [{ monitorId: m.id }] });
    const get = async () => (await t.rest.get("/v1/status/acme-flappy")).body.data;
    assert.equal((await get()).status, "operational");
    await heartbeat(t, p, m.slug, "down");
    const down = await waitFor(
      async () => {
        const d = await get();
        return d.status === "down" && d;
      },
      5000,
      "the page shows down",
    );
    assert.equal(down.monitors[0].status, "down");
    assert.equal(down.monitors[0].days[89].status, "down");
    assert.equal(down.incidents[0].status, "open");
    await sleep(20);
    await heartbeat(t, p, m.slug);
    const up = await waitFor(
      async () => {
        const d = await get();
        return d.status === "operational" && d;
      },
      5000,
      "the page shows operational",
    );
    assert.equal(up.monitors[0].status, "up");
    assert.equal(up.monitors[0].days[89].status, "down", "today had downtime");
    assert.ok(up.monitors[0].days[89].downtimeMs > 0);
    assert.ok(up.monitors[0].days[89].uptimePercentage < 100);
    assert.equal(up.incidents[0].status, "resolved");
    assert.notEqual(up.incidents[0].endedAt, null);
  });

  it("unknown and unpublished slugs are a 404 (REST, Connect, grpc-js); publishing shows the page", async () => {
    const m = await monitor(t, p, "Draft", "svc-draft");
    const id = await page(t, p, {
      slug: "acme-draft",
      title: "Draft",
      published: false,
      monitors: [{ monitorId: m.id }],
    });
    for (const slug of ["acme-draft", "no-such-page"]) {
      const r = await t.rest.get(`/v1/status/${slug}`);
      assert.equal(r.status, 404, r.text);
      assert.equal(errorBody(r).code, "not_found");
      assert.equal(r.body.error.message, "status page not found", "the same answer for both");
      const err = await createClient(StatusService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }))
        .getStatusPage({ slug })
        .then(
          () => assert.fail("found"),
          (e) => ConnectError.from(e),
        );
      assert.equal(err.code, Code.NotFound);
      for (const path of [`/status/${slug}`, `/status/${slug}/badge.svg`, `/status/${slug}/feed.atom`])
        assert.equal((await raw(t.url, path)).status, 404, path);
    }
    const c = new (loadVigil().StatusService)(t.url.replace("http://", ""), grpc.credentials.createInsecure());
    grpcClients.push(c);
    assert.equal((await grpcError(unary(c, "getStatusPage")({ slug: "acme-draft" }))).code, grpc.status.NOT_FOUND);
    const html404 = await raw(t.url, "/status/acme-draft");
    assert.match(String(html404.headers["content-type"]), /^text\/html/);
    assert.match(html404.text, /<h1>Page not found<\/h1>/);

    await setPublished(id, true);
    await waitFor(async () => (await t.rest.get("/v1/status/acme-draft")).status === 200, 3000, "published");
    await setPublished(id, false);
    await waitFor(async () => (await t.rest.get("/v1/status/acme-draft")).status === 404, 3000, "unpublished");
  });

  it("leaks nothing of the project into JSON, HTML, badges or the feed", async () => {
    const m = await monitor(t, p, "Leaky", "svc-leaky-hidden");
    await heartbeat(t, p, m.slug, "down");
    const other = await project(t.rest);
    const foreign = await monitor(t, other, "Foreign", "svc-foreign");
    const pageId = await page(t, p, {
      slug: "acme-leaks",
      title: "Leaks",
      monitors: [{ monitorId: m.id, name: "Public name" }],
    });
    const inc = (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${m.id}/incidents`, { key: p.key })).body
      .data[0];
    const texts = [
      (await raw(t.url, "/v1/status/acme-leaks")).text,
      (await raw(t.url, "/status/acme-leaks")).text,
      (await raw(t.url, "/status/acme-leaks/badge.svg")).text,
      (await raw(t.url, "/status/acme-leaks/badge.svg?monitor=svc-leaky-hidden")).text,
      (await raw(t.url, "/status/acme-leaks/feed.atom")).text,
    ];
    for (const text of texts) {
      assert.ok(text.includes("Public name") || text.includes("Leaks"), text.slice(0, 200));
      for (const secret of [
        m.id,
        inc.id,
        pageId,
        p.projectId,
        p.key,
        p.owner.email,
        META,
        TAG,
        HB_META,
        "svc-leaky-hidden",
        "Leaky",
        foreign.id,
        other.projectId,
      ])
        assert.ok(!text.includes(secret), `${secret} leaked: ${text.slice(0, 300)}`);
    }
  });
});

describe("caching", () => {
  it("many concurrent readers of every route: one build per refresh interval", async () => {
    const m = await monitor(t, p, "Cached", "svc-cached");
    await heartbeat(t, p, m.slug);
    await page(t, p, { slug: "acme-cached", title: "Cached", monitors: [{ monitorId: m.id }] });
    await t.rest.get("/v1/status/acme-cached");
    await sleep(REFRESH_MS + 50); // the page is stale now: the next reader starts one refresh
    const before = await builds(t);
    const started = Date.now();
    const paths = [
      "/v1/status/acme-cached",
      "/status/acme-cached",
      "/status/acme-cached/badge.svg",
      "/status/acme-cached/feed.atom",
    ];
    const answers = await Promise.all(Array.from({ length: 200 }, (_, k) => raw(t.url, paths[k % paths.length])));
    const elapsed = Date.now() - started;
    for (const a of answers) assert.equal(a.status, 200);
    const made = (await builds(t)) - before;
    assert.ok(made >= 1, "the stale page was refreshed");
    assert.ok(
      made <= 1 + Math.ceil(elapsed / REFRESH_MS),
      `${made} builds for 200 readers in ${elapsed} ms (refresh ${REFRESH_MS} ms)`,
    );
  });

  it("unknown slugs: one lookup per interval whatever the readers", async () => {
    const before = await builds(t);
    const answers = await Promise.all(Array.from({ length: 50 }, () => raw(t.url, "/v1/status/never-there")));
    for (const a of answers) assert.equal(a.status, 404);
    const made = (await builds(t)) - before;
    assert.ok(made >= 1 && made <= 2, `${made} lookups`);
  });

  it("ETag, 304 on If-None-Match, Cache-Control and Vary", async () => {
    const m = await monitor(t, p, "Tagged", "svc-tagged");
    await heartbeat(t, p, m.slug);
    await page(t, p, { slug: "acme-etag", title: "ETag", monitors: [{ monitorId: m.id }] });
    for (const path of [
      "/v1/status/acme-etag",
      "/status/acme-etag",
      "/status/acme-etag/badge.svg",
      "/status/acme-etag/feed.atom",
    ]) {
      const first = await raw(t.url, path);
      assert.equal(first.status, 200, path);
      const etag = String(first.headers.etag);
      assert.match(etag, /^W\/"[A-Za-z0-9_-]+"$/);
      assert.equal(first.headers["cache-control"], "public, max-age=1");
      assert.match(String(first.headers.vary), /Accept-Encoding/i);
      // The HTML says when it was built, so a refresh in between may change its ETag; the others only
      // change with the page.
      const stable = path !== "/status/acme-etag";
      const again = await raw(t.url, path, { "if-none-match": etag });
      if (stable || again.headers.etag === etag) {
        assert.equal(again.status, 304, path);
        assert.equal(again.body.length, 0);
        assert.equal(again.headers.etag, etag);
        assert.equal(again.headers["cache-control"], "public, max-age=1");
      }
      const list = await raw(t.url, path, { "if-none-match": `"nope", ${etag.replace("W/", "")}` });
      if (stable || list.headers.etag === etag) assert.equal(list.status, 304, "strong and weak forms compare weakly");
      const other = await raw(t.url, path, { "if-none-match": 'W/"something-else"' });
      assert.equal(other.status, 200);
    }
    // JSON that does not change between builds keeps its ETag: a reader revalidating later gets a 304.
    const a = await raw(t.url, "/v1/status/acme-etag");
    await sleep(REFRESH_MS * 2);
    await raw(t.url, "/v1/status/acme-etag");
    await sleep(50);
    const later = await raw(t.url, "/v1/status/acme-etag", { "if-none-match": String(a.headers.etag) });
    assert.equal(later.status, 304);
  });

  it("gzip when accepted, identical once decompressed; plain otherwise", async () => {
    const m = await monitor(t, p, "Zipped", "svc-zipped");
    await heartbeat(t, p, m.slug);
    await page(t, p, { slug: "acme-gzip", title: "Gzip", monitors: [{ monitorId: m.id }] });
    await raw(t.url, "/v1/status/acme-gzip");
    for (const path of [
      "/v1/status/acme-gzip",
      "/status/acme-gzip",
      "/status/acme-gzip/feed.atom",
      "/status/acme-gzip/badge.svg",
    ]) {
      const plain = await raw(t.url, path);
      const zipped = await raw(t.url, path, { "accept-encoding": "br, gzip;q=0.8" });
      assert.equal(plain.headers["content-encoding"], undefined);
      assert.equal(zipped.headers["content-encoding"], "gzip", path);
      assert.equal(Number(zipped.headers["content-length"]), zipped.body.length);
      if (plain.headers.etag === zipped.headers.etag) assert.deepEqual(gunzipSync(zipped.body), plain.body);
      const refused = await raw(t.url, path, { "accept-encoding": "gzip;q=0, identity" });
      assert.equal(refused.headers["content-encoding"], undefined);
    }
  });

  it("HEAD answers the headers alone", async () => {
    const m = await monitor(t, p, "Headed", "svc-headed");
    await page(t, p, { slug: "acme-head", title: "Head", monitors: [{ monitorId: m.id }] });
    const r = await raw(t.url, "/status/acme-head/badge.svg", {}, "HEAD");
    assert.equal(r.status, 200);
    assert.equal(r.body.length, 0);
    assert.match(String(r.headers["content-type"]), /^image\/svg\+xml/);
    const post = await t.rest.post("/v1/status/acme-head", {});
    assert.equal(post.status, 405); // decisions.md "Corrections from the second round"
    assert.equal(post.headers.get("allow"), "GET, HEAD");
    assert.equal(errorBody(post).code, "method_not_allowed");
  });
});

describe("rate limit per client address", () => {
  it("past RATE_LIMIT_STATUS_READS_PER_MINUTE: 429 with Retry-After on every route and over the RPC", async () => {
    // A clock that stands still: every read falls in the same one-minute window.
    const fixed = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000);
    const small = await startTestApp({ RATE_LIMIT_STATUS_READS_PER_MINUTE: "3" }, { clock: () => fixed });
    others.push(small);
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof raw>> | undefined;
    for (let k = 0; k < 10; k++) {
      const r = await raw(small.url, k % 2 ? "/v1/status/some-page" : "/status/some-page/badge.svg");
      statuses.push(r.status);
      if (r.status === 429) limited ??= r;
    }
    assert.equal(statuses[0], 404, "counted, then looked up");
    assert.ok(limited, `no 429 in ${statuses}`);
    assert.ok(Number(limited.headers["retry-after"]) >= 1);
    assert.equal(limited.json.error.code, "rate_limited");
    const html = await raw(small.url, "/status/some-page");
    assert.equal(html.status, 429);
    assert.match(String(html.headers["content-type"]), /^text\/html/);
    const err = await createClient(StatusService, createConnectTransport({ baseUrl: small.url, httpVersion: "1.1" }))
      .getStatusPage({ slug: "some-page" })
      .then(
        () => assert.fail("not limited"),
        (e) => ConnectError.from(e),
      );
    assert.equal(err.code, Code.ResourceExhausted);
  });
});

describe("hostile slugs", () => {
  it("uppercase is a 400 naming slug (never lowercased); anything else outside the grammar a clean 4xx", async () => {
    const m = await monitor(t, p, "Hostile", "svc-hostile");
    await page(t, p, { slug: "acme-hostile", title: "Hostile", monitors: [{ monitorId: m.id }] });
    const upper = await t.rest.get("/v1/status/ACME-HOSTILE");
    assert.equal(upper.status, 400, upper.text);
    assert.equal(errorBody(upper).code, "validation_failed");
    assert.deepEqual(
      (upper.body.error.details as { field: string }[]).map((d) => d.field),
      ["slug"],
    );
    assert.match(upper.body.error.message, /lowercase/);
    const cases: [string, number[]][] = [
      ["/v1/status/Acme-hostile", [400]],
      ["/v1/status/..", [400, 404]],
      ["/v1/status/%2e%2e", [400]],
      ["/v1/status/acme%2Fhostile", [400]],
      ["/v1/status/..%2F..%2Fetc%2Fpasswd", [400]],
      ["/v1/status/ab%00cd", [400]],
      ["/v1/status/%FF", [404]],
      ["/v1/status/%ED%A0%80x", [404]],
      [`/v1/status/${"a".repeat(10_000)}`, [400]],
      ["/v1/status/ab", [400]],
      ["/v1/status/__proto__", [400]],
      ["/v1/status/constructor", [404]],
      ["/v1/status/%D1%95tatus", [400]], // a Cyrillic "s" that looks Latin
      ["/v1/status/%3Cscript%3E", [400]],
      ["/v1/status/acme-hostile%20", [400]],
      ["/status/ACME-HOSTILE", [400]],
      ["/status/ab%00cd/feed.atom", [400]],
      ["/status/acme-hostile/badge.svg?monitor=__proto__", [404]],
      ["/status/acme-hostile/badge.svg?monitor=constructor", [404]],
      ["/status/acme-hostile/badge.svg?monitor=%00", [400]],
      ["/status/acme-hostile/badge.svg?monitor=svc-leaky-hidden", [404]],
    ];
    for (const [path, expected] of cases) {
      const r = await raw(t.url, path);
      assert.ok(expected.includes(r.status), `${path.slice(0, 80)}: ${r.status} ${r.text.slice(0, 200)}`);
      if (path.startsWith("/v1/")) errorBody({ status: r.status, body: r.json, text: r.text });
      assert.ok(!r.text.includes("<script>"), "nothing of the path is echoed unescaped");
    }
    const nul = await raw(t.url, "/v1/status/ab%00cd");
    assert.equal(nul.json.error.details[0].field, "slug");
    for (const slug of ["a\u0000b", "ACME-HOSTILE", "__proto__"]) {
      const err = await createClient(StatusService, createGrpcTransport({ baseUrl: t.url }))
        .getStatusPage({ slug })
        .then(
          () => assert.fail("accepted"),
          (e) => ConnectError.from(e),
        );
      assert.equal(err.code, Code.InvalidArgument, slug);
    }
  });
});

describe("HTML, badges and feed", () => {
  it("the HTML page escapes every value, is accessible, needs no script, and sends a strict CSP", async () => {
    const m = await monitor(t, p, "<script>alert(1)</script>", "svc-xss");
    const n = await monitor(t, p, "Plain", "svc-plain");
    await heartbeat(t, p, m.slug, "down");
    await heartbeat(t, p, n.slug);
    const inc = (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${m.id}/incidents`, { key: p.key })).body
      .data[0];
    await t.rest.patch(
      `/v1/projects/${p.projectId}/incidents/${inc.id}`,
      { title: "<img src=x onerror=alert(2)>", description: "a & b \"quoted\" 'single'" },
      { key: p.key },
    );
    await incidentUpdate(t, p, inc.id, "</li><script>alert(3)</script>");
    await page(t, p, {
      slug: "acme-html",
      title: `Acme <b>"&'`,
      description: "<i>line one</i>\nline two",
      monitors: [{ monitorId: m.id, section: "<Core>" }, { monitorId: n.id }],
    });
    const r = await raw(t.url, "/status/acme-html");
    assert.equal(r.status, 200);
    assert.match(String(r.headers["content-type"]), /^text\/html; charset=utf-8/);
    const csp = String(r.headers["content-security-policy"]);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/=]+'/);
    assert.doesNotMatch(csp, /script-src/);
    const html = r.text;
    assert.doesNotMatch(html, /<script/i, "no script at all, and none injected");
    assert.doesNotMatch(html, /<img src=x/);
    assert.doesNotMatch(html, /<b>"&'|<i>line one|<Core>/);
    assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert.ok(html.includes("Acme &lt;b&gt;&quot;&amp;&#39;"));
    assert.ok(html.includes("&lt;img src=x onerror=alert(2)&gt;"));
    assert.ok(html.includes("a &amp; b &quot;quoted&quot; &#39;single&#39;"));
    assert.ok(html.includes("&lt;/li&gt;&lt;script&gt;alert(3)&lt;/script&gt;"));
    assert.ok(html.includes("&lt;Core&gt;"));
    // Structure and accessibility.
    assert.equal((html.match(/<h1>/g) ?? []).length, 1);
    assert.match(html, /<h2 id="monitors">Monitors<\/h2>/);
    assert.match(html, /<h2 id="incidents">Incidents<\/h2>/);
    assert.match(html, /<meta http-equiv="refresh" content="60">/);
    assert.match(html, /<meta name="viewport"/);
    assert.match(
      html,
      /<link rel="alternate" type="application\/atom\+xml"[^>]*href="\/status\/acme-html\/feed\.atom">/,
    );
    assert.match(html, /Partial outage/, "the overall status in words");
    assert.match(
      html,
      /<span class="dot" aria-hidden="true"><\/span>Down</,
      "each monitor's status in words beside its colour",
    );
    assert.match(html, /<span class="dot" aria-hidden="true"><\/span>Up</);
    const bars = [
      ...html.matchAll(
        /<li class="d-(up|down|unknown|paused)" title="([^"]+)"><span class="sr">([^<]+)<\/span><\/li>/g,
      ),
    ];
    assert.equal(bars.length, 180, "90 bars per monitor");
    for (const b of bars) assert.equal(b[2], b[3], "the same words for the eye and the screen reader");
    assert.match(bars[89][2], new RegExp(`^${today()}: [0-9.]+% up, `));
    assert.equal(bars[89][1], "down");
    assert.match(bars[0][2], /: no data$/);
  });

  it("badges: the page's and each monitor's, as text; a monitor not on the page is a 404", async () => {
    const m = await monitor(t, p, "Badge monitor", "svc-badge");
    await heartbeat(t, p, m.slug);
    await page(t, p, {
      slug: "acme-badge",
      title: "Acme & Co",
      monitors: [{ monitorId: m.id, name: "Checkout <v2>" }],
    });
    const whole = await raw(t.url, "/status/acme-badge/badge.svg");
    assert.equal(whole.status, 200);
    assert.match(String(whole.headers["content-type"]), /^image\/svg\+xml/);
    assert.equal(whole.headers["content-security-policy"], "default-src 'none'");
    assert.match(whole.text, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(whole.text, /<title>Acme &amp; Co: operational<\/title>/);
    assert.match(whole.text, /aria-label="Acme &amp; Co: operational"/);
    const one = await raw(t.url, "/status/acme-badge/badge.svg?monitor=svc-badge");
    assert.equal(one.status, 200);
    assert.match(one.text, /<title>Checkout &lt;v2&gt;: up<\/title>/);
    assert.doesNotMatch(one.text, /<v2>/);
    const missing = await raw(t.url, "/status/acme-badge/badge.svg?monitor=svc-not-listed");
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error.code, "not_found");
  });

  it("the Atom feed lists the incidents with their updates; entry ids are not incident ids", async () => {
    const m = await monitor(t, p, "Feed monitor", "svc-feed");
    await heartbeat(t, p, m.slug);
    await heartbeat(t, p, m.slug, "down");
    const inc = (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${m.id}/incidents`, { key: p.key })).body
      .data[0];
    await incidentUpdate(t, p, inc.id, "Looking into it & more");
    await page(t, p, { slug: "acme-feed", title: "Feed <Co>", monitors: [{ monitorId: m.id }] });
    const r = await raw(t.url, "/status/acme-feed/feed.atom");
    assert.equal(r.status, 200);
    assert.match(String(r.headers["content-type"]), /^application\/atom\+xml/);
    const xml = r.text;
    assert.match(xml, /^<\?xml version="1\.0" encoding="utf-8"\?>\n<feed xmlns="http:\/\/www\.w3\.org\/2005\/Atom">/);
    assert.match(xml, /<title>Feed &lt;Co&gt;: incidents<\/title>/);
    const entries = [...xml.matchAll(/<entry>([\s\S]*?)<\/entry>/g)].map((e) => e[1]);
    assert.equal(entries.length, 1);
    assert.match(
      entries[0],
      new RegExp(`<id>tag:vigil\\.dev,2026:status/acme-feed/incident/${inc.startedAt.replace(/\./g, "\\.")}</id>`),
    );
    assert.match(entries[0], /<title>\[Open\] Feed monitor is down<\/title>/);
    assert.match(entries[0], /Looking into it &amp; more/);
    assert.ok(!xml.includes(inc.id));
  });
});

describe("subscriber routes without SMTP_URL", () => {
  it("are 404s on a published page (decisions.md: no SMTP_URL, no subscribe route)", async () => {
    await page(t, p, { slug: "acme-nosmtp", title: "Acme", monitors: [] });
    const r = await t.rest.post("/v1/status/acme-nosmtp/subscribe", { email: "someone@example.com" });
    assert.equal(r.status, 404, r.text);
    assert.equal(errorBody(r).code, "not_found");
    assert.equal((await t.rest.get("/status/acme-nosmtp/confirm?token=x")).status, 404);
    assert.equal((await t.rest.get("/status/acme-nosmtp/unsubscribe?token=x")).status, 404);
    assert.equal((await t.rest.get("/v1/status/acme-nosmtp")).status, 200);
  });
});
