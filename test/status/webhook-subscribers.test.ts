import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { PageSubscriberService } from "../../gen/vigil/v1/pages_pb.js";
import { verifyWebhookSignature } from "../../src/webhooks/signature.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, memberOf, project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { useReceiver, waitFor, type Received } from "../webhooks/receiver.js";
import { monitorAndPage as pageFor } from "./util.js";

// Webhook subscribers of a status page (docs/pages.md "Webhook subscribers"), over a real port with
// a real local receiver: an owner adds a URL (its secret answered once, never listed), and the
// page's notices (a manual incident's start, update and resolution) reach it as the webhooks'
// envelope, signed with that secret, through the same notices and sender as the email subscribers;
// no SMTP server is configured (webhook subscribers need none). A 410 Gone removes the subscriber.
// Refused: a URL that is not http(s), a private address without WEBHOOK_ALLOW_PRIVATE, the same URL
// twice, past the page's cap, members and API keys, another project's page. Also over Connect and
// gRPC. The email subscribers: test/status/subscribers.test.ts.

const CAP = 3;
const rx = useReceiver();
const { t, p } = useProject({
  ...GENEROUS_LIMITS,
  WEBHOOK_ALLOW_PRIVATE: "true",
  PUBLIC_URL: "https://status.example.test",
  MAX_SUBSCRIBERS_PER_PAGE: String(CAP),
});
/** An app that keeps outbound requests to public addresses (the default). */
const strict = useProject({ ...GENEROUS_LIMITS });

const WAIT_MS = 30_000;
const owner = () => ({ cookie: p.owner.cookie });
const subscribers = (pageId: string, projectId = p.projectId) =>
  `/v1/projects/${projectId}/pages/${pageId}/subscribers`;

const monitorAndPage = (slug: string) => pageFor(t, p, slug);

const received = (path: string, n: number): Promise<Received[]> =>
  waitFor(() => (rx.at(path).length >= n ? rx.at(path) : undefined), `${n} POSTs to ${path}`, WAIT_MS);

describe("webhook subscribers of a status page", () => {
  it("delivers the page's notices to an owner's URL, signed with the secret answered once", async () => {
    const { monitorId, pageId } = await monitorAndPage("hooks-flow");
    const url = rx.on("/flow", () => ({ status: 204 }));
    const add = await t.rest.post(subscribers(pageId), { url }, owner());
    assert.equal(add.status, 201, add.text);
    const sub = add.body.data;
    assert.match(sub.id, /^psub_/);
    assert.equal(sub.kind, "webhook");
    assert.equal(sub.url, url);
    assert.equal(sub.status, "confirmed");
    assert.match(sub.secret, /^whsec_/);

    const list = await t.rest.get(subscribers(pageId), owner());
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((s: Record<string, unknown>) => [s.kind, s.url, s.email ?? null, s.status]),
      [["webhook", url, null, "confirmed"]],
    );
    assert.ok(!list.text.includes(sub.secret), "the secret is answered once, by the create");

    const inc = await t.rest.post(
      `/v1/projects/${p.projectId}/incidents`,
      { title: "Logins fail", impact: "major", monitorIds: [monitorId], status: "investigating", message: "Looking" },
      owner(),
    );
    assert.equal(inc.status, 201, inc.text);
    const updates = `/v1/projects/${p.projectId}/incidents/${inc.body.data.id}/updates`;
    assert.equal((await t.rest.post(updates, { message: "Found it", status: "identified" }, owner())).status, 201);
    assert.equal((await t.rest.post(updates, { message: "All good", status: "resolved" }, owner())).status, 201);

    const posts = await received("/flow", 3);
    const bodies = posts.map((r) => {
      assert.equal(r.method, "POST");
      assert.equal(r.headers["content-type"], "application/json");
      const v = verifyWebhookSignature(r.raw, r.headers["x-vigil-signature"] as string, sub.secret);
      assert.ok(v.ok, `signed with the subscriber's secret: ${JSON.stringify(v)}`);
      assert.equal(verifyWebhookSignature(r.raw, r.headers["x-vigil-signature"] as string, "whsec_other").ok, false);
      const body = JSON.parse(r.raw);
      assert.equal(r.headers["x-vigil-event-id"], body.id);
      return body;
    });
    assert.deepEqual(
      bodies.map((b) => b.type),
      ["incident.started", "incident.updated", "incident.recovered"],
    );
    for (const b of bodies) {
      assert.equal(b.projectId, p.projectId);
      assert.deepEqual(b.data.page, {
        slug: "hooks-flow",
        title: "Acme hooks-flow",
        url: "https://status.example.test/status/hooks-flow",
      });
      assert.equal(b.data.title, "Logins fail");
      assert.equal(b.data.impact, "major");
      assert.deepEqual(b.data.monitors, ["API hooks-flow"]);
      assert.ok(!Number.isNaN(Date.parse(b.createdAt)));
    }
    assert.deepEqual(
      bodies.map((b) => [b.data.status, b.data.message]),
      [
        ["investigating", "Looking"],
        ["identified", "Found it"],
        ["resolved", "All good"],
      ],
    );

    // Removed by its owner: nothing more is sent to it.
    assert.equal((await t.rest.del(`${subscribers(pageId)}/${sub.id}`, owner())).status, 204);
    const again = await t.rest.post(
      `/v1/projects/${p.projectId}/incidents`,
      { title: "Again", impact: "minor", monitorIds: [monitorId], status: "investigating", message: "x" },
      owner(),
    );
    assert.equal(again.status, 201, again.text);
    // A second subscriber added after it receives the new incident's start; the removed one nothing.
    const later = rx.on("/flow-later", () => ({ status: 200 }));
    assert.equal((await t.rest.post(subscribers(pageId), { url: later }, owner())).status, 201);
    const u = `/v1/projects/${p.projectId}/incidents/${again.body.data.id}/updates`;
    assert.equal((await t.rest.post(u, { message: "Done", status: "resolved" }, owner())).status, 201);
    await received("/flow-later", 1);
    assert.equal(rx.at("/flow").length, 3, "a removed subscriber is sent nothing");
  });

  it("removes a subscriber whose receiver answers 410 Gone", async () => {
    const { monitorId, pageId } = await monitorAndPage("hooks-gone");
    const url = rx.on("/gone", () => ({ status: 410 }));
    assert.equal((await t.rest.post(subscribers(pageId), { url }, owner())).status, 201);
    const inc = await t.rest.post(
      `/v1/projects/${p.projectId}/incidents`,
      { title: "Gone", impact: "minor", monitorIds: [monitorId], status: "investigating", message: "x" },
      owner(),
    );
    assert.equal(inc.status, 201, inc.text);
    await received("/gone", 1);
    await waitFor(
      async () => ((await t.rest.get(subscribers(pageId), owner())).body.data.length === 0 ? true : undefined),
      "the subscriber removed",
      WAIT_MS,
    );
  });

  it("refuses a bad URL, the same URL twice, a full page, members, API keys and other projects", async () => {
    const { pageId } = await monitorAndPage("hooks-refused");
    for (const body of [{}, { url: "" }, { url: "ftp://example.com/x" }, { url: 42 }, { url: "http://" }, null]) {
      const r = await t.rest.post(subscribers(pageId), body, owner());
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      errorBody(r);
    }
    const url = rx.on("/twice", () => ({ status: 200 }));
    assert.equal((await t.rest.post(subscribers(pageId), { url }, owner())).status, 201);
    const twice = await t.rest.post(subscribers(pageId), { url }, owner());
    assert.equal(twice.status, 409, twice.text);
    assert.equal(errorBody(twice).code, "conflict");
    for (let i = 1; i < CAP; i++)
      assert.equal((await t.rest.post(subscribers(pageId), { url: `${url}?n=${i}` }, owner())).status, 201);
    const full = await t.rest.post(subscribers(pageId), { url: `${url}?n=full` }, owner());
    assert.equal(full.status, 409, full.text);
    assert.match(errorBody(full).message, /limit of 3 subscribers/);

    const member = await memberOf(t.rest, p, "hooks-member", "member");
    assert.equal((await t.rest.post(subscribers(pageId), { url }, { cookie: member.cookie })).status, 403);
    assert.equal((await t.rest.post(subscribers(pageId), { url }, { key: p.key })).status, 403);
    const other = await project(t.rest);
    const foreign = await t.rest.post(subscribers(pageId, other.projectId), { url }, { cookie: other.owner.cookie });
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal((await t.rest.post(subscribers("page_nope"), { url }, owner())).status, 404);
  });

  it("refuses a private address unless WEBHOOK_ALLOW_PRIVATE", async () => {
    const s = strict.p;
    const m = await strict.t.rest.post(
      `/v1/projects/${s.projectId}/monitors`,
      { name: "API", slug: "strict", expectedIntervalMs: 3_600_000 },
      { key: s.key },
    );
    const pg = await strict.t.rest.post(
      `/v1/projects/${s.projectId}/pages`,
      { slug: "hooks-strict", title: "Strict", published: true, monitors: [{ monitorId: m.body.data.id }] },
      { cookie: s.owner.cookie },
    );
    assert.equal(pg.status, 201, pg.text);
    for (const url of [rx.on("/private", () => ({ status: 200 })), "http://10.0.0.1/hook", "http://[::1]:9/x"]) {
      const r = await strict.t.rest.post(
        `/v1/projects/${s.projectId}/pages/${pg.body.data.id}/subscribers`,
        { url },
        { cookie: s.owner.cookie },
      );
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.match(errorBody(r).message, /url: /);
    }
  });

  it("over Connect and gRPC: CreatePageSubscriber and ListPageSubscribers; errors keep their codes", async () => {
    const { pageId } = await monitorAndPage("hooks-rpc");
    const headers = { cookie: p.owner.cookie };
    for (const [i, transport] of [
      createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
      createGrpcTransport({ baseUrl: t.url }),
    ].entries()) {
      const c = createClient(PageSubscriberService, transport);
      const url = rx.on(`/rpc-${i}`, () => ({ status: 200 }));
      const r = await c.createPageSubscriber({ projectId: p.projectId, pageId, url }, { headers });
      assert.equal(r.data!.kind, "webhook");
      assert.match(r.data!.secret, /^whsec_/);
      const list = await c.listPageSubscribers({ projectId: p.projectId, pageId }, { headers });
      assert.ok(list.data.some((s) => s.id === r.data!.id && s.url === url && s.email === undefined));
      await assert.rejects(
        c.createPageSubscriber({ projectId: p.projectId, pageId, url: "nope" }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
      );
      await assert.rejects(
        c.createPageSubscriber({ projectId: p.projectId, pageId, url }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.AlreadyExists,
      );
    }
  });
});
