import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { useLazyReceiver, waitFor, type Received } from "../webhooks/receiver.js";

// Manual incidents (decisions.md "Status communication"; docs/uptime.md "Manual incidents"): POST
// .../incidents on chosen monitors with impact and workflow status, updates moving the status,
// resolution; the records of both kinds; the public pages (JSON, HTML, feed) of every page listing
// one of its monitors; incident.started / incident.recovered to an http, a Slack and a PagerDuty
// webhook (a local receiver); validation, other tenants' monitors, the open-incident cap; one call
// over gRPC. One app for the file.

const CAP = 3;
const receiver = useLazyReceiver();
const { t, p } = useProject(async () => ({
  ...GENEROUS_LIMITS,
  STATUS_PAGE_REFRESH_MS: "50",
  MAX_OPEN_INCIDENTS_PER_PROJECT: String(CAP),
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_TIMEOUT_MS: "2000",
  PAGERDUTY_EVENTS_URL: (await receiver()).url + "/v2/enqueue",
}));

const KEY = "R0UT1NGKEY0123456789abcdefABCDEF";
/** Bound of a wait for a page or a delivery: generous, for a loaded machine running Temporal (no speed is asserted). */
const WAIT_MS = 30_000;
const incidents = (f: ProjectFixture = p) => `/v1/projects/${f.projectId}/incidents`;
const updates = (id: string) => `${incidents()}/${id}/updates`;

async function monitor(f: ProjectFixture, slug: string): Promise<string> {
  const r = await t.rest.post(
    `/v1/projects/${f.projectId}/monitors`,
    { name: `Service ${slug}`, slug, expectedIntervalMs: 3_600_000 },
    { key: f.key },
  );
  assert.equal(r.status, 201, r.text);
  return r.body.data.id;
}

async function page(slug: string, monitorIds: string[]) {
  const r = await t.rest.post(
    `/v1/projects/${p.projectId}/pages`,
    { slug, title: `Page ${slug}`, published: true, monitors: monitorIds.map((monitorId) => ({ monitorId })) },
    { cookie: p.owner.cookie },
  );
  assert.equal(r.status, 201, r.text);
}

const body = (monitorIds: string[], extra: Record<string, unknown> = {}) => ({
  title: "Payments are slow",
  description: "Card payments take minutes",
  impact: "major",
  monitorIds,
  status: "investigating",
  message: "We are looking into it",
  ...extra,
});

/** The page's incident titled `title` in its JSON, once the page's snapshot shows `when`. */
async function pageIncident(slug: string, title: string, when: (i: Record<string, unknown>) => boolean) {
  return waitFor(
    async () => {
      const r = await t.rest.get(`/v1/status/${slug}`);
      assert.equal(r.status, 200, r.text);
      const i = r.body.data.incidents.find((x: { title: string }) => x.title === title);
      return i && when(i) ? { page: r.body.data, incident: i } : undefined;
    },
    `page ${slug} showing ${title}`,
    WAIT_MS,
  );
}

describe("manual incidents", { concurrency: true }, () => {
  it("create -> pages -> updates -> resolve -> webhooks started and recovered", async () => {
    const rx = await receiver();
    const a = await monitor(p, "pay-api");
    const b = await monitor(p, "pay-worker");
    const c = await monitor(p, "search");
    await page("pay-a", [a]);
    await page("pay-b", [b, c]);
    await page("search-only", [c]);
    const hook = rx.on("/hook", () => ({ status: 200 }));
    const slack = rx.on("/services/T0001/B0001/abcdEFGH1234", () => ({ status: 200, body: "ok" }));
    rx.on("/v2/enqueue", (r) => ({
      status: 202,
      body: JSON.stringify({ status: "success", dedup_key: JSON.parse(r.raw).dedup_key }),
    }));
    const events = ["incident.started", "incident.recovered"];
    for (const w of [
      { type: "http", url: hook, events },
      { type: "slack", url: slack, events },
      { type: "pagerduty", routingKey: KEY, events },
    ]) {
      const r = await t.rest.post(`/v1/projects/${p.projectId}/webhooks`, w, { cookie: p.owner.cookie });
      assert.equal(r.status, 201, r.text);
    }

    const cr = await t.rest.post(incidents(), body([a, b]), { key: p.key });
    assert.equal(cr.status, 201, cr.text);
    const inc = cr.body.data;
    assert.match(inc.id, /^inc_/);
    assert.equal(inc.kind, "manual");
    assert.equal(inc.monitorId, null);
    assert.deepEqual([...inc.monitorIds].sort(), [a, b].sort());
    assert.equal(inc.impact, "major");
    assert.equal(inc.status, "investigating");
    assert.equal(inc.endedAt, null);
    assert.equal(inc.title, "Payments are slow");
    assert.deepEqual(
      inc.updates.map((u: { message: string; status: string }) => [u.message, u.status]),
      [["We are looking into it", "investigating"]],
    );
    const got = await t.rest.get(`${incidents()}/${inc.id}`, { key: p.key });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body.data, inc);
    // Listed with the project's incidents and with each of its monitors'.
    const all = await t.rest.get(incidents(), { key: p.key });
    assert.ok(all.body.data.some((i: { id: string }) => i.id === inc.id));
    const ofA = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${a}/incidents`, { key: p.key });
    assert.deepEqual(
      ofA.body.data.map((i: { id: string }) => i.id),
      [inc.id],
    );

    // Both pages listing one of its monitors show it; the page listing neither does not.
    for (const slug of ["pay-a", "pay-b"]) {
      const { page: pg, incident } = await pageIncident(slug, inc.title, (i) => i.status === "investigating");
      assert.equal(incident.kind, "manual");
      assert.equal(incident.impact, "major");
      assert.equal(incident.description, "Card payments take minutes");
      assert.deepEqual(incident.updates, [
        { at: inc.updates[0].createdAt, message: "We are looking into it", status: "investigating" },
      ]);
      assert.equal(pg.status, "degraded", "an open manual incident: the page is not operational");
    }
    const none = await t.rest.get("/v1/status/search-only");
    assert.equal(none.body.data.incidents.length, 0);
    assert.equal(none.body.data.status, "unknown");
    const html = await t.rest.get("/status/pay-a");
    assert.equal(html.status, 200);
    assert.match(html.text, /<h3>Payments are slow<\/h3>/);
    assert.match(html.text, /Investigating<\/span> · Major impact/);
    assert.match(html.text, /<strong>Investigating<\/strong> — <span class="text">We are looking into it/);
    assert.ok(!html.text.includes("<script"), "no JavaScript");
    const feed = await t.rest.get("/status/pay-b/feed.atom");
    assert.match(feed.text, /<title>\[Investigating\] Payments are slow<\/title>/);
    assert.match(feed.text, /Impact: major\./);

    // The workflow: a status per update (kept when none is given), then resolved.
    const steps: [string, string | undefined, string][] = [
      ["Found the cause", "identified", "identified"],
      ["Deploying a fix", undefined, "identified"],
      ["Fix deployed, watching", "monitoring", "monitoring"],
      ["All good", "resolved", "resolved"],
    ];
    for (const [message, status, expected] of steps) {
      const r = await t.rest.post(updates(inc.id), { message, ...(status ? { status } : {}) }, { key: p.key });
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.data.status, expected);
    }
    const resolved = (await t.rest.get(`${incidents()}/${inc.id}`, { key: p.key })).body.data;
    assert.equal(resolved.status, "resolved");
    assert.ok(resolved.endedAt);
    assert.equal(typeof resolved.durationMs, "number");
    assert.deepEqual(
      resolved.updates.map((u: { status: string }) => u.status),
      ["investigating", "identified", "identified", "monitoring", "resolved"],
    );
    // Resolved stays resolved: a note is taken, reopening is refused.
    const reopen = await t.rest.post(updates(inc.id), { message: "again?", status: "investigating" }, { key: p.key });
    assert.equal(reopen.status, 409, reopen.text);
    assert.equal(errorBody(reopen).code, "conflict");
    const note = await t.rest.post(updates(inc.id), { message: "Post-mortem published" }, { key: p.key });
    assert.equal(note.status, 201, note.text);
    assert.equal(note.body.data.status, "resolved");

    const { page: after, incident: shown } = await pageIncident("pay-a", inc.title, (i) => i.status === "resolved");
    assert.equal(shown.endedAt, resolved.endedAt);
    assert.deepEqual(
      shown.updates.map((u: { status: string }) => u.status),
      ["investigating", "identified", "identified", "monitoring", "resolved", "resolved"],
    );
    assert.equal(after.status, "unknown", "resolved: the page is its monitors' again");
    const html2 = await t.rest.get("/status/pay-a");
    assert.match(html2.text, /Resolved<\/span> · Major impact/);
    assert.match(html2.text, /<strong>Monitoring<\/strong> — <span class="text">Fix deployed, watching/);

    // Webhooks: started and recovered once each, on every target.
    const forInc = (path: string) => rx.at(path).filter((r: Received) => r.raw.includes(inc.id));
    const http = await waitFor(
      () => (forInc("/hook").length >= 2 ? forInc("/hook") : undefined),
      "http deliveries",
      WAIT_MS,
    );
    const byType = new Map(http.map((r) => [JSON.parse(r.raw).type, JSON.parse(r.raw).data]));
    for (const [type, status] of [
      ["incident.started", "investigating"],
      ["incident.recovered", "resolved"],
    ]) {
      const d = byType.get(type);
      assert.ok(d, `${type} delivered: ${[...byType.keys()]}`);
      assert.equal(d.incident.id, inc.id);
      assert.equal(d.incident.kind, "manual");
      assert.equal(d.incident.impact, "major");
      assert.equal(d.incident.title, "Payments are slow");
      assert.equal(d.incident.status, status);
      assert.deepEqual([...d.incident.monitorIds].sort(), [a, b].sort());
      assert.deepEqual(d.monitors.map((m: { name: string }) => m.name).sort(), [
        "Service pay-api",
        "Service pay-worker",
      ]);
    }
    const sl = await waitFor(
      () => (forInc("/services/T0001/B0001/abcdEFGH1234").length >= 2 ? true : undefined),
      "slack deliveries",
      WAIT_MS,
    );
    assert.ok(sl);
    const texts = forInc("/services/T0001/B0001/abcdEFGH1234").map((r) => r.raw);
    assert.ok(
      texts.some((x) => x.includes("Incident: Payments are slow")),
      texts.join("\n"),
    );
    assert.ok(
      texts.some((x) => x.includes("Resolved: Payments are slow")),
      texts.join("\n"),
    );
    const pd = await waitFor(
      () => {
        const l = rx
          .at("/v2/enqueue")
          .map((r) => JSON.parse(r.raw))
          .filter((e) => e.dedup_key === inc.id);
        return l.length >= 2 ? l : undefined;
      },
      "pagerduty events",
      WAIT_MS,
    );
    assert.deepEqual(pd.map((e) => e.event_action).sort(), ["resolve", "trigger"]);
    const trigger = pd.find((e) => e.event_action === "trigger");
    assert.equal(trigger.payload.severity, "error", "major impact");
    assert.match(trigger.payload.summary, /Payments are slow/);
    // Nothing more: once per transition.
    assert.equal(forInc("/hook").length, 2);
  });

  it("refuses bad bodies with 400 naming the field, unknown and other tenants' monitors with 404", async () => {
    const m = await monitor(p, "val");
    const other = await project(t.rest);
    const foreign = await monitor(other, "theirs");
    for (const [label, b, field] of [
      ["no title", body([m], { title: undefined }), "title"],
      ["a blank title", body([m], { title: "  " }), "title"],
      ["a long title", body([m], { title: "x".repeat(201) }), "title"],
      ["an unknown impact", body([m], { impact: "severe" }), "impact"],
      ["no impact", body([m], { impact: undefined }), "impact"],
      ["an impact of the wrong type", body([m], { impact: 3 }), "impact"],
      ["an unknown status", body([m], { status: "fixed" }), "status"],
      ["no status", body([m], { status: undefined }), "status"],
      ["no monitors", body([]), "monitorIds"],
      ["101 monitors", body(Array.from({ length: 101 }, (_, i) => `mon_${i}`)), "monitorIds"],
      ["a repeated monitor", body([m, m]), "monitorIds"],
      ["monitorIds not a list", body([m], { monitorIds: m }), "monitorIds"],
      ["no message", body([m], { message: undefined }), "message"],
      ["a message of the wrong type", body([m], { message: { text: "x" } }), "message"],
    ] as const) {
      const r = await t.rest.post(incidents(), b, { key: p.key });
      assert.equal(r.status, 400, `${label}: ${r.text}`);
      const details = (errorBody(r).details ?? []) as { field: string }[];
      assert.ok(
        details.some((d) => d.field === field || d.field.startsWith(`${field}[`) || d.field.startsWith(`${field}.`)),
        `${label}: ${r.text}`,
      );
    }
    for (const ids of [[m, foreign], ["mon_nope"]]) {
      const r = await t.rest.post(incidents(), body(ids), { key: p.key });
      assert.equal(r.status, 404, r.text);
      assert.equal(errorBody(r).code, "not_found");
      assert.ok(!r.text.includes(other.projectId));
    }
    // Nothing was created by a refused request, and the other tenant cannot read or update ours.
    const l = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${m}/incidents`, { key: p.key });
    assert.deepEqual(l.body.data, []);
    const ok = await t.rest.post(incidents(), body([m], { title: "Validation fixture" }), { key: p.key });
    assert.equal(ok.status, 201, ok.text);
    assert.equal((await t.rest.get(`${incidents()}/${ok.body.data.id}`, { key: other.key })).status, 404);
    assert.equal(
      (await t.rest.get(`${incidents(other)}/${ok.body.data.id}`, { key: other.key })).status,
      404,
      "not through the other project either",
    );
    const bad = await t.rest.post(updates(ok.body.data.id), { message: "x", status: "done" }, { key: p.key });
    assert.equal(bad.status, 400, bad.text);
    const emptyTitle = await t.rest.patch(`${incidents()}/${ok.body.data.id}`, { title: "" }, { key: p.key });
    assert.equal(emptyTitle.status, 400, emptyTitle.text);
    assert.equal((await t.rest.get(`${incidents()}/inc_nope`, { key: p.key })).status, 404);
  });

  it("a monitor's incident: kind monitor, impact major, open/resolved, and no status in its updates", async () => {
    const down = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/flaky`, { status: "down" }, { key: p.key });
    assert.equal(down.status, 200, down.text);
    const mid = down.body.data.monitor.id;
    const l = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${mid}/incidents`, { key: p.key });
    const inc = l.body.data[0];
    assert.equal(inc.kind, "monitor");
    assert.equal(inc.monitorId, mid);
    assert.deepEqual(inc.monitorIds, [mid]);
    assert.equal(inc.impact, "major");
    assert.equal(inc.status, "open");
    assert.deepEqual(inc.updates, []);
    const r = await t.rest.post(updates(inc.id), { message: "x", status: "resolved" }, { key: p.key });
    assert.equal(r.status, 400, r.text);
    assert.ok((errorBody(r).details as { field: string }[]).some((d) => d.field === "status"));
    const note = await t.rest.post(updates(inc.id), { message: "looking" }, { key: p.key });
    assert.equal(note.status, 201, note.text);
    assert.equal(note.body.data.status, null);
    const got = await t.rest.get(`${incidents()}/${inc.id}`, { key: p.key });
    assert.deepEqual(
      got.body.data.updates.map((u: { message: string }) => u.message),
      ["looking"],
    );
  });

  it(`holds at most ${CAP} open manual incidents per project (409 past it; resolved ones do not count)`, async () => {
    const q = await project(t.rest);
    const m = await monitor(q, "capped");
    const open = await Promise.all(
      Array.from({ length: CAP + 2 }, (_, i) =>
        t.rest.post(incidents(q), body([m], { title: `c${i}` }), { key: q.key }),
      ),
    );
    const codes = open.map((r) => r.status).sort();
    assert.deepEqual(codes, [...Array(CAP).fill(201), 409, 409], JSON.stringify(codes));
    const refused = open.find((r) => r.status === 409)!;
    assert.equal(errorBody(refused).code, "conflict");
    // Created resolved: allowed at the cap (it holds no place).
    const done = await t.rest.post(incidents(q), body([m], { title: "retro", status: "resolved" }), { key: q.key });
    assert.equal(done.status, 201, done.text);
    assert.ok(done.body.data.endedAt);
    const first = open.find((r) => r.status === 201)!.body.data.id;
    const res = await t.rest.post(
      `${incidents(q)}/${first}/updates`,
      { message: "done", status: "resolved" },
      {
        key: q.key,
      },
    );
    assert.equal(res.status, 201, res.text);
    const again = await t.rest.post(incidents(q), body([m], { title: "after" }), { key: q.key });
    assert.equal(again.status, 201, again.text);
  });

  it("over gRPC: CreateIncident and GetIncident; errors keep their codes", async () => {
    const m = await monitor(p, "rpc");
    const c = createClient(UptimeService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${p.key}` };
    const r = await c.createIncident(
      {
        projectId: p.projectId,
        title: "Over gRPC",
        impact: "critical",
        monitorIds: [m],
        status: "identified",
        message: "seen",
      },
      { headers },
    );
    assert.equal(r.data!.kind, "manual");
    assert.equal(r.data!.status, "identified");
    assert.equal(r.data!.monitorId, undefined);
    const g = await c.getIncident({ projectId: p.projectId, incidentId: r.data!.id }, { headers });
    assert.equal(g.data!.impact, "critical");
    assert.equal(g.data!.updates[0].status, "identified");
    await assert.rejects(
      c.createIncident(
        { projectId: p.projectId, title: "x", impact: "huge", monitorIds: [m], status: "identified", message: "m" },
        { headers },
      ),
      (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
    );
    await assert.rejects(
      c.getIncident({ projectId: p.projectId, incidentId: "inc_nope" }, { headers }),
      (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound,
    );
  });
});
