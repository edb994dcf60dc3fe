import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useProject } from "../helpers/use.js";
import { useReceiver, waitFor } from "./receiver.js";

// Chat messages never ping anyone (issue #29, point 12): a monitor named with every kind of mention
// goes down, and the Discord and Mattermost messages posted to the real local receiver carry the
// name as text that cannot notify: Discord's `allowed_mentions: {parse: []}`, Mattermost's mentions
// broken by a zero-width space after `@` (docs/webhooks.md "Mentions").

const { t, p } = useProject({
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_BACKOFF_BASE_MS: "60000",
  WEBHOOK_TIMEOUT_MS: "2000",
});
const rx = useReceiver();

const NAME = "@everyone @here <@&1234567> @channel @all @alice";
const MENTION = /@(everyone|here|channel|all|alice)\b/;
const owner = () => ({ cookie: p.owner.cookie });

/** Every string in a JSON value. */
function strings(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(strings);
  if (v && typeof v === "object") return Object.values(v).flatMap(strings);
  return [];
}

describe("chat messages never ping", () => {
  it("a monitor named with mentions: Discord allows none, Mattermost's are inert", async () => {
    const discord = rx.on("/api/webhooks/1/mentions", () => ({ status: 204 }));
    const mattermost = rx.on("/hooks/" + "m1".repeat(13), () => ({ status: 200, body: "ok" }));
    const events = ["incident.started", "mention.event"];
    for (const [type, url] of [
      ["discord", discord],
      ["mattermost", mattermost],
    ]) {
      const c = await t.rest.post(`/v1/projects/${p.projectId}/webhooks`, { type, url, events }, owner());
      assert.equal(c.status, 201, c.text);
    }
    const m = await t.rest.post(
      `/v1/projects/${p.projectId}/monitors`,
      { name: NAME, slug: "pinger", expectedIntervalMs: 60_000, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.equal(m.status, 201, m.text);
    const hb = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/pinger`,
      { status: "down", expectedIntervalMs: 60_000, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.ok(hb.status < 300, hb.text);
    // An event whose data holds mentions too (keys and values).
    const ev = await t.rest.post(
      "/v1/events",
      { type: "mention.event", userId: "@here", data: { "@channel": NAME } },
      { key: p.key },
    );
    assert.equal(ev.status, 202, ev.text);

    const posted = (path: string) =>
      waitFor(() => (rx.at(new URL(path).pathname).length >= 2 ? rx.at(new URL(path).pathname) : undefined), path);
    const d = (await posted(discord)).map((r) => JSON.parse(r.raw));
    for (const msg of d) {
      assert.deepEqual(msg.allowed_mentions, { parse: [] }, JSON.stringify(msg));
    }
    const down = d.find((msg) => msg.embeds[0].title.includes("Down"));
    assert.ok(down, JSON.stringify(d));
    // Discord shows the name as written; allowed_mentions is what keeps it from pinging.
    assert.ok(down.content.includes(NAME), down.content);

    const mm = (await posted(mattermost)).map((r) => JSON.parse(r.raw));
    const mmDown = mm.find((msg) => msg.attachments[0].title.includes("Down"));
    assert.ok(mmDown, JSON.stringify(mm));
    assert.equal(mmDown.text, `**🔴 Down: ${NAME.replace(/@(?=\w)/g, "@\u200B")}**`);
    for (const msg of mm)
      for (const s of strings(msg)) assert.ok(!MENTION.test(s), `a live mention in ${JSON.stringify(s)}`);
    const mmEvent = mm.find((msg) => msg.attachments[0].title === "mention.event");
    assert.ok(mmEvent, JSON.stringify(mm));
    assert.ok(mmEvent.attachments[0].text.includes("@\u200Bchannel"), mmEvent.attachments[0].text);
  });
});
