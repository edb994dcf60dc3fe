import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { type Account, errorBody, memberOf, project, type ProjectFixture } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// Incident updates (decisions.md: Status pages): POST/GET .../incidents/:incidentId/updates. Short
// notes a member (or the project's API key, like PATCH incident) posts on an incident; listed oldest
// first in the order they were posted, even when the clock stands still or steps back.

/** The app's clock: real time unless a test pins it. */
let pinned: Date | undefined;
const clock = () => pinned ?? new Date();

let other: ProjectFixture;
let member: Account;
let incidentId: string;
let otherIncidentId: string;

/** A monitor that goes down at once (a down heartbeat): its open incident's id. */
async function incidentOf(fx: ProjectFixture, slug: string): Promise<{ incidentId: string; monitorId: string }> {
  const down = await t.rest.post(
    `/v1/projects/${fx.projectId}/heartbeats/${slug}`,
    { status: "down" },
    { key: fx.key },
  );
  assert.equal(down.status, 200, down.text);
  const id = down.body.data.monitor.id;
  const l = await t.rest.get(`/v1/projects/${fx.projectId}/monitors/${id}/incidents`, { key: fx.key });
  return { incidentId: l.body.data[0].id, monitorId: id };
}

const { t, p } = useProject(GENEROUS_LIMITS, { clock }, async () => {
  other = await project(t.rest);
  member = await memberOf(t.rest, p);
  ({ incidentId } = await incidentOf(p, "api"));
  ({ incidentId: otherIncidentId } = await incidentOf(other, "api"));
});

const updates = (id = incidentId, projectId = p.projectId) => `/v1/projects/${projectId}/incidents/${id}/updates`;

describe("incident updates", () => {
  it("posts an update (201, the record) and lists them oldest first", async () => {
    const c = await t.rest.post(updates(), { message: "  Investigating elevated errors  " }, { key: p.key });
    assert.equal(c.status, 201, c.text);
    assert.deepEqual(Object.keys(c.body.data).sort(), ["createdAt", "id", "incidentId", "message", "status"]);
    assert.equal(c.body.data.status, null, "a monitor incident's update carries no status");
    assert.match(c.body.data.id, /^iup_[0-9A-Za-z]{20}$/);
    assert.equal(c.body.data.incidentId, incidentId);
    assert.equal(c.body.data.message, "Investigating elevated errors", "trimmed");
    assert.ok(Math.abs(Date.parse(c.body.data.createdAt) - Date.now()) < 60_000);
    const second = await t.rest.post(updates(), { message: "Fixed, monitoring\nmore soon" }, { cookie: member.cookie });
    assert.equal(second.status, 201, second.text);
    const l = await t.rest.get(updates(), { cookie: member.cookie });
    assert.equal(l.status, 200, l.text);
    assert.deepEqual(
      l.body.data.map((u: { id: string }) => u.id),
      [c.body.data.id, second.body.data.id],
    );
    assert.equal(l.body.data[1].message, "Fixed, monitoring\nmore soon");
    // The API key's own project as `self`, like the other uptime routes.
    const self = await t.rest.get(updates(incidentId, "self"), { key: p.key });
    assert.deepEqual(self.body, l.body);
  });

  it("keeps the posting order when the clock stands still or steps back", async () => {
    const { incidentId: id } = await incidentOf(p, "clocked");
    pinned = new Date("2030-01-01T00:00:00.000Z");
    try {
      const posted: string[] = [];
      for (let i = 0; i < 6; i++) {
        if (i === 4) pinned = new Date("2029-12-31T23:00:00.000Z"); // an hour back
        const r = await t.rest.post(updates(id), { message: `update ${i}` }, { key: p.key });
        assert.equal(r.status, 201, r.text);
        posted.push(r.body.data.id);
      }
      const l = await t.rest.get(updates(id), { key: p.key });
      assert.deepEqual(
        l.body.data.map((u: { id: string }) => u.id),
        posted,
      );
      assert.deepEqual(
        l.body.data.map((u: { message: string }) => u.message),
        posted.map((_, i) => `update ${i}`),
      );
      const times = l.body.data.map((u: { createdAt: string }) => Date.parse(u.createdAt));
      for (let i = 1; i < times.length; i++) assert.ok(times[i] >= times[i - 1], `createdAt never goes back: ${times}`);
    } finally {
      pinned = undefined;
    }
  });

  for (const [label, body] of [
    ["no message", {}],
    ["a blank message", { message: "   " }],
    ["a message of 2,001 characters", { message: "x".repeat(2001) }],
    ["a number", { message: 5 }],
    ["an object", { message: { text: "x" } }],
    ["a NUL", { message: "a\u0000b" }],
    ["a lone surrogate", { message: "a\ud800b" }],
  ] as const) {
    it(`refuses ${label} with 400 naming message`, async () => {
      const r = await t.rest.post(updates(), body, { key: p.key });
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.ok(
        (e.details as { field: string }[]).some((d) => d.field === "message"),
        JSON.stringify(e.details),
      );
    });
  }

  it("accepts exactly 2,000 characters; prototype names are text", async () => {
    assert.equal((await t.rest.post(updates(), { message: "y".repeat(2000) }, { key: p.key })).status, 201);
    const proto = await t.rest.post(updates(), { message: "__proto__" }, { key: p.key });
    assert.equal(proto.status, 201);
    assert.equal(proto.body.data.message, "__proto__");
  });

  it("unknown incidents and other tenants' incidents are 404; strangers and other keys see no project", async () => {
    for (const [m, body] of [
      ["POST", { message: "x" }],
      ["GET", undefined],
    ] as const) {
      for (const id of ["inc_nope", otherIncidentId, "__proto__", "..", "a".repeat(300)]) {
        const r = await t.rest.req(m, updates(id), { key: p.key, body });
        assert.equal(r.status, 404, `${m} ${id}: ${r.text}`);
        assert.equal(errorBody(r).code, "not_found");
        assert.ok(!r.text.includes(other.projectId));
      }
      // Another tenant's credentials on this project: 404, by key or by session.
      const k = await t.rest.req(m, updates(), { key: other.key, body });
      assert.equal(k.status, 404, k.text);
      const s = await t.rest.req(m, updates(), { cookie: other.owner.cookie, body });
      assert.equal(s.status, 404, s.text);
      const none = await t.rest.req(m, updates(), { body });
      assert.equal(none.status, 401, none.text);
    }
    // Nothing was added to the other tenant's incident.
    const l = await t.rest.get(updates(otherIncidentId, other.projectId), { key: other.key });
    assert.deepEqual(l.body.data, []);
  });

  it("holds at most 100 updates per incident, also under concurrent posts (409 past it)", async () => {
    const { incidentId: id } = await incidentOf(p, "chatty");
    for (let i = 0; i < 90; i++)
      assert.equal((await t.rest.post(updates(id), { message: `n${i}` }, { key: p.key })).status, 201);
    const burst = await Promise.all(
      Array.from({ length: 30 }, (_, i) => t.rest.post(updates(id), { message: `burst ${i}` }, { key: p.key })),
    );
    const statuses = burst.map((r) => r.status).sort();
    assert.deepEqual(statuses, [...Array(10).fill(201), ...Array(20).fill(409)], JSON.stringify(statuses));
    const refused = burst.find((r) => r.status === 409)!;
    assert.equal(errorBody(refused).code, "conflict");
    const l = await t.rest.get(updates(id), { key: p.key });
    assert.equal(l.body.data.length, 100);
  });

  it("an incident's updates go with its monitor", async () => {
    const { incidentId: id, monitorId: mid } = await incidentOf(p, "doomed");
    assert.equal((await t.rest.post(updates(id), { message: "soon gone" }, { key: p.key })).status, 201);
    assert.equal((await t.rest.del(`/v1/projects/${p.projectId}/monitors/${mid}`, { key: p.key })).status, 204);
    assert.equal((await t.rest.get(updates(id), { key: p.key })).status, 404);
    assert.equal((await t.rest.post(updates(id), { message: "x" }, { key: p.key })).status, 404);
    // The first incident is untouched.
    assert.equal((await t.rest.get(updates(), { key: p.key })).status, 200);
  });

  it("works over gRPC and Connect; errors keep their codes", async () => {
    for (const transport of [
      createGrpcTransport({ baseUrl: t.url }),
      createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
    ]) {
      const c = createClient(UptimeService, transport);
      const headers = { authorization: `Bearer ${p.key}` };
      const r = await c.createIncidentUpdate({ projectId: p.projectId, incidentId, message: "over rpc" }, { headers });
      assert.equal(r.data!.message, "over rpc");
      const l = await c.listIncidentUpdates(
        { projectId: p.projectId, incidentId },
        { headers: { cookie: member.cookie } },
      );
      assert.equal(l.data[l.data.length - 1].id, r.data!.id);
      await assert.rejects(
        c.createIncidentUpdate({ projectId: p.projectId, incidentId, message: "" }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
      );
      await assert.rejects(
        c.listIncidentUpdates({ projectId: p.projectId, incidentId: otherIncidentId }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound,
      );
    }
  });
});
