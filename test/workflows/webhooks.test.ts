import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { DeliveryWorkflowInput, WebhookActivities } from "../../src/webhooks/temporal.js";
import { useTimeSkipping, withWorker } from "../helpers/time-skipping.js";

// workflows/webhooks.ts's logic on Temporal's time-skipping test server, its activities replaced by
// plain functions: the order of attempts and records, which attempts are the schedule's, the waits
// it takes (hours pass at once), how a retryNow cuts one short and how each outcome ends the run.
// What needs Vigil and a real server (sends, the database, outages, restarts) stays in
// test/temporal/webhooks-*.test.ts.

type Attempt = Awaited<ReturnType<WebhookActivities["attemptWebhookDelivery"]>>;
type Decision = Awaited<ReturnType<WebhookActivities["recordWebhookAttempt"]>>;

const HOUR = 3_600_000;

const env = useTimeSkipping();

function sent(attempts: number): Attempt {
  return {
    kind: "sent",
    token: `t${attempts}`,
    outcome: { ok: false },
    record: { at: "", statusCode: 500, durationMs: 1, error: null, responseBody: null },
    attempts,
    limit: 5,
  };
}

/** Activities that answer from scripts and record every call with the test server's time. */
function fakeActivities(attempts: Attempt[], decisions: Decision[]) {
  const calls: { what: "attempt" | "record"; at: number; scheduled?: boolean; expected?: number }[] = [];
  const recorded: (() => void)[] = [];
  const activities: WebhookActivities = {
    async attemptWebhookDelivery(_id, scheduled, expected) {
      calls.push({ what: "attempt", at: await env.currentTimeMs(), scheduled, expected });
      const a = attempts.shift();
      if (!a) throw new Error("no attempt scripted");
      return a;
    },
    async recordWebhookAttempt() {
      calls.push({ what: "record", at: await env.currentTimeMs() });
      const d = decisions.shift();
      if (!d) throw new Error("no decision scripted");
      recorded.shift()?.();
      return d;
    },
  };
  /** Resolves when the next record has been made. */
  const nextRecord = () => new Promise<void>((r) => recorded.push(r));
  return { activities, calls, nextRecord };
}

const input = (over: Partial<DeliveryWorkflowInput> = {}): DeliveryWorkflowInput => ({
  deliveryId: "d1",
  baseMs: 60_000,
  timeoutMs: 5_000,
  ...over,
});

describe("webhookDeliveryWorkflow (time-skipping, fake activities)", () => {
  it("waits each decided delay (hours pass at once), then attempts as the schedule's; ends with the decided status", async () => {
    const f = fakeActivities(
      [sent(1), sent(2), sent(3)],
      [
        { status: "retrying", delayMs: HOUR },
        { status: "retrying", delayMs: 6 * HOUR },
        { status: "abandoned", delayMs: null },
      ],
    );
    const result = await withWorker(env, f.activities, (taskQueue) =>
      env.client.workflow.execute("webhookDeliveryWorkflow", {
        taskQueue,
        workflowId: "webhook-d1",
        args: [input({ attemptsSoFar: 0 })],
      }),
    );
    assert.equal(result, "abandoned");
    assert.deepEqual(
      f.calls.map((c) => c.what),
      ["attempt", "record", "attempt", "record", "attempt", "record"],
    );
    const attempts = f.calls.filter((c) => c.what === "attempt");
    // The first attempt was requested (sent even to a disabled webhook); the timer's are the schedule's.
    assert.deepEqual(
      attempts.map((c) => c.scheduled),
      [false, true, true],
    );
    // attemptsSoFar guards the run's first attempt only.
    assert.deepEqual(
      attempts.map((c) => c.expected),
      [0, undefined, undefined],
    );
    const gap1 = attempts[1]!.at - attempts[0]!.at;
    const gap2 = attempts[2]!.at - attempts[1]!.at;
    assert.ok(gap1 >= HOUR && gap1 < 2 * HOUR, `first wait ${gap1} ms, decided 1 h`);
    assert.ok(gap2 >= 6 * HOUR && gap2 < 7 * HOUR, `second wait ${gap2} ms, decided 6 h`);
  });

  it("a retryNow signal cuts a day's wait short: the next attempt at once, as a requested one", async () => {
    const f = fakeActivities(
      [sent(1), sent(2)],
      [
        { status: "retrying", delayMs: 24 * HOUR },
        { status: "succeeded", delayMs: null },
      ],
    );
    const result = await withWorker(env, f.activities, async (taskQueue) => {
      const recorded = f.nextRecord();
      const h = await env.client.workflow.start("webhookDeliveryWorkflow", {
        taskQueue,
        workflowId: "webhook-d2",
        args: [input()],
      });
      await recorded; // the workflow now waits its day (time does not skip until result() is awaited)
      await h.signal("retryNow");
      return h.result();
    });
    assert.equal(result, "succeeded");
    const attempts = f.calls.filter((c) => c.what === "attempt");
    assert.equal(attempts.length, 2);
    assert.equal(attempts[1]!.scheduled, false, "a manual retry is requested, not the schedule's");
    assert.ok(attempts[1]!.at - attempts[0]!.at < HOUR, "the retry did not wait the planned day");
  });

  it("a run handed a failed first attempt (firstDelayMs) sleeps the decided wait first, then attempts as the schedule's", async () => {
    const f = fakeActivities([sent(2)], [{ status: "succeeded", delayMs: null }]);
    const result = await withWorker(env, f.activities, async (taskQueue) => {
      const started = await env.currentTimeMs();
      const r = await env.client.workflow.execute("webhookDeliveryWorkflow", {
        taskQueue,
        workflowId: "webhook-d3",
        args: [input({ attemptsSoFar: 1, firstDelayMs: 2 * HOUR })],
      });
      return { r, started };
    });
    assert.equal(result.r, "succeeded");
    const attempts = f.calls.filter((c) => c.what === "attempt");
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]!.scheduled, true, "the timer's attempt is the schedule's (a disabled webhook pauses it)");
    assert.equal(attempts[0]!.expected, 1, "guarded by the attempts the delivery had when handed over");
    const waited = attempts[0]!.at - result.started;
    assert.ok(waited >= 2 * HOUR && waited < 3 * HOUR, `waited ${waited} ms, decided 2 h`);
  });

  for (const [answer, ends] of [
    [{ kind: "gone" }, "gone"],
    [{ kind: "paused" }, "paused"],
    [{ kind: "done", status: "succeeded" }, "succeeded"],
  ] as const) {
    it(`an attempt answered ${answer.kind} ends the run "${ends}" without recording anything`, async () => {
      const f = fakeActivities([answer], []);
      const result = await withWorker(env, f.activities, (taskQueue) =>
        env.client.workflow.execute("webhookDeliveryWorkflow", {
          taskQueue,
          workflowId: `webhook-${answer.kind}`,
          args: [input()],
        }),
      );
      assert.equal(result, ends);
      assert.deepEqual(
        f.calls.map((c) => c.what),
        ["attempt"],
      );
    });
  }
});
