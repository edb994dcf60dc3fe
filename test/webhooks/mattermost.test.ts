import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorBody } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { MATTERMOST_LIMITS, mattermostMessage } from "../../src/webhooks/targets/mattermost.js";
import { useReceiver, waitFor } from "./receiver.js";

// `mattermost` webhooks (Vigil's own type, docs/webhooks.md), the webhook-target recipe of
// docs/architecture.md followed once: the URL rule, the Slack-style body within its limits, a 429's
// Retry-After, and incident notifications, against the real local receiver over a real port. The
// backoff base is a minute, so a quick second attempt can only come from the receiver's Retry-After.

const { t, p } = useProject({
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_BACKOFF_BASE_MS: "60000",
  WEBHOOK_TIMEOUT_MS: "2000",
});
const rx = useReceiver();

const HOOK = "/hooks/" + "x1".repeat(13); // a 26-character incoming-webhook id
const base = () => `/v1/projects/${p.projectId}/webhooks`;
const owner = () => ({ cookie: p.owner.cookie });
const deliveries = async (id: string) => (await t.rest.get(`${base()}/${id}/deliveries`, owner())).body.data;

describe("mattermost webhooks: management", () => {
  it("takes an incoming-webhook URL (also under a path), has no secret, and refuses other URLs naming url", async () => {
    for (const url of [rx.url + HOOK, rx.url + "/chat" + HOOK]) {
      const c = await t.rest.post(base(), { type: "mattermost", url, events: ["deploy"] }, owner());
      assert.equal(c.status, 201, c.text);
      assert.equal(c.body.data.type, "mattermost");
      assert.equal(c.body.data.secret, null);
    }
    for (const url of [
      rx.url + "/hooks/short",
      rx.url + HOOK + "/extra",
      rx.url + "/hooks/" + "X1".repeat(13),
      rx.url + "/api/webhooks/1/abc",
    ]) {
      const r = await t.rest.post(base(), { type: "mattermost", url, events: ["deploy"] }, owner());
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.ok(
        (e.details as { field: string }[]).some((d) => d.field === "url"),
        JSON.stringify(e.details),
      );
    }
    const c = await t.rest.post(base(), { type: "mattermost", url: rx.url + HOOK, events: ["deploy"] }, owner());
    const patchUrl = await t.rest.patch(`${base()}/${c.body.data.id}`, { url: rx.url + "/elsewhere" }, owner());
    assert.equal(patchUrl.status, 400, patchUrl.text);
    assert.equal(errorBody(patchUrl).code, "validation_failed");
    const rotate = await t.rest.patch(`${base()}/${c.body.data.id}`, { rotateSecret: true }, owner());
    assert.equal(rotate.status, 400, rotate.text);
  });
});

describe("mattermost webhooks: deliveries", () => {
  it("posts a Slack-style message within the limits, unsigned, and honours a 429's Retry-After", async () => {
    const path = "/m1" + HOOK;
    const url = rx.on(path, (_r, n) =>
      n === 1 ? { status: 429, headers: { "retry-after": "1" }, body: "rate limited" } : { status: 200, body: "ok" },
    );
    const c = await t.rest.post(base(), { type: "mattermost", url, events: ["big.event"] }, owner());
    assert.equal(c.status, 201, c.text);
    const data: Record<string, string> = {};
    for (let i = 0; i < 40; i++) data[`key_${i}_${"k".repeat(300)}`] = "v".repeat(2000);
    const ev = await t.rest.post("/v1/events", { type: "big.event", userId: "u1", data }, { key: p.key });
    assert.equal(ev.status, 202, ev.text);
    const d = await waitFor(async () => {
      const x = (await deliveries(c.body.data.id))[0];
      return x?.status === "succeeded" ? x : undefined;
    }, "mattermost delivery after the 429");
    assert.deepEqual(
      d.attempts.map((x: { statusCode: number }) => x.statusCode),
      [429, 200],
    );
    const gap = Date.parse(d.attempts[1].at) - Date.parse(d.attempts[0].at);
    assert.ok(gap >= 900 && gap < 30_000, `second attempt ${gap} ms after the first`);
    const reqs = rx.at(path);
    assert.equal(reqs.length, 2);
    assert.equal(reqs[1].headers["content-type"], "application/json");
    assert.equal(reqs[1].headers["x-vigil-signature"], undefined);
    const m = JSON.parse(reqs[1].raw);
    assert.deepEqual(Object.keys(m).sort(), ["attachments", "text", "username"]);
    assert.equal(m.username, "Vigil");
    assert.equal(m.text, `**big.event** in project \`${p.projectId}\``);
    assert.equal(m.attachments.length, 1);
    const a = m.attachments[0];
    assert.equal(a.title, "big.event");
    assert.equal(a.color, "#5b5bd6");
    assert.ok(a.text.startsWith("```json\n") && a.text.endsWith("\n```"));
    assert.ok(a.text.length <= MATTERMOST_LIMITS.attachmentText, `attachment text ${a.text.length}`);
    assert.equal(a.fields.length, MATTERMOST_LIMITS.fields);
    assert.deepEqual(a.fields[0], { title: "userId", value: "u1", short: true });
    for (const f of a.fields) assert.ok(f.title.length <= 256 && f.value.length <= 1024);
    assert.match(a.footer, new RegExp(`^Vigil · project ${p.projectId} · delivery ${d.id}$`));
    assert.equal(typeof a.ts, "number");
  });

  it("notifies a monitor going down and recovering, red then green", async () => {
    const path = "/m2" + HOOK;
    const url = rx.on(path, () => ({ status: 200, body: "ok" }));
    const c = await t.rest.post(
      base(),
      { type: "mattermost", url, events: ["incident.started", "incident.recovered"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    const hb = (status: "up" | "down") =>
      t.rest.post(
        `/v1/projects/${p.projectId}/heartbeats/checkout-worker`,
        { status, expectedIntervalMs: 60_000, gracePeriodMs: 0 },
        { key: p.key },
      );
    assert.ok((await hb("up")).status < 300);
    assert.ok((await hb("down")).status < 300);
    assert.ok((await hb("up")).status < 300);
    // Two deliveries, each on its own schedule (and workflow, with Temporal): either may arrive first.
    const got = await waitFor(() => (rx.at(path).length >= 2 ? rx.at(path) : undefined), "two incident messages");
    const messages = got.map((r) => JSON.parse(r.raw));
    assert.equal(messages.length, 2);
    const down = messages.find((m) => m.attachments[0].color === "#e5484d");
    const up = messages.find((m) => m.attachments[0].color === "#30a46c");
    assert.ok(down && up, JSON.stringify(messages.map((m) => m.text)));
    assert.equal(down.text, "**🔴 Down: checkout-worker**");
    assert.equal(down.attachments[0].color, "#e5484d");
    assert.ok(down.attachments[0].fields.some((f: { title: string }) => f.title === "incidentId"));
    assert.equal(up.text, "**🟢 Recovered: checkout-worker**");
    assert.equal(up.attachments[0].color, "#30a46c");
  });
});

describe("mattermostMessage (pure)", () => {
  it("cuts every part to its limit, never splitting a surrogate pair", () => {
    const m = mattermostMessage({
      id: "whd_1",
      type: "😀".repeat(3000),
      createdAt: "2026-01-01T00:00:00.000Z",
      projectId: "prj_1",
      data: { data: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, "é".repeat(5000)])) },
    });
    assert.ok(m.text.length <= MATTERMOST_LIMITS.text);
    const a = m.attachments[0];
    assert.ok(a.title.length <= MATTERMOST_LIMITS.title && a.title.endsWith("…"));
    assert.ok(!/[\uD800-\uDBFF]…$/.test(a.title));
    assert.ok((a.text ?? "").length <= MATTERMOST_LIMITS.attachmentText);
    assert.equal(a.fields.length, MATTERMOST_LIMITS.fields);
    assert.ok(a.fields.every((f) => f.value.length <= MATTERMOST_LIMITS.fieldValue));
    assert.equal(a.ts, 1767225600);
  });
});
