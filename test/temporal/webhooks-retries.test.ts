import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { errorBody } from "../helpers/fixtures.js";
import { waitFor } from "../webhooks/receiver.js";
import {
  dataOf,
  deliveries,
  delivery,
  deliveryOf,
  hook,
  owner,
  sleep,
  startLive,
  track,
  within,
  type Live,
} from "./webhooks-live.js";

// Webhook retries on a live Temporal dev server (issue #14: the webhook lines of the live suite,
// defects 6 and 10): the backoff schedule measured at a real receiver, 429 Retry-After, manual retry
// while in flight (409) and while the workflow sleeps (202, at once), and operators' search attributes.

const BASE = 200;
const MAX = 4;
/** What Temporal adds between a planned attempt and the request reaching the receiver (timer, tasks, claim). */
const SLACK = 600;
/** The dev server fires timers at whole-second resolution (a 200 ms timer fires after ~1 s). */
const TIMER_GRANULARITY = 1_000;

let l: Live;
before(async () => {
  l = await startLive({
    WEBHOOK_BACKOFF_BASE_MS: String(BASE),
    WEBHOOK_MAX_ATTEMPTS: String(MAX),
    WEBHOOK_TIMEOUT_MS: "5000",
  });
});
after(() => l?.close());

describe("webhook retries on a live Temporal server", () => {
  it(`follow BASE × 4^(n-1) ± 20%, stop after ${MAX} attempts (abandoned), nothing afterwards`, async () => {
    const w = await hook(l, "/always500", () => ({ status: 500, body: "no" }));
    const ev = await track(l, "always500");
    const id = await deliveryOf(l, w.id, ev);
    await waitFor(async () => (await delivery(l, w.id, id)).status === "abandoned", "abandoned", 30_000);
    const at = l.rx.at("/always500").map((r) => r.at);
    assert.equal(at.length, MAX, "exactly MAX attempts");
    const gaps = at.slice(1).map((x, i) => x - at[i]);
    // Vigil's decisions: the sleeps the workflow asked Temporal for (its timers), exactly.
    const hist = await l.temporal.workflow.getHandle(`webhook-${id}`).fetchHistory();
    const timers = (hist.events ?? [])
      .map((e) => e.timerStartedEventAttributes?.startToFireTimeout)
      .filter((x) => x)
      .map((x) => Number(x!.seconds ?? 0) * 1000 + Math.round((x!.nanos ?? 0) / 1e6));
    console.log(
      `  timers (ms): ${timers.join(", ")}; receiver gaps (ms): ${gaps.join(", ")}; planned ${gaps.map((_, i) => BASE * 4 ** i).join(", ")} ±20%`,
    );
    assert.equal(timers.length, MAX - 1, "one sleep between attempts");
    timers.forEach((ms, i) => {
      const planned = BASE * 4 ** i;
      assert.ok(ms >= planned * 0.8 && ms <= planned * 1.2, `sleep ${i + 1}: ${ms} ms within ${planned} ms ± 20%`);
    });
    // At the receiver: never earlier than the sleep; later only by Temporal's timer granularity
    // (the server fires timers at whole-second resolution: a 200 ms sleep takes ~1 s) and the tasks.
    gaps.forEach((g, i) => {
      assert.ok(g >= timers[i], `gap ${i + 1}: ${g} ms >= its sleep ${timers[i]} ms`);
      assert.ok(
        g <= timers[i] + TIMER_GRANULARITY + SLACK,
        `gap ${i + 1}: ${g} ms <= ${timers[i]} ms + ${TIMER_GRANULARITY + SLACK} ms`,
      );
    });
    const d = await delivery(l, w.id, id);
    assert.deepEqual([d.attempts.length, d.nextAttemptAt], [MAX, null]);
    // The workflow has ended: nothing can send a fifth attempt.
    const desc = await l.temporal.workflow.getHandle(`webhook-${id}`).describe();
    assert.equal(desc.status.name, "COMPLETED");
    assert.equal(
      await within(l.temporal.workflow.getHandle(`webhook-${id}`).result(), 5_000, "the run's result"),
      "abandoned",
    );
    await sleep(2_000);
    assert.equal(l.rx.at("/always500").length, MAX, "no attempt after the last one");
  });

  it("a first attempt that succeeds is made without a workflow; a failed one's run begins with the decided wait", async () => {
    // Issue #33 point 5: the happy path costs no workflow tasks (the scheduler's claim attempts it).
    const ok = await hook(l, "/firstok", () => ({ status: 200 }));
    const okId = await deliveryOf(l, ok.id, await track(l, "firstok"));
    await waitFor(async () => (await delivery(l, ok.id, okId)).status === "succeeded", "succeeded");
    await assert.rejects(
      l.temporal.workflow.getHandle(`webhook-${okId}`).describe(),
      /not found/i,
      "no workflow for a delivery whose first attempt succeeded",
    );
    const bad = await hook(l, "/firstbad", (_r, n) => (n === 1 ? { status: 500 } : { status: 200 }));
    const badId = await deliveryOf(l, bad.id, await track(l, "firstbad"));
    await waitFor(async () => (await delivery(l, bad.id, badId)).status === "succeeded", "succeeded", 15_000);
    const events = (await l.temporal.workflow.getHandle(`webhook-${badId}`).fetchHistory()).events ?? [];
    const first = events.findIndex((e) => e.timerStartedEventAttributes);
    const firstActivity = events.findIndex((e) => e.activityTaskScheduledEventAttributes);
    assert.ok(first >= 0 && first < firstActivity, "the run sleeps before its (only) attempt");
    assert.equal(l.rx.at("/firstbad").length, 2);
  });

  it("honours a 429's Retry-After (seconds): the next attempt not before it", async () => {
    const w = await hook(l, "/busy", (_r, n) =>
      n === 1 ? { status: 429, headers: { "Retry-After": "2" } } : { status: 200 },
    );
    const ev = await track(l, "busy");
    const id = await deliveryOf(l, w.id, ev);
    const first = await waitFor(async () => {
      const d = await delivery(l, w.id, id);
      return d.status === "retrying" ? d : undefined;
    }, "retrying after the 429");
    const firstAt = l.rx.at("/busy")[0].at;
    assert.ok(first.nextAttemptAt, "nextAttemptAt shown while the workflow sleeps");
    const planned = Date.parse(first.nextAttemptAt!) - Date.parse(first.attempts[0].at);
    assert.ok(planned >= 2_000 && planned <= 2_000 * 1.2 + 100, `planned wait ${planned} ms in [2000, 2400]`);
    await waitFor(async () => (await delivery(l, w.id, id)).status === "succeeded", "succeeded", 15_000);
    const gap = l.rx.at("/busy")[1].at - firstAt;
    console.log(`  Retry-After 2 s: second attempt after ${gap} ms (backoff alone would be ${BASE} ms)`);
    assert.ok(gap >= 2_000, `second attempt ${gap} ms after the 429, not before 2000 ms`);
    assert.ok(gap <= 2_400 + TIMER_GRANULARITY + SLACK, `second attempt ${gap} ms <= 2400 ms + slack`);
    assert.equal(l.rx.at("/busy").length, 2);
  });

  it("manual retry: 202 and at once while the workflow sleeps (nextAttemptAt shown), 409 while an attempt is in flight", async () => {
    let held = false;
    const w = await hook(l, "/held", (_r, n) => {
      if (n === 1) return { status: 429, headers: { "Retry-After": "60" } };
      if (n === 2) {
        held = true;
        return { status: 500, delayMs: 2_000 };
      }
      return { status: 200 };
    });
    const ev = await track(l, "held");
    const id = await deliveryOf(l, w.id, ev);
    const sleeping = await waitFor(async () => {
      const d = await delivery(l, w.id, id);
      return d.status === "retrying" ? d : undefined;
    }, "retrying, asleep for 60 s");
    // While the workflow sleeps, the API shows its planned attempt.
    assert.ok(sleeping.nextAttemptAt);
    const wait = Date.parse(sleeping.nextAttemptAt!) - Date.parse(sleeping.attempts[0].at);
    assert.ok(wait >= 60_000 && wait <= 72_000 + 100, `nextAttemptAt ${wait} ms after the 429`);
    assert.equal((await l.temporal.workflow.getHandle(`webhook-${id}`).describe()).status.name, "RUNNING");

    const retry = () =>
      l.t.rest.post(`/v1/projects/${l.p.projectId}/webhooks/${w.id}/deliveries/${id}/retry`, {}, owner(l));
    const asked = Date.now();
    const r1 = await retry();
    assert.equal(r1.status, 202, r1.text);
    await waitFor(() => held && l.rx.at("/held").length === 2, "the manual attempt", 5_000);
    const latency = l.rx.at("/held")[1].at - asked;
    console.log(`  manual retry while asleep: attempt ${latency} ms after the 202`);
    assert.ok(latency < 2_000, `the retried attempt came at once (${latency} ms), not at the planned time`);

    // The receiver holds attempt 2 for 2 s: a retry now is refused.
    const r2 = await retry();
    assert.equal(r2.status, 409, r2.text);
    assert.equal(errorBody(r2).code, "conflict");

    // Attempt 2 answers 500 → backoff (BASE × 4) → attempt 3 succeeds; the refused retry added nothing.
    const done = await waitFor(
      async () => {
        const d = await delivery(l, w.id, id);
        return d.status === "succeeded" ? d : undefined;
      },
      "succeeded",
      15_000,
    );
    assert.deepEqual(
      done.attempts.map((a) => a.statusCode),
      [429, 500, 200],
    );
    await sleep(1_500);
    assert.equal(l.rx.at("/held").length, 3, "no attempt from the refused retry");
    assert.equal((await l.temporal.workflow.getHandle(`webhook-${id}`).describe()).status.name, "COMPLETED");
  });

  it("search attributes: VigilWebhookId + VigilDeliveryStatus list what the database says", async () => {
    const w = await hook(l, "/sa", (r) => {
      const kind = dataOf(r.raw).kind;
      return kind === "retry"
        ? { status: 429, headers: { "Retry-After": "120" } }
        : kind === "ok"
          ? { status: 200 }
          : { status: 500 };
    });
    for (const kind of ["retry", "retry", "retry", "ok", "ok", "fail"]) await track(l, "sa", { kind });
    const byStatus = async () => {
      const r = await l.sql.query<{ id: string; status: string }>(
        "SELECT id, status FROM webhook_deliveries WHERE webhook_id = $1",
        [w.id],
      );
      const m: Record<string, string[]> = {};
      for (const x of r.rows) (m[x.status] ??= []).push(`webhook-${x.id}`);
      for (const k in m) m[k].sort();
      return m;
    };
    let seen: Record<string, string[]> = {};
    const db = await waitFor(
      async () => {
        const m = (seen = await byStatus());
        return m.retrying?.length === 3 && m.succeeded?.length === 2 && m.abandoned?.length === 1 ? m : undefined;
      },
      "3 retrying, 2 succeeded, 1 abandoned",
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last: ${JSON.stringify(seen)}`);
    });
    const list = async (status: string) => {
      const ids: string[] = [];
      for await (const x of l.temporal.workflow.list({
        query: `VigilWebhookId = "${w.id}" AND VigilDeliveryStatus = "${status}"`,
      }))
        ids.push(x.workflowId);
      return ids.sort();
    };
    // A first attempt that succeeded had no workflow (docs/temporal.md): Temporal lists the others.
    db.succeeded = [];
    // Visibility is eventually consistent: poll briefly.
    for (const status of ["retrying", "succeeded", "abandoned"]) {
      let last: string[] = [];
      await waitFor(
        async () => {
          last = await list(status);
          return JSON.stringify(last) === JSON.stringify(db[status]);
        },
        `${status}: Temporal lists ${JSON.stringify(db[status])} (last: ${JSON.stringify(last)})`,
        10_000,
      );
    }
    // The retrying ones are the running workflows, and the API agrees with the database.
    const api = (await deliveries(l, w.id))
      .filter((d) => d.status === "retrying")
      .map((d) => `webhook-${d.id}`)
      .sort();
    assert.deepEqual(api, db.retrying);
    for (const wid of db.retrying)
      assert.equal((await l.temporal.workflow.getHandle(wid).describe()).status.name, "RUNNING");
  });
});
