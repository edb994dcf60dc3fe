import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { MockActivityEnvironment } from "@temporalio/testing";
import { bundleWorkflowCode } from "@temporalio/worker";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { nextAttempt } from "../../src/webhooks/retry.js";
import { createWebhookActivities, workflowIdFor, type AttemptSummary } from "../../src/webhooks/temporal.js";
import { verifyWebhookSignature } from "../../src/webhooks/signature.js";
import { Receiver } from "./receiver.js";

// The Temporal runner without a Temporal server (none can be downloaded here): the activities run
// in MockActivityEnvironment against the real database and a real receiver, the workflow code is
// bundled as the worker bundles it, and the schedule is the shared pure function (decisions.test.ts).

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
let t: TestApp;
let p: ProjectFixture;
let rx: Receiver;

before(async () => {
  // ROLE=api: no embedded scheduler, so only the activities below send.
  t = await startTestApp({ ROLE: "api", WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_MAX_ATTEMPTS: "2", WEBHOOK_TIMEOUT_MS: "2000" });
  p = await project(t.rest);
  rx = await Receiver.start();
});
after(async () => {
  await t.close();
  await rx.close();
});

describe("Temporal runner", () => {
  it("activities send, record attempts and decisions; the workflow's schedule is nextAttempt", async () => {
    const url = rx.on("/temporal", (_r, n) => (n === 1 ? { status: 500 } : { status: 200 }));
    const w = await t.rest.post(`/v1/projects/${p.projectId}/webhooks`, { url, events: ["x"] }, { cookie: p.owner.cookie });
    const d = await t.rest.post(`/v1/projects/${p.projectId}/webhooks/${w.body.data.id}/test`, {}, { cookie: p.owner.cookie });
    const id = d.body.data.id;
    const acts = createWebhookActivities(t.app.deps);
    const env = new MockActivityEnvironment();

    const first = await env.run(acts.sendWebhookAttempt, id);
    assert.deepEqual(first, { gone: false, outcome: { ok: false, retryAfterMs: undefined }, attempts: 1, limit: 2 });
    const next = nextAttempt(first.outcome, first.attempts, first.limit, { baseMs: 1000 }, 0.5);
    assert.deepEqual(next, { status: "retrying", delayMs: 1000 });
    const planned = new Date(Date.now() + 1000).toISOString();
    await env.run(acts.recordWebhookDecision, id, "retrying" as const, planned as string | null);
    let list = (await t.rest.get(`/v1/projects/${p.projectId}/webhooks/${w.body.data.id}/deliveries`, { cookie: p.owner.cookie })).body.data;
    assert.deepEqual([list[0].status, list[0].nextAttemptAt, list[0].attempts.length, list[0].attempts[0].statusCode], ["retrying", planned, 1, 500]);

    const second: AttemptSummary = await env.run(acts.sendWebhookAttempt, id);
    assert.equal(second.outcome.ok, true);
    assert.equal(nextAttempt(second.outcome, second.attempts, second.limit, { baseMs: 1000 }, 0.5).status, "succeeded");
    await env.run(acts.recordWebhookDecision, id, "succeeded" as const, null as string | null);
    list = (await t.rest.get(`/v1/projects/${p.projectId}/webhooks/${w.body.data.id}/deliveries`, { cookie: p.owner.cookie })).body.data;
    assert.deepEqual([list[0].status, list[0].nextAttemptAt, list[0].attempts.length], ["succeeded", null, 2]);

    const reqs = rx.at("/temporal");
    assert.equal(reqs.length, 2);
    assert.equal(reqs[0].headers["x-vigil-delivery-id"], id);
    assert.equal(reqs[1].headers["x-vigil-delivery-id"], id);
    assert.equal(verifyWebhookSignature(reqs[1].raw, String(reqs[1].headers["x-vigil-signature"]), w.body.data.secret).ok, true);

    // a deleted webhook ends the workflow
    await t.rest.del(`/v1/projects/${p.projectId}/webhooks/${w.body.data.id}`, { cookie: p.owner.cookie });
    assert.equal(((await env.run(acts.sendWebhookAttempt, id)) as AttemptSummary).gone, true);
    assert.equal(workflowIdFor(id), `webhook-${id}`);
  });

  it("the workflows bundle (as the worker bundles them) includes the delivery workflow", async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: path.join(root, "workflows/index.ts"),
      logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} },
    });
    assert.ok(code.includes("webhookDeliveryWorkflow"));
    assert.ok(code.includes("retryNow"));
  });
});
