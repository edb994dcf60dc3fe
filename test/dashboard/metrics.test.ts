// The metrics screen in a real browser over points recorded over REST at known times: the names
// with their type and current value, the chosen metric's series, the aggregation and interval
// changing the query (and the URL), and the empty state of a project without metrics.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Page } from "playwright-core";
import { runShownCurl, useDashboard } from "../helpers/dashboard.js";
import { project } from "../helpers/fixtures.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard();

const HOUR = 3_600_000;
const hour = Math.floor(Date.now() / HOUR) * HOUR;
const at = (h: number, min: number) => new Date(hour - h * HOUR + min * 60_000).toISOString();
const iso = (h: number) => new Date(hour - h * HOUR).toISOString();
const points = [
  { type: "measurement", name: "queue.depth", value: 10, unit: "jobs", timestamp: at(3, 5) },
  { type: "measurement", name: "queue.depth", value: 20, unit: "jobs", timestamp: at(3, 20) },
  { type: "measurement", name: "queue.depth", value: 30, unit: "jobs", timestamp: at(1, 5) },
  { type: "measurement", name: "queue.depth", value: 40, unit: "jobs", timestamp: at(1, 30) },
  { type: "increment", name: "jobs.done", value: 5, timestamp: at(2, 1) },
  { type: "increment", name: "jobs.done", value: 3, timestamp: at(2, 2) },
  { type: "decrement", name: "jobs.done", value: 2, timestamp: at(1, 1) },
];

/** The chart's "Show the numbers" table: bucket start -> the cell's text, for buckets with a value. */
async function chartValues(page: Page): Promise<Record<string, string>> {
  const card = page.getByRole("region", { name: /^(queue\.depth|jobs\.done)/ });
  await card.getByText("Show the numbers").click();
  const rows = card.locator("details tbody tr");
  await rows.first().waitFor();
  const out: Record<string, string> = {};
  for (const row of await rows.all()) {
    const v = (await row.locator("td").nth(1).innerText()).trim();
    if (v !== "—" && v !== "0") out[(await row.locator("time").getAttribute("datetime"))!] = v;
  }
  await card.getByText("Show the numbers").click();
  return out;
}

describe("dashboard: metrics", () => {
  it("lists metrics with their current value and charts the chosen one", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    for (const m of points) {
      const r = await t.rest.post(`/v1/projects/${p.projectId}/metrics`, m, { key: p.key });
      assert.equal(r.status, 201, r.text);
    }
    // A day of latencies every 30 minutes (a realistic series for the screenshot).
    const latencies = Array.from({ length: 48 }, (_, i) => ({
      type: "measurement",
      name: "api.latency",
      unit: "ms",
      value: Math.round(120 + 40 * Math.sin(i / 5) + ((i * 37) % 23)),
      timestamp: new Date(hour - i * 30 * 60_000 + 60_000).toISOString(),
    })).filter((m) => Date.parse(m.timestamp) < Date.now());
    const batch = await t.rest.post(
      `/v1/projects/${p.projectId}/metrics/batch`,
      { metrics: latencies },
      { key: p.key },
    );
    assert.equal(batch.status, 201, batch.text);
    assert.equal(batch.body.data.accepted, latencies.length);
    const { context, page } = await dash.open(p.owner, { width: 1280, height: 800 });
    await page.goto(`/projects/${p.projectId}/metrics?metric=api.latency`);
    await page.locator('[aria-label="api.latency, average per 15 minutes"][data-rendered]').waitFor();
    await page.getByRole("table", { name: "Metrics" }).getByText("40", { exact: true }).waitFor();
    await dash.screenshot(page, "metrics");

    await page.goto(`/projects/${p.projectId}/metrics?metric=queue.depth&range=24h&interval=1h`);
    const list = page.getByRole("table", { name: "Metrics" });
    await list.getByText("40", { exact: true }).waitFor();
    const rows: string[][] = [];
    for (const row of await list.locator("tbody tr").all())
      rows.push((await row.locator("td").allInnerTexts()).flatMap((s) => s.split("\n").map((x) => x.trim())));
    assert.deepEqual(
      rows.sort().map((r) => r.slice(0, 3)),
      [
        ["api.latency", "measurement", String(latencies[0].value)],
        ["jobs.done", "counter", "6"],
        ["queue.depth", "measurement", "40"],
      ],
    );

    // The series: the average per hour, every hour of the day a point (a gap where none fell).
    const chart = page.locator('[aria-label="queue.depth, average per 1 hour"][data-rendered]');
    await chart.waitFor();
    assert.ok(["24", "25"].includes((await chart.getAttribute("data-rendered"))!));
    await page.getByTestId("overall").filter({ hasText: "25 jobs" }).waitFor();
    assert.deepEqual(await chartValues(page), { [iso(3)]: "15 jobs", [iso(1)]: "35 jobs" });

    // Another aggregation: the URL and the answer follow.
    await page.getByLabel("Aggregation").selectOption("max");
    await page.waitForURL(/agg=max/);
    await page.getByTestId("overall").filter({ hasText: "40 jobs" }).waitFor();
    await page.locator('[aria-label="queue.depth, maximum per 1 hour"][data-rendered]').waitFor();
    assert.deepEqual(await chartValues(page), { [iso(3)]: "20 jobs", [iso(1)]: "40 jobs" });

    // Another interval: one bucket per day.
    await page.getByLabel("Interval").selectOption("1d");
    await page.waitForURL(/interval=1d/);
    const daily = page.locator('[aria-label="queue.depth, maximum per 1 day"][data-rendered]');
    await daily.waitFor();
    assert.ok(["1", "2"].includes((await daily.getAttribute("data-rendered"))!));
    const day = (ms: number) => Math.floor(ms / 86_400_000);
    const sameDay = day(hour - 3 * HOUR) === day(hour - HOUR);
    assert.deepEqual(Object.values(await chartValues(page)).sort(), sameDay ? ["40 jobs"] : ["20 jobs", "40 jobs"]);

    // The counter: net change per hour, its default aggregation; choosing it from the list.
    await page.getByRole("link", { name: "jobs.done" }).click();
    await page.waitForURL(/metric=jobs\.done/);
    assert.doesNotMatch(page.url(), /agg=/);
    await page.locator('[aria-label="jobs.done, sum (net change) per 1 day"][data-rendered]').waitFor();
    await page.getByTestId("overall").filter({ hasText: /^6$/ }).waitFor();
    await page.getByLabel("Interval").selectOption("1h");
    await page.locator('[aria-label="jobs.done, sum (net change) per 1 hour"][data-rendered]').waitFor();
    assert.deepEqual(await chartValues(page), { [iso(2)]: "8", [iso(1)]: "-2" });

    // A new point: Refresh asks for the list's current values and the chart again.
    const more = await t.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "increment", name: "jobs.done", value: 4 },
      { key: p.key },
    );
    assert.equal(more.status, 201, more.text);
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.getByTestId("overall").filter({ hasText: /^10$/ }).waitFor();
    await page.getByRole("table", { name: "Metrics" }).getByText("10", { exact: true }).waitFor();

    // The same address in a fresh page shows the same query.
    const other = await dash.open(p.owner);
    await other.page.goto(page.url());
    await other.page.locator('[aria-label="jobs.done, sum (net change) per 1 hour"][data-rendered]').waitFor();
    assert.equal(await other.page.getByLabel("Interval").inputValue(), "1h");
    await other.context.close();

    // A name the project does not have: said in words.
    await page.goto(`/projects/${p.projectId}/metrics?metric=nope`);
    await page.getByRole("alert").filter({ hasText: "no metric named “nope”" }).waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("tells a project without metrics how to record one", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const fresh = await project(t.rest);
    const { context, page } = await dash.open(fresh.owner);
    await page.goto(`/projects/${fresh.projectId}/metrics`);
    await page.getByRole("heading", { name: "No metrics yet" }).waitFor();
    const curl = await page.locator("pre.curl").textContent();
    assert.ok(curl?.includes(`${t.url}/v1/projects/${fresh.projectId}/metrics`), curl ?? "");
    await dash.screenshot(page, "metrics-empty");
    // The command works as pasted (after the screenshot: it records the project's first metric).
    const sent = await runShownCurl(curl!, fresh.key);
    assert.equal(sent.status, 201, sent.out);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
