// What a newcomer found in the dashboard (issue #29, point 20), each shown in a real browser over a
// real Vigil: a per-day bar chart whose y-axis starts at 0; a resolved incident's title; the webhook
// signing secret's words; the webhook kinds read from the server (Mattermost included); a monitor
// without heartbeats showing no uptime figure (API and screen); the private-target refusal naming
// WEBHOOK_ALLOW_PRIVATE. (A fresh server's sign-up: first-run.test.ts.)
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useDashboard } from "../helpers/dashboard.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard();

const DAY = 86_400_000;
const base = () => `/v1/projects/${p.projectId}`;

describe("dashboard: a newcomer's findings (#29/20)", () => {
  it("draws a per-day bar chart from 0: 43 events look a third of 131", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const today = Math.floor(Date.now() / DAY) * DAY;
    const day = (d: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({
        type: "page_view",
        timestamp: new Date(today - d * DAY + 12 * 3_600_000 + i * 1000).toISOString(),
      }));
    const r = await t.rest.post("/v1/events/batch", { events: [...day(2, 43), ...day(1, 131)] }, { key: p.key });
    assert.equal(r.body?.data?.accepted, 174, r.text);

    const { context, page } = await dash.open(p.owner);
    const from = new Date(today - 2 * DAY).toISOString();
    const to = new Date(today - 1000).toISOString();
    await page.goto(
      `/projects/${p.projectId}/analytics?interval=day&range=custom&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
    );
    const chart = page.locator(".chart[data-rendered]");
    await chart.waitFor();
    assert.equal(await chart.getAttribute("data-rendered"), "2", "the two days, both non-zero");
    assert.equal(await chart.getAttribute("data-y-min"), "0", "the bars' axis starts at 0");
    await chart.scrollIntoViewIfNeeded();
    await dash.screenshot(page, "day-bars-from-zero");
    await context.close();
  });

  it("titles a resolved untitled incident '<monitor> was down'", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const m = await t.rest.post(
      `${base()}/monitors`,
      { name: "Nightly backup", slug: "nightly-backup", expectedIntervalMs: 3_600_000 },
      { key: p.key },
    );
    assert.equal(m.status, 201, m.text);
    for (const status of ["down", "up"]) {
      const hb = await t.rest.post(`${base()}/heartbeats/nightly-backup`, { status }, { key: p.key });
      assert.ok(hb.status < 300, hb.text);
    }
    const incidents = await t.rest.get(`${base()}/monitors/${m.body.data.id}/incidents`, { key: p.key });
    assert.equal(incidents.body.data[0]?.status, "resolved", incidents.text);

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/uptime/${m.body.data.id}`);
    await page.getByRole("heading", { name: "Nightly backup was down", exact: true }).waitFor();
    assert.equal(await page.getByText("is was down").count(), 0);
    await context.close();
  });

  it("shows no uptime figure for a monitor that never received a heartbeat (API: null)", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const m = await t.rest.post(
      `${base()}/monitors`,
      { name: "Never heard", slug: "never-heard", expectedIntervalMs: 60_000 },
      { key: p.key },
    );
    assert.equal(m.status, 201, m.text);
    const id = m.body.data.id;
    const stats = await t.rest.get(`${base()}/monitors/${id}/stats`, { key: p.key });
    assert.equal(stats.status, 200, stats.text);
    assert.equal(stats.body.data.uptimePercentage, null, stats.text);
    const overview = await t.rest.get(`${base()}/monitors/overview`, { key: p.key });
    const mine = overview.body.data.find((o: { id: string }) => o.id === id);
    assert.equal(mine.uptimePercentage24h, null, overview.text);

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/uptime`);
    const card = page
      .getByRole("list", { name: "Monitors" })
      .getByRole("listitem")
      .filter({ has: page.getByRole("heading", { name: "Never heard", exact: true }) });
    const fact = card.locator("dt", { hasText: "Uptime 24 h" }).locator("xpath=following-sibling::dd");
    await fact.waitFor();
    assert.equal((await fact.textContent())?.trim(), "—");
    await page.goto(`/projects/${p.projectId}/uptime/${id}`);
    await page.getByText("no data: no heartbeat in this period yet").waitFor();
    const stat = page.locator("dl.stats dt", { hasText: /^Uptime$/ }).locator("xpath=following-sibling::dd[1]");
    assert.equal((await stat.textContent())?.trim(), "—");
    assert.equal(await page.getByText("100 %").count(), 0);
    await context.close();
  });

  it("offers the server's webhook types (Mattermost too) instead of a list of its own", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // The server's table of targets, over REST, for any signed-in session.
    const types = await t.rest.get("/v1/webhook-types", { cookie: p.owner.cookie });
    assert.equal(types.status, 200, types.text);
    assert.deepEqual(types.body.data, [
      { type: "http", signed: true, address: "url", available: true },
      { type: "discord", signed: false, address: "url", available: true },
      { type: "slack", signed: false, address: "url", available: true },
      { type: "mattermost", signed: false, address: "url", available: true },
      // No SMTP_URL in this app: email is listed, as not available here.
      { type: "email", signed: false, address: "to", available: false },
      { type: "pagerduty", signed: false, address: "routingKey", available: true },
    ]);
    assert.equal((await t.rest.get("/v1/webhook-types")).status, 401);

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/webhooks`);
    await page.getByRole("button", { name: "New webhook" }).click();
    const form = page.getByRole("form", { name: "New webhook" });
    await form.getByLabel("Kind").locator("option").first().waitFor({ state: "attached" });
    const kinds = await form.getByLabel("Kind").locator("option").allTextContents();
    assert.deepEqual(kinds, [
      "HTTP endpoint (signed JSON POST)",
      "Discord channel",
      "Slack channel",
      "Mattermost channel",
      "Email (not set up on this server)",
      "PagerDuty service",
    ]);
    // A Mattermost webhook made from the form (a public IP literal: no lookup) is listed under its kind.
    await form.getByLabel("Kind").selectOption("mattermost");
    await form.getByLabel("Name").fill("Team chat");
    await form.getByLabel("Mattermost webhook URL").fill("https://93.184.216.34/hooks/abcdefghijklmnopqrstuvwxyz");
    await form.getByLabel("Another event type").fill("deploy.finished");
    await form.getByLabel("Another event type").press("Enter");
    await form.getByRole("button", { name: "Create webhook" }).click();
    await page.getByRole("row").filter({ hasText: "Team chat" }).getByText("Mattermost", { exact: true }).waitFor();
    const listed = await t.rest.get(`${base()}/webhooks`, { cookie: p.owner.cookie });
    assert.ok(
      listed.body.data.some((w: { name: string; type: string }) => w.name === "Team chat" && w.type === "mattermost"),
      listed.text,
    );
    // A PagerDuty webhook: the form asks for the field the server names for the kind (routingKey), not a URL.
    await page.getByRole("button", { name: "New webhook" }).click();
    await form.getByLabel("Kind").locator("option").first().waitFor({ state: "attached" });
    await form.getByLabel("Kind").selectOption("pagerduty");
    await form.getByLabel("Name").fill("On-call");
    await form.getByLabel("Integration key").fill("abcdefghijklmnopqrstuvwxyz012345");
    await form.getByLabel("Another event type").fill("deploy.failed");
    await form.getByLabel("Another event type").press("Enter");
    await form.getByRole("button", { name: "Create webhook" }).click();
    await page.getByRole("row").filter({ hasText: "On-call" }).getByText("…2345").waitFor();
    const paged = (await t.rest.get(`${base()}/webhooks`, { cookie: p.owner.cookie })).body.data.find(
      (w: { name: string }) => w.name === "On-call",
    );
    assert.deepEqual([paged?.type, paged?.routingKey, paged?.url ?? null], ["pagerduty", "…2345", null]);
    await context.close();
  });

  it("refuses a private target naming WEBHOOK_ALLOW_PRIVATE, over REST and under the URL field", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const refused = await t.rest.post(
      `${base()}/webhooks`,
      { url: "http://127.0.0.1:9/hook", events: ["order.paid"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.error.message, /WEBHOOK_ALLOW_PRIVATE=true/);
    assert.match(refused.body.error.details[0].message, /WEBHOOK_ALLOW_PRIVATE=true/);

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/webhooks`);
    await page.getByRole("button", { name: "New webhook" }).click();
    const form = page.getByRole("form", { name: "New webhook" });
    await form.getByLabel("Endpoint URL").fill("http://127.0.0.1:9/hook");
    await form.getByLabel("Another event type").fill("order.paid");
    await form.getByLabel("Another event type").press("Enter");
    await form.getByRole("button", { name: "Create webhook" }).click();
    await form.getByText(/WEBHOOK_ALLOW_PRIVATE=true/).waitFor();
    await context.close();
  });

  it("says a webhook's signing secret is kept to sign (not 'only a hash'), an API key's that only its hash is", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/webhooks`);
    await page.getByRole("button", { name: "New webhook" }).click();
    const form = page.getByRole("form", { name: "New webhook" });
    await form.getByLabel("Name").fill("Orders");
    await form.getByLabel("Endpoint URL").fill("https://93.184.216.34/hook");
    await form.getByLabel("Another event type").fill("order.paid");
    await form.getByLabel("Another event type").press("Enter");
    await form.getByRole("button", { name: "Create webhook" }).click();
    const secret = page.locator("section.secret");
    await secret.getByTestId("secret").waitFor();
    const words = (await secret.textContent()) ?? "";
    assert.match(words, /keeps it to sign each delivery/);
    assert.doesNotMatch(words, /only a hash/);
    await page.getByRole("button", { name: "Done" }).click();

    // An API key is still said to be kept as a hash only (which it is).
    await page.goto(`/projects/${p.projectId}/keys`);
    await page.getByLabel("Key name").fill("server");
    await page.getByRole("button", { name: "Create key" }).click();
    await page
      .locator("section.secret")
      .getByText(/stores only a hash/)
      .waitFor();
    await context.close();
    assert.deepEqual(pageErrors, []);
  });
});
