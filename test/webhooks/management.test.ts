import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { WebhookService } from "../../gen/vigil/v1/webhooks_pb.js";
import { errorBody, memberOf, project } from "../helpers/fixtures.js";
import { useReceiver, waitFor } from "./receiver.js";
import { useProject } from "../helpers/use.js";

// Management routes, with WEBHOOK_ALLOW_PRIVATE off (the production default): private targets are
// refused at creation and at connection time.

const PUBLIC = "http://93.184.215.14/hook"; // an IP literal: no DNS needed, never contacted here

const { t, p } = useProject({ WEBHOOK_ALLOW_PRIVATE: "false", WEBHOOK_BACKOFF_BASE_MS: "60000" });
const rx = useReceiver();

const base = () => `/v1/projects/${p.projectId}/webhooks`;
const owner = () => ({ cookie: p.owner.cookie });

describe("webhook management", () => {
  it("creates an http webhook with a whsec_ secret shown once; list/get never show it", async () => {
    const c = await t.rest.post(
      base(),
      { name: "Orders", type: "http", url: PUBLIC, events: ["order.paid", "$page", "incident.started", "order.paid"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    const w = c.body.data;
    assert.deepEqual(Object.keys(w).sort(), [
      "createdAt",
      // When it was disabled; null while enabled.
      "disabledAt",
      // Why the server disabled it ("failing"); null here.
      "disabledReason",
      "enabled",
      "events",
      // Its payload filters (the analytics filter model); null: every event of its types.
      "filters",
      "id",
      // Sends per second (null: no limit).
      "maxPerSecond",
      "name",
      // The destinations of the other types (email's `to`, pagerduty's `routingKey`), empty here.
      "routingKey",
      "secret",
      "to",
      "type",
      "updatedAt",
      "url",
    ]);
    assert.match(w.secret, /^whsec_/);
    assert.deepEqual(w.events, ["order.paid", "$page", "incident.started"]);
    assert.equal(w.enabled, true);
    const g = await t.rest.get(`${base()}/${w.id}`, owner());
    assert.equal(g.status, 200);
    assert.equal(g.body.data.secret, undefined);
    assert.ok(!g.text.includes(w.secret));
    const l = await t.rest.get(base(), owner());
    assert.ok(!l.text.includes("whsec_"));
    assert.ok(l.body.data.some((x: any) => x.id === w.id));
  });

  it("discord webhooks: any public host, no secret", async () => {
    const c = await t.rest.post(
      base(),
      { type: "discord", url: "http://93.184.215.14/api/webhooks/1/abc", events: ["deploy"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.data.secret, null);
    const rot = await t.rest.patch(`${base()}/${c.body.data.id}`, { rotateSecret: true }, owner());
    assert.equal(rot.status, 400);
    assert.equal(errorBody(rot).code, "validation_failed");
  });

  for (const [label, body, field] of [
    ["no events", { url: PUBLIC, events: [] }, "events"],
    ["21 events", { url: PUBLIC, events: Array.from({ length: 21 }, (_, i) => `e${i}`) }, "events"],
    ["an empty event type", { url: PUBLIC, events: [" "] }, "events.0"],
    ["a bad type", { type: "teams", url: PUBLIC, events: ["a"] }, "type"],
    ["a non-URL", { url: "not a url", events: ["a"] }, "url"],
    ["an ftp URL", { url: "ftp://93.184.215.14/x", events: ["a"] }, "url"],
    ["a missing url", { events: ["a"] }, "url"],
  ] as const) {
    it(`refuses ${label} with 400 naming ${field}`, async () => {
      const r = await t.rest.post(base(), body, owner());
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.ok(
        (e.details as any[]).some((d) => d.field === field),
        JSON.stringify(e.details),
      );
    });
  }
  it("accepts exactly 20 event types; a wrong JSON type is a 400", async () => {
    assert.equal(
      (await t.rest.post(base(), { url: PUBLIC, events: Array.from({ length: 20 }, (_, i) => `e${i}`) }, owner()))
        .status,
      201,
    );
    const r = await t.rest.post(base(), { url: PUBLIC, events: "a" }, owner());
    assert.equal(r.status, 400);
    errorBody(r);
  });

  it("refuses private, loopback, link-local and mapped targets at creation (switch off)", async () => {
    for (const url of [
      "http://127.0.0.1:8080/x",
      "http://localhost/x",
      "http://10.0.0.5/x",
      "http://169.254.169.254/latest",
      "http://[::1]/x",
      "http://[::ffff:127.0.0.1]/x",
      "http://[fd00::1]/x",
      "http://100.64.0.1/x",
      "http://0.0.0.0/x",
    ]) {
      const r = await t.rest.post(base(), { url, events: ["a"] }, owner());
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.equal((errorBody(r).details as any[])[0].field, "url");
    }
  });

  it("refuses a private address at connection time too (DNS may change after creation)", async () => {
    const c = await t.rest.post(base(), { url: PUBLIC, events: ["a"] }, owner());
    // Simulate the target moving to an internal address after creation.
    const { default: pg } = await import("pg");
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    await db.query("UPDATE webhooks SET url = $2 WHERE id = $1", [
      c.body.data.id,
      rx.on("/internal", () => ({ status: 200 })),
    ]);
    await db.end();
    const test = await t.rest.post(`${base()}/${c.body.data.id}/test`, {}, owner());
    assert.equal(test.status, 202, test.text);
    const d = await waitFor(async () => {
      const l = await t.rest.get(`${base()}/${c.body.data.id}/deliveries`, owner());
      return l.body.data[0]?.attempts.length ? l.body.data[0] : undefined;
    }, "the refused attempt");
    assert.equal(d.status, "retrying");
    assert.equal(d.attempts[0].statusCode, null);
    assert.match(d.attempts[0].error, /not allowed/);
    assert.equal(rx.at("/internal").length, 0);
  });

  it("patches name, url, events, enabled, and rotates the secret (shown once)", async () => {
    const c = await t.rest.post(base(), { url: PUBLIC, events: ["a"] }, owner());
    const id = c.body.data.id;
    const u = await t.rest.patch(`${base()}/${id}`, { name: "Renamed", events: ["b", "c"], enabled: false }, owner());
    assert.equal(u.status, 200, u.text);
    assert.deepEqual(
      [u.body.data.name, u.body.data.events, u.body.data.enabled, u.body.data.secret, u.body.data.url],
      ["Renamed", ["b", "c"], false, null, PUBLIC],
    );
    const rot = await t.rest.patch(`${base()}/${id}`, { rotateSecret: true }, owner());
    assert.match(rot.body.data.secret, /^whsec_/);
    assert.notEqual(rot.body.data.secret, c.body.data.secret);
    assert.deepEqual(rot.body.data.events, ["b", "c"]);
    assert.equal((await t.rest.patch(`${base()}/${id}`, { url: "http://192.168.0.1/" }, owner())).status, 400);
    assert.equal(
      (
        await t.rest.patch(
          `${base()}/${id}`,
          {
            events: Array(21)
              .fill("x")
              .map((x, i) => x + i),
          },
          owner(),
        )
      ).status,
      400,
    );
    assert.equal((await t.rest.del(`${base()}/${id}`, owner())).status, 204);
    assert.equal((await t.rest.get(`${base()}/${id}`, owner())).status, 404);
    assert.equal((await t.rest.del(`${base()}/${id}`, owner())).status, 404);
  });

  it("another tenant's webhook ids are 404, a member is 403, an admin may manage, API keys are 403", async () => {
    const c = await t.rest.post(base(), { url: PUBLIC, events: ["a"] }, owner());
    const id = c.body.data.id;
    const other = await project(t.rest);
    const paths: [string, string, unknown?][] = [
      ["GET", `${base()}/${id}`],
      ["PATCH", `${base()}/${id}`, { name: "x" }],
      ["DELETE", `${base()}/${id}`],
      ["GET", `${base()}/${id}/deliveries`],
      ["GET", `${base()}/${id}/deliveries/whd_x`],
      ["POST", `${base()}/${id}/test`, {}],
      ["POST", `${base()}/${id}/deliveries/whd_x/retry`, {}],
    ];
    for (const [m, path, body] of paths) {
      const r = await t.rest.req(m, path, { cookie: other.owner.cookie, body });
      assert.equal(r.status, 404, `${m} ${path}`);
      assert.equal(errorBody(r).code, "not_found");
      // the other owner's own project with this webhook id: still 404
      const r2 = await t.rest.req(m, path.replace(p.projectId, other.projectId), { cookie: other.owner.cookie, body });
      assert.equal(r2.status, 404, `${m} ${path} in own project`);
    }
    const member = await memberOf(t.rest, p);
    const admin = await memberOf(t.rest, p, "admin", "admin");
    for (const [m, path, body] of [["GET", base()], ["POST", base(), { url: PUBLIC, events: ["a"] }], ...paths] as [
      string,
      string,
      unknown?,
    ][]) {
      const r = await t.rest.req(m, path, { cookie: member.cookie, body });
      assert.equal(r.status, 403, `${m} ${path}: ${r.text}`);
      assert.equal(errorBody(r).code, "forbidden");
      const k = await t.rest.req(m, path, { key: p.key, body });
      assert.equal(k.status, 403, `${m} ${path} with key`);
    }
    assert.equal((await t.rest.get(`${base()}/${id}`, { cookie: admin.cookie })).status, 200);
    assert.equal((await t.rest.post(base(), { url: PUBLIC, events: ["a"] }, { cookie: admin.cookie })).status, 201);
    // The retry route takes POST only: a GET there is a 405 naming it (decisions.md, corrections from the second round).
    const get = await t.rest.get(`${base()}/${id}/deliveries/whd_nope/retry`, owner());
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST");
    const nf = await t.rest.post(`${base()}/${id}/deliveries/whd_nope/retry`, {}, owner());
    assert.equal(nf.status, 404);
    assert.equal(errorBody(nf).code, "not_found");
    const bad = await t.rest.get(`${base()}/${id}/deliveries?limit=0`, owner());
    assert.equal(bad.status, 400);
    assert.equal((await t.rest.get(`${base()}/${id}/deliveries?cursor=zzz`, owner())).status, 400);
    assert.equal((await t.rest.get(`${base()}/${id}/deliveries?status=weird`, owner())).status, 400);
  });

  it("works over a real gRPC client; errors map to gRPC codes", async () => {
    const c = createClient(WebhookService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { cookie: p.owner.cookie };
    const r = await c.createWebhook({ projectId: p.projectId, url: PUBLIC, events: ["grpc.event"] }, { headers });
    assert.match(r.data!.secret!, /^whsec_/);
    const g = await c.getWebhook({ projectId: p.projectId, webhookId: r.data!.id }, { headers });
    assert.deepEqual(g.data!.events, ["grpc.event"]);
    await assert.rejects(
      c.createWebhook({ projectId: p.projectId, url: PUBLIC, events: [] }, { headers }),
      (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
    );
    await assert.rejects(
      c.getWebhook({ projectId: p.projectId, webhookId: "wh_nope" }, { headers }),
      (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound,
    );
  });
});
