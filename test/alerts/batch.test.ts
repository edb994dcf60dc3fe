import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { metricOf, startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { waitFor } from "../webhooks/receiver.js";

// Evaluation at scale (issue #31, Performance; src/alerts/batch.ts): alerts of the same query whose
// evaluations come due together are sampled in batches, one plan answering every due time of the
// query (the preview's), and more than the former four at once. The clock is the system's plus an
// offset the test moves forward a minute at once: every rule is then due together (the embedded
// scheduler learns it when the next alert is created). The values stay each rule's own window's,
// exactly as sampleAt answers them. Embedded runner only (TEMPORAL_ADDRESS empty in both passes):
// the deadline scan workflow sleeps on Temporal's timers, which a stepped test clock does not move;
// its scan samples through the same batcher (temporal.ts).

const MINUTE = 60_000;
const RULES = 8;
let offsetMs = 0;
let app: TestApp;
let p: ProjectFixture;
before(async () => {
  app = await startTestApp(
    { RATE_LIMIT_WRITES_PER_MINUTE: "100000" },
    { clock: () => new Date(Date.now() + offsetMs) },
  );
  p = await project(app.rest);
});
after(() => app?.close());

const samples = async (plan: string) => {
  const m = await metricOf(app.app, "vigil_alert_samples_total").get();
  return m.values.find((v) => v.labels.plan === plan)?.value ?? 0;
};

describe("alert evaluations due together", () => {
  it("are sampled in one batch per query, each with its own window's value", async () => {
    const now = Date.now();
    // Three signups inside every rule's first window ([at - 5 min, at], at within the next minute and
    // a bit), one before all of them, and another type.
    const events = [
      ...[30_000, 60_000, 90_000].map((ago) => ({ type: "signup", timestamp: new Date(now - ago).toISOString() })),
      { type: "signup", timestamp: new Date(now - 20 * MINUTE).toISOString() },
      { type: "view", timestamp: new Date(now - 60_000).toISOString() },
    ];
    const e = await app.rest.post("/v1/events/batch", { events }, { key: p.key });
    assert.equal(e.status, 202, e.text);

    const ids: string[] = [];
    for (let i = 0; i < RULES; i++) {
      const r = await app.rest.post(
        `/v1/projects/${p.projectId}/alerts`,
        {
          name: `Signups ${i}`,
          query: {
            source: "events",
            filters: { field: "type", operator: "equals", value: "signup" },
            operation: "count",
          },
          condition: { operator: "gt", value: 100 },
          windowMs: 5 * MINUTE,
          everyMs: MINUTE,
        },
        { key: p.key },
      );
      assert.equal(r.status, 201, r.text);
      ids.push(r.body.data.id);
    }
    const before = { batched: await samples("batched"), single: await samples("single") };
    // Every rule's first due time has passed; creating one more alert arms the embedded scheduler.
    offsetMs += MINUTE + 5_000;
    const other = await app.rest.post(
      `/v1/projects/${p.projectId}/alerts`,
      {
        name: "Latency",
        query: { source: "metric", name: "checkout.latency", aggregation: "avg" },
        condition: { operator: "gt", value: 1000 },
        windowMs: MINUTE,
        everyMs: MINUTE,
      },
      { key: p.key },
    );
    assert.equal(other.status, 201, other.text);

    const evaluated = await waitFor(
      async () => {
        const all = await Promise.all(
          ids.map(async (id) => (await app.rest.get(`/v1/projects/${p.projectId}/alerts/${id}`, { key: p.key })).body),
        );
        return all.every((a) => a.data.lastEvaluatedAt) ? all : undefined;
      },
      "every rule evaluated",
      15_000,
    );
    for (const a of evaluated) assert.equal(a.data.value, 3, JSON.stringify(a.data));
    const batched = (await samples("batched")) - before.batched;
    const single = (await samples("single")) - before.single;
    // Every rule's sample (the other alert's first due time may come meanwhile: at least RULES).
    assert.ok(batched + single >= RULES, `${batched} batched, ${single} single`);
    // More than the former four at once, gathered into batches: at least one batch of several.
    assert.ok(batched >= 2, `${batched} batched, ${single} single`);
  });
});
