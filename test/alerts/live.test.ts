import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { GENEROUS_LIMITS, startTestApp, type TestApp } from "../helpers/app.js";
import { ingest } from "../helpers/events.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { useReceiver, waitFor } from "../webhooks/receiver.js";

// Live evaluation with real timers (decisions.md: Alerts; issue #31 points 3 and 5): evaluations at
// evaluationOffsetMs + k·everyMs (10 s, the least cadence), a metric alert that fires and resolves,
// its incident (startedAt = pendingSince, endedAt = the resolving evaluation) and exactly one
// incident.started and one incident.recovered delivery with two nodes on one database; an alert
// created while Temporal's deadline scan sleeps its idle time, and one that reappears due with no
// wake (the reconciler's check); and the due times missed while the service was stopped caught up in
// order at start-up. Each test waits for
// evaluation times (up to ~30 s): they are kept few.

const EVERY = 10_000;
const apps: TestApp[] = [];
after(async () => {
  for (const a of apps) await a.close().catch(() => undefined);
});
const rx = useReceiver();

const env = { ...GENEROUS_LIMITS, WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_BACKOFF_BASE_MS: "200" };

async function createAlert(app: TestApp, p: ProjectFixture, name: string) {
  const r = await app.rest.post(
    `/v1/projects/${p.projectId}/alerts`,
    {
      name,
      query: { source: "metric", name: "checkout.latency", aggregation: "avg" },
      condition: { operator: "gt", value: 1000 },
      windowMs: EVERY,
      everyMs: EVERY,
    },
    { key: p.key },
  );
  assert.equal(r.status, 201, r.text);
  const a = r.body.data;
  const created = Date.parse(a.createdAt);
  // The first evaluation: the first offset + k·everyMs at or after the creation.
  const first = a.evaluationOffsetMs + Math.ceil((created - a.evaluationOffsetMs) / EVERY) * EVERY;
  return { alert: a as { id: string; monitorId: string; slug: string }, first };
}

/** The first evaluation time of the grid `first` + k·EVERY at least `aheadMs` from now. */
function dueAhead(first: number, aheadMs: number): number {
  let due = first;
  while (due - Date.now() < aheadMs) due += EVERY;
  return due;
}

// The two tests wait on real due times with apps and databases of their own: run side by side.
describe("live alert evaluation", { concurrency: true }, () => {
  it("fires and resolves once across two nodes: one incident, one started and one recovered delivery", async () => {
    const a = await startTestApp(env);
    apps.push(a);
    const b = await startTestApp(env, { databaseUrl: a.databaseUrl });
    apps.push(b);
    const p = await project(a.rest);
    const url = rx.on("/alerts", () => ({ status: 200, body: "ok" }));
    const w = await a.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: "pager", url, events: ["incident.started", "incident.recovered"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(w.status, 201, w.text);

    const { alert, first } = await createAlert(a, p, "Checkout latency");
    // One slow request a second before the first evaluation: in its window, not in the next one's.
    const m = await b.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "measurement", name: "checkout.latency", value: 5000, timestamp: new Date(first - 1000).toISOString() },
      { key: p.key },
    );
    assert.equal(m.status, 201, m.text);

    const get = async (app: TestApp) =>
      (await app.rest.get(`/v1/projects/${p.projectId}/alerts/${alert.id}`, { key: p.key })).body.data;
    const firing = await waitFor(
      async () => {
        const x = await get(b);
        return x.state === "firing" ? x : undefined;
      },
      "the alert firing",
      EVERY + 8_000,
    );
    assert.equal(firing.lastEvaluatedAt, new Date(first).toISOString());
    assert.equal(firing.pendingSince, new Date(first).toISOString());
    assert.equal(firing.value, 5000);
    const mon = await a.rest.get(`/v1/projects/${p.projectId}/monitors/${alert.monitorId}`, { key: p.key });
    assert.equal(mon.body.data.status, "down");

    // The next evaluation has no data (noData ok): the alert resolves there.
    const ok = await waitFor(
      async () => {
        const x = await get(a);
        return x.state === "ok" && x.lastEvaluatedAt !== firing.lastEvaluatedAt ? x : undefined;
      },
      "the alert resolving",
      EVERY + 8_000,
    );
    assert.equal(ok.lastEvaluatedAt, new Date(first + EVERY).toISOString());
    assert.equal(ok.value, null);
    const up = await b.rest.get(`/v1/projects/${p.projectId}/monitors/${alert.monitorId}`, { key: p.key });
    assert.equal(up.body.data.status, "up");

    const incidents = await a.rest.get(`/v1/projects/${p.projectId}/monitors/${alert.monitorId}/incidents`, {
      key: p.key,
    });
    assert.equal(incidents.body.data.length, 1, incidents.text);
    assert.equal(incidents.body.data[0].startedAt, new Date(first).toISOString());
    assert.equal(incidents.body.data[0].endedAt, new Date(first + EVERY).toISOString());

    const evs = await a.rest.get(`/v1/projects/${p.projectId}/alerts/${alert.id}/evaluations`, { key: p.key });
    assert.deepEqual(evs.body.data.slice(0, 2), [
      { at: new Date(first + EVERY).toISOString(), value: null, state: "ok" },
      { at: new Date(first).toISOString(), value: 5000, state: "firing" },
    ]);

    await waitFor(() => rx.at("/alerts").length >= 2, "two deliveries");
    // Give a duplicate (the other node) time to show up, then count.
    await new Promise((r) => setTimeout(r, 1500));
    const types = rx
      .at("/alerts")
      .map((req) => JSON.parse(req.raw) as { type: string; data: { incident: { id: string } } });
    assert.deepEqual(
      types.map((x) => x.type),
      ["incident.started", "incident.recovered"],
    );
    assert.equal(types[0].data.incident.id, incidents.body.data[0].id);
    // Each evaluation's lag (due time → committed) is recorded by the node that made it.
    const scraped = await Promise.all([a, b].map(async (n) => (await fetch(`${n.metricsUrl}/metrics`)).text()));
    const count = scraped
      .map((text) => /vigil_scheduler_lag_seconds_count\{kind="alert_evaluation"\} (\d+)/.exec(text)?.[1] ?? "0")
      .reduce((x, y) => x + Number(y), 0);
    assert.ok(count >= 2, `alert_evaluation lag observations: ${count}`);
  });

  it("an alert created while the deadline scan sleeps its idle time is evaluated on time", async () => {
    // Temporal mode (pass 2): with no alert and no deadline, the scan sleeps TEMPORAL_IDLE_CHECK_MS
    // (1 h); creating an alert must wake it (it did not: npm run bench alerts saw no evaluation).
    const a = await startTestApp(env);
    apps.push(a);
    const p = await project(a.rest);
    const link = a.app.deps.temporal;
    if (link) {
      const handle = (await link.client()).workflow.getHandle((await link.queues()).deadlines);
      await waitFor(
        async () => {
          const h = await handle.fetchHistory().catch(() => undefined);
          return h?.events?.some((e) => e.timerStartedEventAttributes) ? true : undefined;
        },
        "the deadline scan asleep on its timer",
        20_000,
      );
    }
    const { alert, first } = await createAlert(a, p, "Created while the scan sleeps");
    // The point goes into the window of an evaluation at least 2 s ahead, so that it is stored before
    // that evaluation runs (the first one may be due at once).
    const due = dueAhead(first, 2_000);
    const m = await a.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "measurement", name: "checkout.latency", value: 5000, timestamp: new Date(due - 1000).toISOString() },
      { key: p.key },
    );
    assert.equal(m.status, 201, m.text);
    const firing = await waitFor(
      async () => {
        const x = (await a.rest.get(`/v1/projects/${p.projectId}/alerts/${alert.id}`, { key: p.key })).body.data;
        return x.state === "firing" ? x : undefined;
      },
      "the alert firing at that evaluation",
      due - Date.now() + 8_000,
    );
    assert.equal(firing.lastEvaluatedAt, new Date(due).toISOString());
  });

  it("Temporal: an evaluation the deadline scan missed is caught by the reconciler, which wakes the scan", async (ctx) => {
    if (process.env.VIGIL_TEST_TEMPORAL !== "1") return ctx.skip("Temporal mode only (pass 2)");
    const a = await startTestApp({ ...env, TEMPORAL_RECONCILE_MS: "500" });
    apps.push(a);
    const p = await project(a.rest);
    const link = a.app.deps.temporal!;
    const handle = (await link.client()).workflow.getHandle((await link.queues()).deadlines);
    // The scan's latest timer, in seconds (its sleep).
    const lastSleep = async () => {
      const events = (await handle.fetchHistory().catch(() => undefined))?.events ?? [];
      const timers = events.flatMap((e) => (e.timerStartedEventAttributes ? [e.timerStartedEventAttributes] : []));
      return Number(timers[timers.length - 1]?.startToFireTimeout?.seconds ?? 0);
    };
    const { alert, first } = await createAlert(a, p, "Missed by the scan");
    // Behind every node's back: the alert's row goes (the scan, seeing no alert, goes back to its idle
    // sleep) and comes back as it was, due, with no wake: only the reconciler's check (watchDue) sees it.
    const db = a.app.deps.db;
    const row = (await db.query("SELECT row_to_json(a) AS r FROM alerts a WHERE id = $1", [alert.id])).rows[0].r;
    await db.query("DELETE FROM alerts WHERE id = $1", [alert.id]);
    await waitFor(
      async () => ((await lastSleep()) >= 3_000 ? true : undefined),
      "the scan asleep for its idle time",
      20_000,
    );
    // Due at its next evaluation time from now (one evaluation, no catch-up), its point stored first.
    const due = dueAhead(first, 1_000);
    const m = await a.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "measurement", name: "checkout.latency", value: 5000, timestamp: new Date(due - 1000).toISOString() },
      { key: p.key },
    );
    assert.equal(m.status, 201, m.text);
    await db.query("INSERT INTO alerts SELECT * FROM json_populate_record(NULL::alerts, $1::json)", [
      JSON.stringify({ ...row, next_at: new Date(due).toISOString() }),
    ]);
    const evaluated = await waitFor(
      async () => {
        const x = (await a.rest.get(`/v1/projects/${p.projectId}/alerts/${alert.id}`, { key: p.key })).body.data;
        return x.lastEvaluatedAt === new Date(due).toISOString() ? x : undefined;
      },
      "the missed evaluation made",
      due - Date.now() + 10_000,
    );
    assert.equal(evaluated.lastEvaluatedAt, new Date(due).toISOString());
    assert.equal(evaluated.state, "firing");
  });

  it("catches up the evaluations missed while stopped, in order, and fires once across the restart", async () => {
    const a = await startTestApp(env);
    const p = await project(a.rest);
    const url = rx.on("/restart", () => ({ status: 200, body: "ok" }));
    const w = await a.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: "pager", url, events: ["incident.started", "incident.recovered"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(w.status, 201, w.text);
    const { alert, first } = await createAlert(a, p, "Caught up");
    // In the window of the first evaluation only (which fires), not of the second (which resolves).
    const m = await a.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "measurement", name: "checkout.latency", value: 2500, timestamp: new Date(first - 1000).toISOString() },
      { key: p.key },
    );
    assert.equal(m.status, 201, m.text);
    // Stopped before its first evaluation, for three due times.
    await a.close();
    const gone = Date.now();
    await new Promise((r) => setTimeout(r, Math.max(0, first + 2 * EVERY + 500 - gone)));
    const b = await startTestApp(env, { databaseUrl: a.databaseUrl });
    apps.push(b);
    const evs = await waitFor(
      async () => {
        const r = await b.rest.get(`/v1/projects/${p.projectId}/alerts/${alert.id}/evaluations`, { key: p.key });
        return r.body.data.length >= 3
          ? (r.body.data as { at: string; value: number | null; state: string }[])
          : undefined;
      },
      "three evaluations",
      15_000,
    );
    const oldest = evs.slice().reverse();
    assert.deepEqual(
      oldest.slice(0, 3),
      [
        { at: new Date(first).toISOString(), value: 2500, state: "firing" },
        { at: new Date(first + EVERY).toISOString(), value: null, state: "ok" },
        { at: new Date(first + 2 * EVERY).toISOString(), value: null, state: "ok" },
      ],
      "every due time, oldest first, each over its own window",
    );
    const incidents = await b.rest.get(`/v1/projects/${p.projectId}/monitors/${alert.monitorId}/incidents`, {
      key: p.key,
    });
    assert.equal(incidents.body.data.length, 1, incidents.text);
    assert.equal(incidents.body.data[0].startedAt, new Date(first).toISOString());
    assert.equal(incidents.body.data[0].endedAt, new Date(first + EVERY).toISOString());
    await waitFor(() => rx.at("/restart").length >= 2, "two deliveries");
    await new Promise((r) => setTimeout(r, 1500));
    // Exactly one of each (deliveries are independent: caught up together, they may arrive in either order).
    assert.deepEqual(
      rx
        .at("/restart")
        .map((req) => (JSON.parse(req.raw) as { type: string }).type)
        .sort(),
      ["incident.recovered", "incident.started"],
    );
  });
});

// After the two above (not beside them: their due-time races are sensitive to the load of a third app).
describe("live alert evaluation of journeys", () => {
  it("a funnel's conversion and a retention value fire live and open their incidents (issue #35 point 6)", async () => {
    const a = await startTestApp(env);
    apps.push(a);
    const p = await project(a.rest);
    const now = Date.now();
    const DAY = 86_400_000;
    const at = (ms: number) => new Date(ms).toISOString();
    // Funnel: u1 and u2 opened the cart 5 s ago, u1 paid: 0.5. In the window of every evaluation of a
    // rule of windowMs 60 s and conversion window 1 s (entries in [t - 61 s, t - 1 s], t >= now).
    // Retention (days): r1..r4 joined three days ago, r1 came back two days ago: 0.25 (the newest
    // complete cohort: its day 1 is over).
    const events = [
      { type: "cart.opened", userId: "u1", timestamp: at(now - 5000) },
      { type: "checkout.paid", userId: "u1", timestamp: at(now - 4000) },
      { type: "cart.opened", userId: "u2", timestamp: at(now - 5000) },
      ...["r1", "r2", "r3", "r4"].map((userId) => ({ type: "join", userId, timestamp: at(now - 3 * DAY) })),
      { type: "visit", userId: "r1", timestamp: at(now - 2 * DAY) },
    ];
    await ingest(a.rest, p.key, events);
    const steps = ["cart.opened", "checkout.paid"].map((value) => ({
      filters: { field: "type", operator: "equals", value },
    }));
    const rules = [
      {
        name: "Checkout conversion",
        query: { source: "funnel", steps, conversionWindowMs: 1000 },
        condition: { operator: "lt", value: 0.9 },
        windowMs: 60_000,
        everyMs: EVERY,
        expect: 0.5,
      },
      {
        name: "Day-1 retention",
        query: {
          source: "retention",
          start: { filters: { field: "type", operator: "equals", value: "join" } },
          return: { filters: { field: "type", operator: "equals", value: "visit" } },
          interval: "day",
        },
        condition: { operator: "lt", value: 0.5 },
        windowMs: 5 * DAY,
        everyMs: EVERY,
        expect: 0.25,
      },
    ];
    await Promise.all(
      rules.map(async ({ expect, ...rule }) => {
        const r = await a.rest.post(`/v1/projects/${p.projectId}/alerts`, rule, { key: p.key });
        assert.equal(r.status, 201, r.text);
        const alert = r.body.data as { id: string; monitorId: string };
        const firing = await waitFor(
          async () => {
            const x = (await a.rest.get(`/v1/projects/${p.projectId}/alerts/${alert.id}`, { key: p.key })).body.data;
            return x.state === "firing" ? x : undefined;
          },
          `${rule.name} firing`,
          EVERY + 8_000,
        );
        assert.equal(firing.value, expect, rule.name);
        const incidents = await a.rest.get(`/v1/projects/${p.projectId}/monitors/${alert.monitorId}/incidents`, {
          key: p.key,
        });
        assert.equal(incidents.body.data.length, 1, incidents.text);
        assert.equal(incidents.body.data[0].startedAt, firing.pendingSince);
        assert.ok(!incidents.body.data[0].endedAt, "still open");
      }),
    );
  });
});
