import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { RECONCILE_SLACK_MS } from "../../src/webhooks/temporal.js";
import { waitFor } from "../webhooks/receiver.js";
import {
  dataOf,
  delivery,
  deliveryIdOf,
  deliveryOf,
  hook,
  sleep,
  startLive,
  track,
  type Live,
} from "./webhooks-live.js";

// Deliveries whose workflow an operator terminated or cancelled (issue #14 defect 5), on a live dev
// server: the reconciler (every TEMPORAL_RECONCILE_MS) makes a handed-over delivery due again once its
// planned attempt is RECONCILE_SLACK_MS late; one terminated mid-attempt falls due when its lease ends.

const RECONCILE_MS = 1_000;
const TIMEOUT_MS = 2_000;
/** Lease of an attempt in flight (src/webhooks/temporal.ts: WEBHOOK_TIMEOUT_MS + 30 s). */
const LEASE_MS = TIMEOUT_MS + 30_000;

let l: Live;
before(async () => {
  l = await startLive({
    WEBHOOK_BACKOFF_BASE_MS: "200",
    WEBHOOK_MAX_ATTEMPTS: "5",
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    TEMPORAL_RECONCILE_MS: String(RECONCILE_MS),
  });
});
after(() => l?.close());

it("terminated, cancelled and terminated-mid-attempt delivery workflows are re-dispatched and finish", async () => {
  // What each delivery's event asks: "sleep": 429 Retry-After 2 s, then 200; "hold": 500 (the
  // scheduler's first attempt, handing it to a workflow), then the workflow's attempt held past the
  // termination and 500, then 200.
  const seen = new Map<string, number>();
  const w = await hook(l, "/rec", (r) => {
    const id = deliveryIdOf(r);
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    if (dataOf(r.raw).kind === "hold")
      return n === 1 ? { status: 500 } : n === 2 ? { status: 500, delayMs: 1_500 } : { status: 200 };
    return n === 1 ? { status: 429, headers: { "Retry-After": "2" } } : { status: 200 };
  });
  const term = await deliveryOf(l, w.id, await track(l, "rec", { kind: "sleep" }));
  const canc = await deliveryOf(l, w.id, await track(l, "rec", { kind: "sleep" }));
  const reqs = (id: string) => l.rx.at("/rec").filter((r) => deliveryIdOf(r) === id);
  const planned: Record<string, number> = {};
  for (const id of [term, canc]) {
    const d = await waitFor(async () => {
      const x = await delivery(l, w.id, id);
      return x.status === "retrying" && x.nextAttemptAt ? x : undefined;
    }, "asleep after the 429");
    planned[id] = Date.parse(d.nextAttemptAt!);
  }
  const firstRuns: Record<string, string> = {};
  for (const id of [term, canc])
    firstRuns[id] = (await l.temporal.workflow.getHandle(`webhook-${id}`).describe()).runId;
  await l.temporal.workflow.getHandle(`webhook-${term}`).terminate("operator");
  await l.temporal.workflow.getHandle(`webhook-${canc}`).cancel();
  await waitFor(
    async () => (await l.temporal.workflow.getHandle(`webhook-${canc}`).describe()).status.name === "CANCELLED",
    "cancelled",
  );

  // Terminated while its workflow's attempt is in flight (the receiver holds it).
  const mid = await deliveryOf(l, w.id, await track(l, "rec", { kind: "hold" }));
  await waitFor(() => reqs(mid).length === 2, "the held attempt", 15_000);
  const midRun = (await l.temporal.workflow.getHandle(`webhook-${mid}`).describe()).runId;
  await l.temporal.workflow.getHandle(`webhook-${mid}`).terminate("operator, mid-attempt");
  const midAt = Date.now();

  for (const id of [term, canc]) {
    await waitFor(
      () => reqs(id).length === 2,
      `${id} re-sent`,
      planned[id] - Date.now() + RECONCILE_SLACK_MS + RECONCILE_MS + 10_000,
    );
    const late = reqs(id)[1].at - planned[id];
    console.log(
      `  ${id === term ? "terminated" : "cancelled"}: re-sent ${late} ms after its planned time (slack ${RECONCILE_SLACK_MS} ms + period ${RECONCILE_MS} ms)`,
    );
    assert.ok(late >= RECONCILE_SLACK_MS, "re-sent by the reconciler, not before the slack");
    assert.ok(late <= RECONCILE_SLACK_MS + RECONCILE_MS + 3_000, `re-sent within slack + period + 3 s (${late} ms)`);
  }
  await waitFor(() => reqs(mid).length === 3, "the mid-attempt one re-sent", LEASE_MS + 15_000);
  const midLate = reqs(mid)[2].at - midAt;
  console.log(
    `  terminated mid-attempt: re-sent ${midLate} ms after the termination (lease ${LEASE_MS} ms from the claim)`,
  );
  assert.ok(
    midLate <= LEASE_MS + RECONCILE_MS + 3_000,
    `mid-attempt one re-sent within the lease + 3 s (${midLate} ms)`,
  );

  for (const [id, run] of [
    [term, firstRuns[term]],
    [canc, firstRuns[canc]],
    [mid, midRun],
  ]) {
    await waitFor(async () => (await delivery(l, w.id, id)).status === "succeeded", `${id} succeeded`);
    const desc = await l.temporal.workflow.getHandle(`webhook-${id}`).describe();
    assert.notEqual(desc.runId, run, "a new run");
    assert.equal(desc.status.name, "COMPLETED");
  }
  await sleep(1_500);
  assert.deepEqual([reqs(term).length, reqs(canc).length, reqs(mid).length], [2, 2, 3], "each re-sent once");
  const stuck = await l.sql.query("SELECT id FROM webhook_deliveries WHERE status IN ('pending', 'retrying')");
  assert.equal(stuck.rowCount, 0);
});
