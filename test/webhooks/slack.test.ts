import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorBody } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { SLACK_LIMITS, slackMessage } from "../../src/webhooks/targets/slack.js";
import { slackProblems } from "./formats.js";
import { useReceiver, waitFor, type Received } from "./receiver.js";

// `slack` webhooks (decisions.md "Notification channels"; docs/webhooks.md "Slack"): the hook-URL
// rule, Block Kit in an attachment coloured by state, links, Slack's own answers recorded, against
// a local receiver that checks Slack's documented format (formats.ts) and answers as Slack does.
// Both runners (`npm test -- --temporal` too).

const { t, p } = useProject({
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_BACKOFF_BASE_MS: "60000",
  WEBHOOK_TIMEOUT_MS: "2000",
  PUBLIC_URL: "https://vigil.example.com",
});
const rx = useReceiver();

/** Bound of a wait for a delivery: generous, for a loaded machine running Temporal (no speed is asserted). */
const WAIT_MS = 30_000;

const base = () => `/v1/projects/${p.projectId}/webhooks`;
const owner = () => ({ cookie: p.owner.cookie });
const deliveries = async (id: string) => (await t.rest.get(`${base()}/${id}/deliveries`, owner())).body.data;

/** Slack's answers: 400 invalid_blocks for a message its format refuses, else 200 ok. */
const slack = (r: Received) => {
  const problems = slackProblems(JSON.parse(r.raw));
  return problems.length
    ? { status: 400, body: `invalid_blocks: ${problems.join("; ")}` }
    : { status: 200, body: "ok" };
};

describe("slack webhooks: management", () => {
  it("takes an incoming-webhook URL (any public host), has no secret, and refuses other URLs naming url", async () => {
    const c = await t.rest.post(
      base(),
      { type: "slack", url: rx.url + "/services/T0001/B0001/abcdEFGH1234", events: ["deploy"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    assert.equal(c.body.data.type, "slack");
    assert.equal(c.body.data.secret, null);
    for (const url of [rx.url + "/services/T0001/B0001", rx.url + "/hooks/abc", rx.url + "/services/T0001/B0001/x/y"]) {
      const r = await t.rest.post(base(), { type: "slack", url, events: ["deploy"] }, owner());
      assert.equal(r.status, 400, `${url}: ${r.text}`);
      assert.ok((errorBody(r).details as { field: string }[]).some((d) => d.field === "url"));
    }
    const r = await t.rest.post(base(), { type: "slack", to: ["a@example.com"], events: ["deploy"] }, owner());
    assert.equal(r.status, 400, r.text);
  });
});

describe("slack webhooks: deliveries", () => {
  it("posts a monitor going down and recovering as valid Block Kit, red then green, with links", async () => {
    const path = "/services/T0001/B0002/incidents";
    const url = rx.on(path, slack);
    const c = await t.rest.post(
      base(),
      { type: "slack", url, events: ["incident.started", "incident.recovered"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    // A monitor whose name (tenant text) is a Slack mention.
    const mon = await t.rest.post(
      `/v1/projects/${p.projectId}/monitors`,
      { name: "<!channel> db", slug: "billing-db", expectedIntervalMs: 60_000, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.equal(mon.status, 201, mon.text);
    const hb = (status: "up" | "down") =>
      t.rest.post(
        `/v1/projects/${p.projectId}/heartbeats/billing-db`,
        { status, expectedIntervalMs: 60_000, gracePeriodMs: 0 },
        { key: p.key },
      );
    for (const s of ["up", "down", "up"] as const) assert.ok((await hb(s)).status < 300);
    const got = await waitFor(
      () => (rx.at(path).length >= 2 ? rx.at(path) : undefined),
      "two incident messages",
      WAIT_MS,
    );
    const messages = got.map((r) => JSON.parse(r.raw));
    for (const m of messages) assert.deepEqual(slackProblems(m), []);
    const down = messages.find((m) => m.attachments[0].color === "#e5484d");
    const up = messages.find((m) => m.attachments[0].color === "#30a46c");
    assert.ok(down && up, JSON.stringify(messages));
    // The monitor's name is tenant text: escaped, so `<!channel>` notifies no one.
    assert.equal(down.text, "🔴 Down: &lt;!channel&gt; db");
    assert.equal(up.text, "🟢 Recovered: &lt;!channel&gt; db");
    const blocks = down.attachments[0].blocks;
    assert.deepEqual(blocks[0], {
      type: "header",
      text: { type: "plain_text", text: "🔴 Down: <!channel> db", emoji: true },
    });
    const fields = blocks.find((b: { fields?: unknown }) => b.fields).fields.map((f: { text: string }) => f.text);
    assert.ok(
      fields.some((f: string) => /^\*incidentId\*\ninc_/.test(f)),
      JSON.stringify(fields),
    );
    const actions = blocks.find((b: { type: string }) => b.type === "actions");
    assert.match(
      actions.elements[0].url,
      new RegExp(`^https://vigil\\.example\\.com/projects/${p.projectId}/uptime/mon_`),
    );
    const ds = await waitFor(
      async () => {
        const list = await deliveries(c.body.data.id);
        return list.length === 2 && list.every((d: { status: string }) => d.status === "succeeded") ? list : undefined;
      },
      "both deliveries succeeded",
      WAIT_MS,
    );
    for (const d of ds) assert.deepEqual([d.attempts[0].statusCode, d.attempts[0].responseBody], [200, "ok"]);
  });

  it("posts a large event within Slack's limits, and records Slack's own refusal", async () => {
    const path = "/services/T0001/B0003/events";
    const url = rx.on(path, slack);
    const c = await t.rest.post(base(), { type: "slack", url, events: ["big.event"] }, owner());
    assert.equal(c.status, 201, c.text);
    const data: Record<string, string> = {};
    for (let i = 0; i < 40; i++) data[`key_${i}_${"k".repeat(300)}`] = "<v> & ".repeat(500);
    assert.equal(
      (await t.rest.post("/v1/events", { type: "big.event", userId: "u1", data }, { key: p.key })).status,
      202,
    );
    const r = await waitFor(() => rx.at(path)[0], "the event message", WAIT_MS);
    const m = JSON.parse(r.raw);
    assert.deepEqual(slackProblems(m), []);
    assert.equal(m.text, `big.event in project ${p.projectId}`);
    assert.equal(m.attachments[0].color, "#5b5bd6");
    assert.equal(r.headers["x-vigil-signature"], undefined);

    const gone = rx.on("/services/T0001/B0004/gone", () => ({ status: 404, body: "channel_not_found" }));
    const g = await t.rest.post(base(), { type: "slack", url: gone, events: ["x"] }, owner());
    await t.rest.post(`${base()}/${g.body.data.id}/test`, {}, owner());
    const d = await waitFor(
      async () => (await deliveries(g.body.data.id))[0]?.attempts[0],
      "the refused attempt",
      WAIT_MS,
    );
    assert.deepEqual([d.statusCode, d.error, d.responseBody], [404, "HTTP 404", "channel_not_found"]);
  });
});

describe("slackMessage (pure)", () => {
  it("keeps every part within Block Kit's limits, never cutting an escape in half", () => {
    const m = slackMessage(
      {
        id: "whd_1",
        type: "<".repeat(5000),
        createdAt: "2026-01-01T00:00:00.000Z",
        projectId: "prj_1",
        data: { data: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, "&".repeat(5000)])) },
      },
      { dashboard: "https://vigil.example.com/projects/prj_1/events" },
    );
    assert.deepEqual(slackProblems(m), []);
    assert.ok(m.text.length <= SLACK_LIMITS.text);
    const fields = m.attachments[0].blocks.find((b) => b.type === "section" && b.fields);
    assert.ok(fields && fields.type === "section" && fields.fields!.length === SLACK_LIMITS.fields);
    for (const f of fields.fields!) assert.ok(!/&[a-z]*…$/.test(f.text), f.text.slice(-12));
  });
});
