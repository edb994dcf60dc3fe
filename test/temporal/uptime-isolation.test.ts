import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { ingest } from "../helpers/events.js";
import { deliveries, hook, startLive, type Live } from "./webhooks-live.js";
import { ms, pct, sleep, waitFor } from "./uptime-util.js";

// Task-queue isolation (#14 defect 3): 200 webhook deliveries to receivers that answer only after
// the send timeout fill every send slot of the webhooks queue, while 20 monitors reach their
// deadlines. Checks run on the uptime queue (local activities), so each is detected within 1 s.
// With one shared queue and slots, the checks would wait behind the 3 s sends.

let l: Live;
before(async () => {
  l = await startLive({
    ...GENEROUS_LIMITS,
    WEBHOOK_TIMEOUT_MS: "3000",
    WEBHOOK_MAX_ATTEMPTS: "1",
    TEMPORAL_MIN_DEADLINE_MS: "1000",
    PG_POOL_SIZE: "10",
  });
});
after(() => l?.close());

it("200 slow receivers do not delay deadline detection past 1 s", async () => {
  const slow = await hook(l, "/slow", () => ({ status: 200, delayMs: 5_000 }), ["slow.event"]);
  await ingest(
    l.t.rest,
    l.p.key,
    Array.from({ length: 200 }, (_, i) => ({ type: "slow.event", userId: `u${i}`, data: { i } })),
  );
  // The sends are under way: the receiver holds them open.
  await waitFor(
    async () => l.rx.requests.filter((r) => r.path === "/slow").length >= 50,
    30_000,
    "sends in flight",
    50,
  );

  const path = `/v1/projects/${l.p.projectId}`;
  const monitors = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      const r = await l.t.rest.post(
        `${path}/heartbeats/iso-${i}`,
        { expectedIntervalMs: 1000, gracePeriodMs: 0 },
        { key: l.p.key },
      );
      assert.equal(r.status, 200, r.text);
      return { id: r.body.data.monitor.id as string, deadline: ms(r.body.data.monitor.lastHeartbeatAt) + 1000 };
    }),
  );
  const inFlight = l.rx.requests.filter((r) => r.path === "/slow").length;
  await sleep(2_500);
  const delays: number[] = [];
  for (const m of monitors) {
    const inc = await waitFor(
      async () => (await l.t.rest.get(`${path}/monitors/${m.id}/incidents`, { key: l.p.key })).body.data?.[0],
      10_000,
      `incident of ${m.id}`,
    );
    assert.equal(ms(inc.startedAt), m.deadline, "the incident starts at the deadline");
    delays.push(ms(inc.createdAt) - m.deadline);
  }
  const sends = l.rx.requests.filter((r) => r.path === "/slow").length;
  console.log(
    `isolation: ${inFlight} sends had reached the receiver when the monitors were armed, ${sends} by the end; detection p50 ${pct(delays, 50)} ms, p99 ${pct(delays, 99)} ms, max ${Math.max(...delays)} ms`,
  );
  assert.ok(Math.max(...delays) <= 1_000, `every deadline detected within 1 s (max ${Math.max(...delays)} ms)`);
  // The deliveries themselves end (timed out → abandoned after their single attempt).
  await waitFor(
    async () => (await deliveries(l, slow.id)).every((d) => d.status === "abandoned"),
    60_000,
    "deliveries finished",
    500,
  );
});
