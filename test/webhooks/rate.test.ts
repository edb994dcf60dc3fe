import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { errorBody } from "../helpers/fixtures.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { useReceiver, waitFor } from "./receiver.js";
import { useProject } from "../helpers/use.js";

// A webhook's maxPerSecond (decisions.md "Notification channels and webhook management"; issue #33
// point 4): deliveries beyond it wait, none is dropped, exactly across nodes (two Vigils on one
// database, both sending). Runs in both runners (pass 2: Temporal, whose retries are the workflows').

const ENV = {
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_BACKOFF_BASE_MS: "50",
  WEBHOOK_MAX_ATTEMPTS: "5",
  WEBHOOK_TIMEOUT_MS: "2000",
};
const { t, p } = useProject(ENV);
const rx = useReceiver();
let second: TestApp | undefined;
after(() => second?.close());

const owner = () => ({ cookie: p.owner.cookie });
const base = () => `/v1/projects/${p.projectId}/webhooks`;

describe("webhook maxPerSecond", { concurrency: true }, () => {
  it("is set on create (1..1000), shown by get, changed and removed (0) by PATCH", async () => {
    const url = rx.on("/fields", () => ({ status: 200 }));
    for (const bad of [0, 1001, 1.5, -2]) {
      const r = await t.rest.post(base(), { url, events: ["a"], maxPerSecond: bad }, owner());
      assert.equal(r.status, 400, `${bad}: ${r.text}`);
      assert.equal(errorBody(r).code, "validation_failed");
    }
    const c = await t.rest.post(base(), { url, events: ["a"], maxPerSecond: 1000 }, owner());
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.data.maxPerSecond, 1000);
    const id = c.body.data.id;
    assert.equal((await t.rest.get(`${base()}/${id}`, owner())).body.data.maxPerSecond, 1000);
    const u = await t.rest.patch(`${base()}/${id}`, { maxPerSecond: 7 }, owner());
    assert.equal(u.status, 200, u.text);
    assert.equal((await t.rest.get(`${base()}/${id}`, owner())).body.data.maxPerSecond, 7);
    assert.equal((await t.rest.patch(`${base()}/${id}`, { maxPerSecond: 1001 }, owner())).status, 400);
    assert.equal((await t.rest.patch(`${base()}/${id}`, { maxPerSecond: 0 }, owner())).status, 200);
    assert.equal((await t.rest.get(`${base()}/${id}`, owner())).body.data.maxPerSecond, null);
  });

  it("N deliveries at maxPerSecond=M reach the receiver at most M per second, all N, on two nodes", async () => {
    const M = 3;
    const N = 8;
    second = await startTestApp(ENV, { databaseUrl: t.databaseUrl });
    // Each delivery's first attempt fails (500): the retries (the Temporal runner's workflows) count too.
    const seen = new Set<string>();
    const url = rx.on("/rated", (req) => {
      const id = String(req.headers["x-vigil-delivery-id"]);
      if (seen.has(id)) return { status: 200 };
      seen.add(id);
      return { status: 500 };
    });
    const w = await t.rest.post(base(), { url, events: ["rated"], maxPerSecond: M }, owner());
    assert.equal(w.status, 201, w.text);
    const batch = await t.rest.post(
      "/v1/events/batch",
      { events: Array.from({ length: N }, (_, i) => ({ type: "rated", data: { i } })) },
      { key: p.key },
    );
    assert.equal(batch.status, 202, batch.text);
    let last: { status: string; attempts: unknown[] }[] = [];
    const all = await waitFor(
      async () => {
        const r = await t.rest.get(`${base()}/${w.body.data.id}/deliveries`, owner());
        const d = (last = r.body?.data ?? []);
        return d.length === N && d.every((x: { status: string }) => x.status === "succeeded") ? d : undefined;
      },
      "every delivery succeeded",
      60_000,
    ).catch((err: Error) => {
      const states = last.map((d) => `${d.status}/${d.attempts.length}`).join(" ");
      throw new Error(`${err.message}: ${states}; ${rx.at("/rated").length} requests`);
    });
    assert.equal(all.length, N);
    const reqs = rx.at("/rated");
    assert.equal(reqs.length, 2 * N, "each delivery: one failed attempt, one retry; none dropped, none extra");
    // Each request's second: the `t` its signature carries (the second its send started, when it
    // was counted: rate.ts). Arrival times are shown too (they add the machine's latency).
    const perSecond = (seconds: number[]) => {
      const m = new Map<number, number>();
      for (const x of seconds) m.set(x, (m.get(x) ?? 0) + 1);
      return [...m].sort(([a], [b]) => a - b).map(([, n]) => n);
    };
    const sent = perSecond(reqs.map((r) => Number(/^t=(\d+),/.exec(String(r.headers["x-vigil-signature"]))![1])));
    const arrived = perSecond(reqs.map((r) => Math.floor(r.at / 1000)));
    console.log(`  requests per second (maxPerSecond ${M}): sent ${sent.join(", ")}; arrived ${arrived.join(", ")}`);
    assert.ok(
      sent.every((n) => n <= M),
      `at most ${M} sent in each second: ${sent.join(", ")}`,
    );
    assert.ok(
      sent.length >= Math.ceil((2 * N) / M),
      `the ${2 * N} requests took at least ${Math.ceil((2 * N) / M)} seconds`,
    );
  });
});
