import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorBody } from "../helpers/fixtures.js";
import { verifyWebhookSignature } from "../../src/webhooks/signature.js";
import { Receiver, useReceiver, waitFor } from "./receiver.js";
import { useProject } from "../helpers/use.js";

// http deliveries end to end: real events ingested over REST, a real local receiver, real timers.
// WEBHOOK_ALLOW_PRIVATE=true (the receiver is on 127.0.0.1), short backoff and timeout.

const MAX_ATTEMPTS = 3;

const { t, p } = useProject({
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_BACKOFF_BASE_MS: "50",
  WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
  WEBHOOK_TIMEOUT_MS: "400",
});
const rx = useReceiver();

const owner = () => ({ cookie: p.owner.cookie });
async function hook(path: string, events: string[], reply?: Parameters<Receiver["on"]>[1]) {
  const url = rx.on(path, reply ?? (() => ({ status: 200, body: "thanks" })));
  const r = await t.rest.post(`/v1/projects/${p.projectId}/webhooks`, { name: path, url, events }, owner());
  assert.equal(r.status, 201, r.text);
  return r.body.data as { id: string; secret: string };
}
async function deliveries(webhookId: string, query = "") {
  const r = await t.rest.get(`/v1/projects/${p.projectId}/webhooks/${webhookId}/deliveries${query}`, owner());
  assert.equal(r.status, 200, r.text);
  return r.body;
}
async function track(type: string, data: Record<string, unknown> = {}) {
  const r = await t.rest.post("/v1/events", { type, userId: "u1", data }, { key: p.key });
  assert.equal(r.status, 202, r.text);
  return r.body.data as { id: string };
}

describe("http deliveries", () => {
  it("POSTs the signed body with the headers of decisions.md", async () => {
    const w = await hook("/signed", ["order.paid"]);
    const ev = await track("order.paid", { amount: 42, note: "é😀" });
    const [req] = await waitFor(() => (rx.at("/signed").length ? rx.at("/signed") : undefined), "the delivery");
    assert.equal(req.method, "POST");
    assert.equal(req.headers["user-agent"], "Vigil-Webhooks/1.0");
    assert.equal(req.headers["content-type"], "application/json");
    assert.equal(req.headers["x-vigil-event-id"], ev.id);
    assert.match(String(req.headers["x-vigil-delivery-id"]), /^whd_/);
    const sig = String(req.headers["x-vigil-signature"]);
    assert.match(sig, /^t=\d+,v1=[0-9a-f]{64}$/);
    assert.deepEqual(verifyWebhookSignature(req.raw, sig, w.secret).ok, true);
    assert.equal(verifyWebhookSignature(req.raw, sig, "whsec_wrong").ok, false);
    const body = JSON.parse(req.raw);
    assert.deepEqual(Object.keys(body).sort(), ["createdAt", "data", "id", "projectId", "type"]);
    assert.equal(body.id, req.headers["x-vigil-delivery-id"]);
    assert.equal(body.type, "order.paid");
    assert.equal(body.projectId, p.projectId);
    assert.equal(body.data.id, ev.id);
    assert.deepEqual(body.data.data, { amount: 42, note: "é😀" });
    assert.equal(body.data.userId, "u1");
    const list = await waitFor(
      async () => ((await deliveries(w.id)).data[0]?.status === "succeeded" ? await deliveries(w.id) : undefined),
      "succeeded",
    );
    const d = list.data[0];
    assert.deepEqual(Object.keys(d).sort(), [
      "attempts",
      "createdAt",
      "eventId",
      "eventType",
      "id",
      "nextAttemptAt",
      "status",
    ]);
    assert.deepEqual([d.eventId, d.eventType, d.nextAttemptAt, d.attempts.length], [ev.id, "order.paid", null, 1]);
    assert.deepEqual(Object.keys(d.attempts[0]).sort(), ["at", "durationMs", "error", "responseBody", "statusCode"]);
    assert.deepEqual(
      [d.attempts[0].statusCode, d.attempts[0].error, d.attempts[0].responseBody],
      [200, null, "thanks"],
    );
    assert.equal(typeof d.attempts[0].durationMs, "number");
  });

  it("delivers watched types only: $ types, app types, types never seen before; one per webhook", async () => {
    const a = await hook("/watch-a", ["$page", "never.seen.before", "incident.started"]);
    const b = await hook("/watch-b", ["$page"]);
    await track("unwatched.type");
    const page = await t.rest.post("/v1/events", { type: "$page", data: { path: "/" } }, { key: p.key });
    assert.equal(page.status, 202, page.text);
    const batch = await t.rest.post(
      "/v1/events/batch",
      { events: [{ type: "never.seen.before" }, { type: "other" }, { type: "$page" }] },
      { key: p.key },
    );
    assert.equal(batch.status, 202, batch.text);
    await waitFor(() => rx.at("/watch-a").length >= 3 && rx.at("/watch-b").length >= 2, "5 deliveries");
    const typesA = rx
      .at("/watch-a")
      .map((r) => JSON.parse(r.raw).type)
      .sort();
    assert.deepEqual(typesA, ["$page", "$page", "never.seen.before"]);
    assert.deepEqual(
      rx.at("/watch-b").map((r) => JSON.parse(r.raw).type),
      ["$page", "$page"],
    );
    // a disabled webhook gets nothing new
    await t.rest.patch(`/v1/projects/${p.projectId}/webhooks/${b.id}`, { enabled: false }, owner());
    await track("never.seen.before");
    await t.rest.post("/v1/events", { type: "$page" }, { key: p.key });
    await waitFor(() => rx.at("/watch-a").length >= 5, "two more to a");
    assert.equal(rx.at("/watch-b").length, 2);
    assert.equal((await deliveries(a.id)).data.length, 5);
    assert.equal((await deliveries(b.id)).data.length, 2);
  });

  it("500 then 200: two attempts recorded, succeeded, same delivery id", async () => {
    const w = await hook("/flaky", ["flaky"], (_r, n) => (n === 1 ? { status: 500, body: "boom" } : { status: 204 }));
    await track("flaky");
    const d = await waitFor(async () => {
      const x = (await deliveries(w.id)).data[0];
      return x?.status === "succeeded" ? x : undefined;
    }, "success after a retry");
    assert.deepEqual(
      d.attempts.map((a: any) => a.statusCode),
      [500, 204],
    );
    assert.equal(d.attempts[0].error, "HTTP 500");
    assert.equal(d.attempts[0].responseBody, "boom");
    const ids = rx.at("/flaky").map((r) => r.headers["x-vigil-delivery-id"]);
    assert.equal(ids.length, 2);
    assert.equal(ids[0], ids[1]);
    assert.equal(ids[0], d.id);
  });

  it(`an always-failing receiver is abandoned after ${MAX_ATTEMPTS} attempts; a manual retry makes one more`, async () => {
    let healthy = false;
    const w = await hook("/down", ["down"], () =>
      healthy ? { status: 200 } : { status: 503, body: "x".repeat(5000) },
    );
    await track("down");
    const d = await waitFor(async () => {
      const x = (await deliveries(w.id)).data[0];
      return x?.status === "abandoned" ? x : undefined;
    }, "abandoned");
    assert.equal(d.attempts.length, MAX_ATTEMPTS);
    assert.equal(d.nextAttemptAt, null);
    assert.equal(d.attempts[0].responseBody.length, 1024, "only the start of the body is kept");
    assert.equal(rx.at("/down").length, MAX_ATTEMPTS);
    const filtered = await deliveries(w.id, "?status=abandoned");
    assert.equal(filtered.data.length, 1);
    assert.equal((await deliveries(w.id, "?status=succeeded")).data.length, 0);

    healthy = true;
    const r = await t.rest.post(`/v1/projects/${p.projectId}/webhooks/${w.id}/deliveries/${d.id}/retry`, {}, owner());
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.id, d.id);
    const done = await waitFor(async () => {
      const x = (await deliveries(w.id)).data[0];
      return x?.status === "succeeded" ? x : undefined;
    }, "succeeded after manual retry");
    assert.equal(done.attempts.length, MAX_ATTEMPTS + 1);
    assert.equal(rx.at("/down").length, MAX_ATTEMPTS + 1);
  });

  it("reads one delivery by id, as the list shows it; another webhook's or an unknown id is 404", async () => {
    const w = await hook("/one", ["one.event"], (_r, n) =>
      n === 1 ? { status: 500, body: "try again" } : { status: 204 },
    );
    const other = await hook("/one-other", ["one.other"]);
    await track("one.event", { n: 1 });
    const listed = await waitFor(async () => {
      const x = (await deliveries(w.id)).data[0];
      return x?.status === "succeeded" ? x : undefined;
    }, "the delivery, retried once");
    const one = await t.rest.get(`/v1/projects/${p.projectId}/webhooks/${w.id}/deliveries/${listed.id}`, owner());
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body.data, listed);
    assert.deepEqual(
      one.body.data.attempts.map((a: { statusCode: number }) => a.statusCode),
      [500, 204],
    );
    const elsewhere = await t.rest.get(
      `/v1/projects/${p.projectId}/webhooks/${other.id}/deliveries/${listed.id}`,
      owner(),
    );
    assert.equal(elsewhere.status, 404);
    assert.equal(errorBody(elsewhere).code, "not_found");
    assert.equal(
      (await t.rest.get(`/v1/projects/${p.projectId}/webhooks/${w.id}/deliveries/whd_unknown`, owner())).status,
      404,
    );
  });

  it("a slow receiver times out (recorded as an error, retried); a redirect is not followed", async () => {
    const slow = await hook("/slow", ["slow"], (_r, n) => (n === 1 ? { status: 200, delayMs: 2000 } : { status: 200 }));
    const redir = await hook("/redirect", ["redir"], () => ({
      status: 302,
      headers: { location: `${rx.url}/elsewhere` },
    }));
    await track("slow");
    await track("redir");
    const s = await waitFor(async () => {
      const x = (await deliveries(slow.id)).data[0];
      return x?.status === "succeeded" ? x : undefined;
    }, "slow receiver retried");
    assert.equal(s.attempts[0].statusCode, null);
    assert.match(s.attempts[0].error, /timeout/);
    assert.equal(s.attempts[1].statusCode, 200);
    const r = await waitFor(async () => {
      const x = (await deliveries(redir.id)).data[0];
      return x?.attempts.length >= 1 ? x : undefined;
    }, "redirect attempt");
    assert.equal(r.attempts[0].statusCode, 302);
    assert.match(r.attempts[0].error, /redirect .* not followed/);
    assert.notEqual(r.status, "succeeded");
    assert.equal(rx.at("/elsewhere").length, 0);
  });

  it("sends a test delivery, paginates deliveries newest first", async () => {
    const w = await hook("/test", ["nothing"]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await t.rest.post(`/v1/projects/${p.projectId}/webhooks/${w.id}/test`, { data: { n: i } }, owner());
      assert.equal(r.status, 202, r.text);
      assert.equal(r.body.data.eventType, "webhook.test");
      ids.push(r.body.data.id);
    }
    await waitFor(() => rx.at("/test").length === 3, "3 test deliveries");
    const body = JSON.parse(rx.at("/test")[0].raw);
    assert.equal(body.type, "webhook.test");
    const p1 = await deliveries(w.id, "?limit=2");
    assert.deepEqual(
      p1.data.map((d: any) => d.id),
      [ids[2], ids[1]],
    );
    assert.equal(p1.pagination.hasMore, true);
    const p2 = await deliveries(w.id, `?limit=2&cursor=${p1.pagination.nextCursor}`);
    assert.deepEqual(
      p2.data.map((d: any) => d.id),
      [ids[0]],
    );
    assert.equal(p2.pagination.hasMore, false);
    const e = await t.rest.post(`/v1/projects/${p.projectId}/webhooks/${w.id}/test`, { data: "nope" }, owner());
    assert.equal(e.status, 400);
    errorBody(e);
  });

  it("recover: a job attempts again the abandoned deliveries created since a time, once each", async () => {
    let healthy = false;
    const w = await hook("/recover", ["recover.me"], () => (healthy ? { status: 200 } : { status: 503 }));
    const base = `/v1/projects/${p.projectId}/webhooks/${w.id}`;
    const abandoned = async (n: number) =>
      waitFor(async () => {
        const x = (await deliveries(w.id, "?status=abandoned")).data;
        return x.length === n ? x : undefined;
      }, `${n} abandoned`);
    await track("recover.me", { n: 0 });
    const [before] = await abandoned(1);
    const since = new Date(Date.parse(before.createdAt) + 1).toISOString();
    await track("recover.me", { n: 1 });
    await track("recover.me", { n: 2 });
    await abandoned(3);

    healthy = true;
    const r = await t.rest.post(`${base}/recover`, { since }, owner());
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.kind, "webhook.recover");
    // Asked again while it runs: the same job (or, when it has already finished, one with nothing left).
    const again = await t.rest.post(`${base}/recover`, { since }, owner());
    assert.equal(again.status, 202, again.text);
    const job = async (id: string) => (await t.rest.get(`/v1/projects/${p.projectId}/jobs/${id}`, owner())).body.data;
    const first = await waitFor(async () => {
      const j = await job(r.body.data.jobId);
      return j.status === "succeeded" ? j : undefined;
    }, "the recovery job");
    assert.equal(first.eventsDeleted, 2, "the job counts the deliveries it re-queued");
    if (again.body.data.jobId !== r.body.data.jobId) assert.equal((await job(again.body.data.jobId)).eventsDeleted, 0);

    const done = await waitFor(async () => {
      const x = (await deliveries(w.id, "?status=succeeded")).data;
      return x.length === 2 ? x : undefined;
    }, "the two recovered deliveries succeeded");
    for (const d of done) assert.equal(d.attempts.length, MAX_ATTEMPTS + 1, "one more attempt each");
    const left = (await deliveries(w.id, "?status=abandoned")).data;
    assert.deepEqual(
      left.map((d: { id: string }) => d.id),
      [before.id],
      "the one created before `since` stays abandoned",
    );
    assert.equal(rx.at("/recover").length, 3 * MAX_ATTEMPTS + 2);

    for (const [body, field] of [
      [{}, "since"],
      [{ since: "yesterday" }, "since"],
      [{ since, until: since }, "until"],
    ] as const) {
      const bad = await t.rest.post(`${base}/recover`, body, owner());
      assert.equal(bad.status, 400, bad.text);
      assert.equal(bad.body.error.details[0].field, field, bad.text);
    }
    const gone = await t.rest.post(`/v1/projects/${p.projectId}/webhooks/wh_unknown/recover`, { since }, owner());
    assert.equal(gone.status, 404, gone.text);
  });
});
