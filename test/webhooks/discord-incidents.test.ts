import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { Receiver, waitFor } from "./receiver.js";

// Discord deliveries (limits, 429 retry_after) and incident notifications with TWO service
// instances on one database, both running their schedulers. The backoff base is a minute, so any
// quick retry here can only come from the receiver's retry_after.

const env = { WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_BACKOFF_BASE_MS: "60000", WEBHOOK_TIMEOUT_MS: "2000" };
let a: TestApp;
let b: TestApp;
let p: ProjectFixture;
let rx: Receiver;

before(async () => {
  a = await startTestApp(env);
  b = await startTestApp(env, { databaseUrl: a.databaseUrl });
  p = await project(a.rest);
  rx = await Receiver.start();
});
after(async () => {
  await a.close();
  await b.close();
  await rx.close();
});

const owner = () => ({ cookie: p.owner.cookie });
async function deliveries(webhookId: string) {
  return (await a.rest.get(`/v1/projects/${p.projectId}/webhooks/${webhookId}/deliveries`, owner())).body.data;
}

describe("discord deliveries", () => {
  it("posts {content, embeds} within Discord's limits and honours a 429 retry_after", async () => {
    const url = rx.on("/api/webhooks/123/tok", (_r, n) =>
      n === 1
        ? {
            status: 429,
            headers: { "content-type": "application/json", "retry-after": "1" },
            body: JSON.stringify({ message: "You are being rate limited.", retry_after: 0.25, global: false }),
          }
        : { status: 204 },
    );
    const c = await a.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { type: "discord", url, events: ["big.event"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    const data: Record<string, string> = {};
    for (let i = 0; i < 40; i++) data[`key_${i}_${"k".repeat(300)}`] = "v".repeat(2000);
    const ev = await a.rest.post("/v1/events", { type: "big.event", userId: "u".repeat(250), data }, { key: p.key });
    assert.equal(ev.status, 202, ev.text);
    const d = await waitFor(async () => {
      const x = (await deliveries(c.body.data.id))[0];
      return x?.status === "succeeded" ? x : undefined;
    }, "discord delivery after the 429");
    assert.deepEqual(
      d.attempts.map((x: any) => x.statusCode),
      [429, 204],
    );
    // the second attempt followed retry_after (0.25 s), not the one-minute backoff
    assert.ok(Date.parse(d.attempts[1].at) - Date.parse(d.attempts[0].at) < 30_000);
    const reqs = rx.at("/api/webhooks/123/tok");
    assert.equal(reqs.length, 2);
    const m = JSON.parse(reqs[1].raw);
    assert.deepEqual(Object.keys(m).sort(), ["allowed_mentions", "content", "embeds", "username"]);
    assert.deepEqual(m.allowed_mentions, { parse: [] });
    assert.equal(reqs[1].headers["x-vigil-signature"], undefined);
    assert.ok(m.content.length <= 2000 && m.embeds.length >= 1 && m.embeds.length <= 10);
    let total = 0;
    for (const e of m.embeds) {
      assert.ok(
        e.title.length <= 256 &&
          (e.description ?? "").length <= 4096 &&
          e.footer.text.length <= 2048 &&
          e.author.name.length <= 256,
      );
      assert.ok(e.fields.length <= 25);
      for (const f of e.fields) assert.ok(f.name.length <= 256 && f.value.length <= 1024);
      total +=
        e.title.length +
        (e.description ?? "").length +
        e.footer.text.length +
        e.author.name.length +
        e.fields.reduce((n: number, f: any) => n + f.name.length + f.value.length, 0);
    }
    assert.ok(total <= 6000, `embed characters ${total}`);
    assert.equal(m.embeds[0].title, "big.event");
  });
});

describe("incident notifications with two instances", () => {
  it("each opening and each recovery is delivered exactly once per webhook", async () => {
    const url = rx.on("/incidents", () => ({ status: 200 }));
    const other = rx.on("/incidents-2", () => ({ status: 200 }));
    for (const u of [url, other]) {
      const c = await a.rest.post(
        `/v1/projects/${p.projectId}/webhooks`,
        { url: u, events: ["incident.started", "incident.recovered"] },
        owner(),
      );
      assert.equal(c.status, 201, c.text);
    }
    const hb = async (app: TestApp, status: "up" | "down", expectedIntervalMs = 60_000) => {
      const r = await app.rest.post(
        `/v1/projects/${p.projectId}/heartbeats/api`,
        { status, expectedIntervalMs, gracePeriodMs: 0 },
        { key: p.key },
      );
      assert.ok(r.status >= 200 && r.status < 300, r.text);
    };
    // cycle 1: explicit down and up heartbeats, alternating instances
    await hb(a, "up");
    await hb(b, "down");
    await hb(a, "up");
    // cycle 2: a short deadline passes (both instances watch it), then a heartbeat recovers it
    await hb(a, "up", 300);
    await waitFor(
      () => rx.at("/incidents").filter((r) => JSON.parse(r.raw).type === "incident.started").length >= 2,
      "deadline incident",
      15_000,
    );
    await hb(b, "up");
    await waitFor(
      () => rx.at("/incidents").length >= 4 && rx.at("/incidents-2").length >= 4,
      "4 notifications per webhook",
      15_000,
    );
    // nothing more arrives (bounded wait for stragglers)
    await new Promise((r) => setTimeout(r, 700));
    for (const path of ["/incidents", "/incidents-2"]) {
      const got = rx.at(path).map((r) => JSON.parse(r.raw));
      assert.deepEqual(
        got.map((g) => g.type).sort(),
        ["incident.recovered", "incident.recovered", "incident.started", "incident.started"],
        path,
      );
      assert.equal(new Set(got.map((g) => g.id)).size, 4);
      assert.equal(new Set(rx.at(path).map((r) => r.headers["x-vigil-event-id"])).size, 4);
      assert.ok(got[0].data.incident && got[0].data.monitor, "data carries the incident and its monitor");
    }
  });
});
