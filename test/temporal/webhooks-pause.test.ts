import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { waitFor } from "../webhooks/receiver.js";
import {
  dataOf,
  delivery,
  deliveryIdOf,
  deliveryOf,
  hook,
  owner,
  sleep,
  startLive,
  track,
  within,
  type Live,
} from "./webhooks-live.js";

// Disable/enable of a webhook whose deliveries sleep on their backoff in Temporal workflows (issue
// #14 defect 4), on a live dev server: nothing is sent while disabled, enabling sends no burst
// (a delivery planned later keeps its time), one whose planned time passed while disabled is sent
// once after the enable.

let l: Live;
before(async () => {
  // A short reconciler period: it must not send anything ahead of its time either.
  l = await startLive({ WEBHOOK_BACKOFF_BASE_MS: "200", WEBHOOK_MAX_ATTEMPTS: "5", TEMPORAL_RECONCILE_MS: "1000" });
});
after(() => l?.close());

it("disable/enable: none sent while disabled, no burst on enable, a missed one sent once after it", async () => {
  // First attempt of each delivery: 429 with the Retry-After its event asks for; then 200.
  const seen = new Set<string>();
  const w = await hook(l, "/pause", (r) => {
    const id = deliveryIdOf(r);
    if (seen.has(id)) return { status: 200 };
    seen.add(id);
    return { status: 429, headers: { "Retry-After": String(dataOf(r.raw).wait) } };
  });
  const a = await deliveryOf(l, w.id, await track(l, "pause", { wait: 3 })); // planned while disabled
  const b = await deliveryOf(l, w.id, await track(l, "pause", { wait: 16 })); // planned after the enable
  const [da, db] = await Promise.all(
    [a, b].map((id) =>
      waitFor(async () => {
        const d = await delivery(l, w.id, id);
        return d.status === "retrying" && d.nextAttemptAt ? d : undefined;
      }, "retrying after the 429"),
    ),
  );
  const plannedA = Date.parse(da.nextAttemptAt!);
  const plannedB = Date.parse(db.nextAttemptAt!);
  const reqs = (id: string) => l.rx.at("/pause").filter((r) => deliveryIdOf(r) === id);
  assert.deepEqual([reqs(a).length, reqs(b).length], [1, 1]);

  const off = await l.t.rest.patch(`/v1/projects/${l.p.projectId}/webhooks/${w.id}`, { enabled: false }, owner(l));
  assert.equal(off.status, 200, off.text);
  const disabledAt = Date.now();
  // A's planned time passes while disabled: its workflow wakes, finds the webhook disabled, pauses.
  await waitFor(
    async () =>
      (await l.sql.query("SELECT 1 FROM webhook_deliveries WHERE id = $1 AND paused_at IS NOT NULL", [a])).rowCount ===
      1,
    "A paused by its workflow",
    plannedA - Date.now() + 5_000,
  );
  await sleep(1_000);
  assert.equal(l.rx.at("/pause").filter((r) => r.at >= disabledAt).length, 0, "nothing sent while disabled");
  assert.equal(await within(l.temporal.workflow.getHandle(`webhook-${a}`).result(), 5_000, "A's run to end"), "paused");
  const enabledAt = Date.now();
  assert.ok(enabledAt > plannedA, "A's planned time passed while disabled");
  assert.ok(
    enabledAt < plannedB - 5_000,
    `the enable comes well before B's planned time (${plannedB - enabledAt} ms ahead)`,
  );
  assert.equal(l.rx.at("/pause").filter((r) => r.at >= disabledAt).length, 0, "nothing sent while disabled");

  const on = await l.t.rest.patch(`/v1/projects/${l.p.projectId}/webhooks/${w.id}`, { enabled: true }, owner(l));
  assert.equal(on.status, 200, on.text);
  await waitFor(() => reqs(a).length === 2, "A sent after the enable", 5_000);
  const aLatency = reqs(a)[1].at - enabledAt;
  // B: not before its planned time, then once.
  await waitFor(
    async () => (await delivery(l, w.id, b)).status === "succeeded",
    "B succeeded",
    plannedB - Date.now() + 10_000,
  );
  const bAt = reqs(b)[1].at;
  console.log(
    `  A (planned ${plannedA - disabledAt} ms after the disable) sent ${aLatency} ms after the enable; B sent ${bAt - plannedB} ms after its planned time (enable was ${plannedB - enabledAt} ms before it)`,
  );
  assert.ok(aLatency < 3_000, `A sent soon after the enable (${aLatency} ms)`);
  assert.ok(bAt >= plannedB, `B not sent before its planned time (${bAt - plannedB} ms)`);
  assert.equal((await delivery(l, w.id, a)).status, "succeeded");
  await sleep(1_500);
  assert.deepEqual([reqs(a).length, reqs(b).length], [2, 2], "each sent once more, no duplicates");
});
