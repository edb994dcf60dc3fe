// The alerts screen in a real browser over latency points recorded over REST: a rule written in the
// editor, its preview drawing the series, the threshold and resolve lines and the incidents the rule
// would have opened; saved, listed with its state and last value, and its page showing the incident
// that live evaluation (the embedded scheduler, every 10 s) opened.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useDashboard } from "../helpers/dashboard.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard();

const MIN = 60_000;

async function record(points: { value: number; timestamp: string }[]) {
  const r = await t.rest.post(
    `/v1/projects/${p.projectId}/metrics/batch`,
    { metrics: points.map((m) => ({ type: "measurement", name: "api.latency", unit: "ms", ...m })) },
    { key: p.key },
  );
  assert.equal(r.status, 201, r.text);
}

describe("dashboard: alerts", () => {
  it("previews a ratio of two event counts, filtered with the filter builder, under its minimum sample", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // The last hour, two requests a minute; both fail from 30 to 20 minutes ago.
    const now = Date.now();
    const events = Array.from({ length: 120 }, (_, i) => {
      const k = Math.floor(i / 2);
      return {
        type: "http.request",
        timestamp: new Date(now - k * MIN - 2000 - (i % 2) * 1000).toISOString(),
        data: { status: k >= 20 && k <= 30 ? 503 : 200 },
      };
    });
    const sent = await t.rest.post("/v1/events/batch", { events }, { key: p.key });
    assert.equal(sent.body.data?.accepted, events.length, sent.text);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/alerts?new=1&range=1h`);
    await page.getByLabel("Source").selectOption("ratio");
    // A rule complete enough to save before the filter is applied (Apply must not save it).
    await page.getByLabel("Name", { exact: true }).fill("Error ratio");
    await page.getByLabel("Threshold", { exact: true }).fill("0.3");
    // The numerator: requests with a status of 500 or more (the filter builder, applied in place:
    // its Apply does not submit the editor).
    const numerator = page.getByRole("group", { name: "Numerator events" });
    await numerator.getByRole("button", { name: "+ Condition" }).click();
    await numerator.getByLabel("Field", { exact: true }).fill("data.status");
    await numerator.getByLabel("Operator").selectOption("gte");
    const valueType = numerator.getByLabel("Value type");
    if (await valueType.count()) await valueType.selectOption("number");
    await numerator.getByLabel("Value", { exact: true }).fill("500");
    await numerator.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/data\.status/);
    await page.getByLabel("Minimum sample (denominator events)").fill("5");
    const chart = page.locator('[aria-label="Preview: value, threshold and incidents"]');
    await page
      .getByTestId("preview-summary")
      .filter({ hasText: /^1 incident over 6[01] evaluations/ })
      .waitFor();
    assert.equal(await chart.getAttribute("data-bands"), "1");
    // Under a minimum sample no 5-minute window reaches, every evaluation is no data: no incident.
    await page.getByLabel("Minimum sample (denominator events)").fill("1000");
    await page
      .getByTestId("preview-summary")
      .filter({ hasText: /^0 incidents over (6[01]) evaluations \(\1 without data\)$/ })
      .waitFor();
    // Nothing was saved along the way.
    const list = await t.rest.get(`/v1/projects/${p.projectId}/alerts`, { key: p.key });
    assert.deepEqual(list.body.data, []);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("writes a rule with a preview, saves it, lists it with its state and shows the incident it opened", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // The last hour, a point a minute: 100 ms, but 600 ms from 45 to 35 minutes ago and in the last
    // 3 minutes. A 5-minute average above 300 fires; below 200 resolves.
    const now = Date.now();
    await record(
      Array.from({ length: 60 }, (_, k) => ({
        value: (k >= 35 && k <= 45) || k <= 2 ? 600 : 100 + ((k * 7) % 30),
        timestamp: new Date(now - k * MIN - 1000).toISOString(),
      })),
    );
    const { context, page } = await dash.open(p.owner, { width: 1280, height: 1150 });
    await page.goto(`/projects/${p.projectId}/alerts`);
    await page.getByRole("heading", { name: "No alerts yet" }).waitFor();
    await page.getByRole("button", { name: "New alert" }).click();
    await page.waitForURL(/new=1/);
    await page.getByLabel("Name", { exact: true }).fill("Slow API");
    await page.getByLabel("Metric", { exact: true }).fill("api.latency");
    await page.getByLabel("Aggregation").selectOption("avg");
    await page.getByLabel("Threshold", { exact: true }).fill("300");
    await page.getByLabel("Window", { exact: true }).fill("5m");
    await page.getByLabel("Every", { exact: true }).fill("10s");
    await page.getByLabel("Resolve at another threshold").check();
    await page.getByLabel("Resolve threshold", { exact: true }).fill("200");
    await page.getByLabel("Time range").selectOption("1h");
    // The draft is in the URL.
    await page.waitForURL(/draft=.*range=1h|range=1h.*draft=/);
    assert.match(decodeURIComponent(page.url()), /"metric":"api.latency"/);

    // The preview: the series with its threshold and resolve lines, and the incidents as bands.
    const chart = page.locator('[aria-label="Preview: value, threshold and incidents"][data-rendered]');
    await page
      .locator('[aria-label="Preview: value, threshold and incidents"][data-rendered]:not([data-bands="0"])')
      .waitFor();
    assert.ok(Number(await chart.getAttribute("data-rendered")) >= 360);
    const bands = Number(await chart.getAttribute("data-bands"));
    assert.ok(bands >= 1, `bands: ${bands}`);
    await page.getByText("Threshold > 300").waitFor();
    await page.getByText("Resolve < 200").waitFor();
    const summary = await page.getByTestId("preview-summary").innerText();
    assert.match(summary, new RegExp(`^${bands} incidents? over \\d+ evaluations`));
    assert.equal(await page.getByRole("list", { name: "Preview incidents" }).locator("li").count(), bands);
    await dash.screenshot(page, "alert-editor");

    // Saved: the page of the new alert; live evaluation fires within one cadence (a fresh point
    // keeps the 5-minute average above 300 when it runs).
    await record([{ value: 600, timestamp: new Date(Date.now() - 500).toISOString() }]);
    await page.getByRole("button", { name: "Create alert" }).click();
    await page.waitForURL(/\/alerts\/alr_/);
    const alertId = page.url().split("/alerts/")[1].split("?")[0];

    // The list: its state and last value, read again without a reload.
    await page.getByRole("link", { name: "Alerts", exact: true }).click();
    const row = page.getByRole("table", { name: "Alerts" }).getByRole("row", { name: /Slow API/ });
    await row.getByText("firing", { exact: true }).waitFor({ timeout: 20_000 });
    const value = Number((await row.getByTestId("last-value").innerText()).replace(/[^\d.]/g, ""));
    const stored = (await t.rest.get(`/v1/projects/${p.projectId}/alerts/${alertId}`, { key: p.key })).body.data;
    assert.ok(value > 300, `last value ${value}`);
    assert.equal(value, Number(stored.value.toFixed(4)));
    await dash.screenshot(page, "alerts");

    // Its page: the open incident, started when the condition first held, and the evaluations.
    await row.getByRole("link", { name: "Slow API" }).click();
    const incident = page.getByRole("list", { name: "Incidents" }).locator("li").first();
    await incident.getByText("open", { exact: true }).waitFor();
    await page.locator('[aria-label="Recent evaluations: value, threshold and incidents"][data-bands="1"]').waitFor();
    const incidents = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${stored.monitorId}/incidents`, {
      key: p.key,
    });
    assert.equal(incidents.status, 200, incidents.text);
    assert.equal(incidents.body.data.length, 1);
    assert.equal(incidents.body.data[0].startedAt, stored.pendingSince);
    await dash.screenshot(page, "alert");

    // Edit rule: the editor starts from the stored rule, its preview over the last hour (the longest
    // range a 10 s cadence covers cheaply); Cancel goes back to the page.
    await page.getByRole("button", { name: "Edit rule" }).click();
    await page.waitForURL(/edit=1/);
    assert.equal(await page.getByLabel("Threshold", { exact: true }).inputValue(), "300");
    assert.equal(await page.getByLabel("Every", { exact: true }).inputValue(), "10s");
    assert.equal(await page.getByLabel("Resolve threshold", { exact: true }).inputValue(), "200");
    assert.equal(await page.getByLabel("Time range").inputValue(), "1h");
    await page.locator('[aria-label="Preview: value, threshold and incidents"][data-rendered]').waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.getByRole("heading", { name: "Incidents" }).waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
