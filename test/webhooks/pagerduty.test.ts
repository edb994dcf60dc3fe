import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorBody } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { pagerDutyProblems } from "./formats.js";
import { useLazyReceiver, waitFor, type Received } from "./receiver.js";

// `pagerduty` webhooks (decisions.md "Notification channels"; docs/webhooks.md "PagerDuty"): a
// `routingKey` instead of a URL, Events API v2 to PAGERDUTY_EVENTS_URL (here a local receiver that
// checks the documented event format, formats.ts, and answers as PagerDuty does): trigger on
// incident.started, resolve on incident.recovered, the incident id as dedup_key, severity by state,
// links; PagerDuty's answer recorded. Both runners (`npm test -- --temporal` too).

const KEY = "R0UT1NGKEY0123456789abcdefABCDEF";
const receiver = useLazyReceiver();
const { t, p } = useProject(async () => ({
  // The receiver is on loopback: allowed only because of this (the address rule holds for PagerDuty's endpoint too).
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_BACKOFF_BASE_MS: "60000",
  WEBHOOK_TIMEOUT_MS: "2000",
  PAGERDUTY_EVENTS_URL: (await receiver()).url + "/v2/enqueue",
  PUBLIC_URL: "https://vigil.example.com",
}));

/** Bound of a wait for a delivery: generous, for a loaded machine running Temporal (no speed is asserted). */
const WAIT_MS = 30_000;

const base = () => `/v1/projects/${p.projectId}/webhooks`;
const owner = () => ({ cookie: p.owner.cookie });
const deliveries = async (id: string) => (await t.rest.get(`${base()}/${id}/deliveries`, owner())).body.data;

/** PagerDuty's answers: 400 for an invalid event, else 202 with the dedup key. */
function pagerDuty(r: Received) {
  const e = JSON.parse(r.raw);
  const errors = pagerDutyProblems(e);
  if (errors.length)
    return {
      status: 400,
      body: JSON.stringify({ status: "invalid event", message: "Event object is invalid", errors }),
    };
  return {
    status: 202,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ status: "success", message: "Event processed", dedup_key: e.dedup_key }),
  };
}

describe("pagerduty webhooks: management", () => {
  it("takes a routingKey instead of a url, shows only its end, and refuses malformed keys naming routingKey", async () => {
    const c = await t.rest.post(base(), { type: "pagerduty", routingKey: KEY, events: ["incident.started"] }, owner());
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.data.type, "pagerduty");
    assert.equal(c.body.data.routingKey, "…CDEF");
    assert.equal(c.body.data.url ?? null, null);
    assert.equal(c.body.data.secret, null);
    assert.equal(c.body.data.name, "PagerDuty");
    assert.ok(!c.text.includes(KEY), c.text);
    for (const [body, field] of [
      [{}, "routingKey"],
      [{ routingKey: "short" }, "routingKey"],
      [{ routingKey: KEY, url: "https://example.com/x" }, "url"],
    ] as const) {
      const r = await t.rest.post(base(), { type: "pagerduty", events: ["incident.started"], ...body }, owner());
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.ok(
        (errorBody(r).details as { field: string }[]).some((d) => d.field === field),
        JSON.stringify(errorBody(r).details),
      );
    }
    const patched = await t.rest.patch(`${base()}/${c.body.data.id}`, { routingKey: "Z".repeat(32) }, owner());
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.data.routingKey, "…ZZZZ");
    const list = await t.rest.get(base(), owner());
    assert.ok(!list.text.includes(KEY) && !list.text.includes("Z".repeat(32)), list.text);
  });
});

describe("pagerduty webhooks: deliveries", () => {
  it("triggers on a monitor going down and resolves on its recovery, with the incident id as dedup_key", async () => {
    const rx = await receiver();
    const path = "/v2/enqueue";
    rx.on(path, pagerDuty);
    const c = await t.rest.post(
      base(),
      { type: "pagerduty", routingKey: KEY, events: ["incident.started", "incident.recovered"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    const hb = (status: "up" | "down") =>
      t.rest.post(
        `/v1/projects/${p.projectId}/heartbeats/payments-api`,
        { status, expectedIntervalMs: 60_000, gracePeriodMs: 0 },
        { key: p.key },
      );
    for (const s of ["up", "down", "up"] as const) assert.ok((await hb(s)).status < 300);
    const got = await waitFor(
      () => {
        const all = rx.at(path).map((r) => JSON.parse(r.raw));
        const mine = all.filter((e) => e.routing_key === KEY && e.dedup_key?.startsWith("inc_"));
        return mine.length >= 2 ? mine : undefined;
      },
      "trigger and resolve",
      WAIT_MS,
    );
    for (const e of got) assert.deepEqual(pagerDutyProblems(e), []);
    const trigger = got.find((e) => e.event_action === "trigger");
    const resolve = got.find((e) => e.event_action === "resolve");
    assert.ok(trigger && resolve, JSON.stringify(got));
    assert.equal(trigger.dedup_key, resolve.dedup_key);
    const monitors = await t.rest.get(`/v1/projects/${p.projectId}/monitors`, { key: p.key });
    const monitor = monitors.body.data.find((m: { slug: string }) => m.slug === "payments-api");
    const incidents = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${monitor.id}/incidents`, { key: p.key });
    assert.ok(
      incidents.body.data.some((i: { id: string }) => i.id === trigger.dedup_key),
      `dedup_key ${trigger.dedup_key} is the incident id: ${incidents.text.slice(0, 300)}`,
    );
    assert.equal(trigger.payload.severity, "critical");
    assert.equal(trigger.payload.source, "payments-api");
    assert.match(trigger.payload.summary, /^🔴 Down: payments-api/);
    assert.equal(trigger.payload.class, "incident.started");
    assert.equal(trigger.client, "Vigil");
    assert.match(
      trigger.links[0].href,
      new RegExp(`^https://vigil\\.example\\.com/projects/${p.projectId}/uptime/mon_`),
    );
    assert.equal(resolve.payload, undefined);

    const ds = await waitFor(
      async () => {
        const list = await deliveries(c.body.data.id);
        return list.length === 2 && list.every((d: { status: string }) => d.status === "succeeded") ? list : undefined;
      },
      "both deliveries succeeded",
      WAIT_MS,
    );
    for (const d of ds) {
      assert.equal(d.attempts[0].statusCode, 202);
      assert.match(d.attempts[0].responseBody, /"status":"success"/);
    }
  });

  it("triggers an event at severity info with the event id as dedup_key, and records PagerDuty's refusal", async () => {
    const rx = await receiver();
    const c = await t.rest.post(base(), { type: "pagerduty", routingKey: KEY, events: ["payment.failed"] }, owner());
    const ev = await t.rest.post("/v1/events", { type: "payment.failed", data: { amount: 12 } }, { key: p.key });
    assert.equal(ev.status, 202, ev.text);
    const e = await waitFor(
      () =>
        rx
          .at("/v2/enqueue")
          .map((r) => JSON.parse(r.raw))
          .find((x) => x.payload?.class === "payment.failed"),
      "the event's trigger",
      WAIT_MS,
    );
    assert.deepEqual(pagerDutyProblems(e), []);
    assert.equal(e.event_action, "trigger");
    assert.equal(e.payload.severity, "info");
    const d = await waitFor(async () => (await deliveries(c.body.data.id))[0], "the delivery", WAIT_MS);
    assert.equal(e.dedup_key, d.eventId);

    // PagerDuty refusing an event (the receiver answers 400 for a moment): its answer is the attempt's.
    rx.on("/v2/enqueue", () => ({
      status: 400,
      body: '{"status":"invalid event","message":"Event object is invalid"}',
    }));
    try {
      await t.rest.post(`${base()}/${c.body.data.id}/test`, {}, owner());
      const refused = await waitFor(
        async () => {
          const list = await deliveries(c.body.data.id);
          return list.find(
            (x: { eventType: string; attempts: unknown[] }) => x.eventType === "webhook.test" && x.attempts.length,
          );
        },
        "the refused test delivery",
        WAIT_MS,
      );
      assert.equal(refused.status, "retrying");
      assert.equal(refused.attempts[0].statusCode, 400);
      assert.match(refused.attempts[0].responseBody, /invalid event/);
    } finally {
      rx.on("/v2/enqueue", pagerDuty);
    }
  });
});
