// The analytics screen in a real browser over events sent over REST with known timestamps: the
// 7-day hourly chart's points and the total match what was sent, an event-type filter narrows
// them, a group-by table, a percentile equal to PostgreSQL's exact value, unique values, the URL
// reproducing the whole query in a fresh page, and an impossible query explained in words.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Page } from "playwright-core";
import { runShownCurl, useDashboard } from "../helpers/dashboard.js";
import { project } from "../helpers/fixtures.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard();

const HOUR = 3_600_000;
const hour = Math.floor(Date.now() / HOUR) * HOUR;
const at = (h: number, min: number) => new Date(hour - h * HOUR + min * 60_000).toISOString();
/** Bucket start (ISO, as the chart's table writes it) -> events sent into it. */
const sent = new Map([
  [new Date(hour - 3 * HOUR).toISOString(), 2],
  [new Date(hour - 27 * HOUR).toISOString(), 3],
  [new Date(hour - 50 * HOUR).toISOString(), 4],
]);
// Users for the funnel and retention: u1..u4 sign up; u1, u2 and u3 purchase later (u5 without signing up).
const events = [
  { type: "purchase", timestamp: at(3, 10), userId: "u1", data: { plan: "pro", amount: 10 } },
  { type: "purchase", timestamp: at(3, 40), userId: "u2", data: { plan: "pro", amount: 20 } },
  { type: "purchase", timestamp: at(27, 5), userId: "u3", data: { plan: "free", amount: 30 } },
  { type: "purchase", timestamp: at(27, 6), userId: "u1", data: { plan: "pro", amount: 40 } },
  { type: "purchase", timestamp: at(27, 59), userId: "u5", data: { plan: "free", amount: 50 } },
  { type: "signup", timestamp: at(50, 1), userId: "u1", data: { plan: "pro" } },
  { type: "signup", timestamp: at(50, 2), userId: "u2", data: { plan: "free" } },
  { type: "signup", timestamp: at(50, 3), userId: "u3", data: { plan: "free" } },
  { type: "signup", timestamp: at(50, 4), userId: "u4", data: { plan: "free" } },
];

async function send() {
  const r = await t.rest.post("/v1/events/batch", { events }, { key: p.key });
  assert.ok(r.status === 202 || r.status === 201 || r.status === 200, r.text);
  assert.equal(r.body.data.accepted, events.length, r.text);
}

/** The chart's points as the "Show the numbers" table lists them: bucket start -> count. */
async function chartPoints(page: Page): Promise<Map<string, number>> {
  const card = page.getByRole("region", { name: /^Events per/ });
  await card.getByText("Show the numbers").click();
  const rows = card.locator("details tbody tr");
  await rows.first().waitFor();
  const out = new Map<string, number>();
  for (const row of await rows.all()) {
    const time = await row.locator("time").getAttribute("datetime");
    out.set(time!, Number((await row.locator("td").nth(1).innerText()).replace(/,/g, "")));
  }
  await card.getByText("Show the numbers").click();
  return out;
}

const total = (page: Page) => page.getByTestId("total");

/** Narrows to one event type with the filter builder (in `scope`: one of several builders). */
async function filterType(page: Page, type: string, scope: Pick<Page, "getByRole" | "getByLabel"> = page) {
  const open = scope.getByRole("button", { name: "+ Filter events" });
  if (await open.count()) await open.click();
  await scope.getByRole("button", { name: "+ Condition" }).click();
  await scope.getByLabel("Field", { exact: true }).fill("type");
  await scope.getByLabel("Value", { exact: true }).fill(type);
  await scope.getByRole("button", { name: "Apply filters" }).click();
}

describe("dashboard: analytics", () => {
  it("shows the 7-day hourly chart and total of what was sent, narrowed by type and grouped", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    await send();
    const { context, page } = await dash.open(p.owner, { width: 1280, height: 1180 });
    await page.goto(`/projects/${p.projectId}/analytics?range=7d&interval=hour`);
    const chart = page.locator(".chart[data-rendered]");
    await chart.waitFor();
    await page.getByTestId("total").filter({ hasText: "9" }).waitFor();
    const points = await chartPoints(page);
    // Every hour of the 7 days is a point (the first one partial), drawn by uPlot.
    assert.equal(points.size, 169);
    assert.equal(await chart.getAttribute("data-rendered"), String(points.size));
    assert.deepEqual(new Map([...points].filter(([, n]) => n > 0)), sent);
    assert.equal(await page.getByRole("img", { name: "Events over time" }).count(), 1);

    // Filter by type and group by plan: the URL changes, the table shows the groups.
    await filterType(page, "signup");
    await page.waitForURL(/filter=.*signup/);
    await page.getByLabel("Group by").fill("plan");
    await page.getByRole("button", { name: "Apply", exact: true }).click();
    await page.waitForURL(/group=plan/);
    await total(page).filter({ hasText: /^4$/ }).waitFor();
    const groups = page.getByRole("table", { name: "Events by plan" });
    await groups.locator("tbody tr").nth(1).waitFor();
    assert.deepEqual(await rows(groups), [
      ["free", "3", "75.0%"],
      ["pro", "1", "25.0%"],
    ]);
    // A series per top group, drawn once the main chart is.
    await page.locator('[aria-label="Events by plan, top 2"][data-rendered]').waitFor();

    // All types again: the groups over every event.
    await page.getByRole("button", { name: "Clear" }).click();
    await page.getByRole("button", { name: "+ Filter events" }).waitFor();
    assert.doesNotMatch(page.url(), /filter=/);
    await total(page).filter({ hasText: /^9$/ }).waitFor();
    await groups.getByRole("cell", { name: "5", exact: true }).waitFor();
    assert.deepEqual(await rows(groups), [
      ["free", "5", "55.6%"],
      ["pro", "4", "44.4%"],
    ]);
    await page.locator('[aria-label="Events by plan, top 2"][data-rendered]').waitFor();
    await dash.screenshot(page, "analytics");

    // An event sent now: Refresh moves the window up to now and asks again.
    const late = await t.rest.post("/v1/events", { type: "late" }, { key: p.key });
    assert.equal(late.status, 202, late.text);
    await page.getByRole("button", { name: "Refresh" }).click();
    await total(page).filter({ hasText: /^10$/ }).waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("computes exact percentiles and unique values, and the URL reproduces the query in a fresh page", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/analytics`);
    await page.locator(".chart[data-rendered]").waitFor();
    await page.getByLabel("Measure", { exact: true }).selectOption("p90");
    await page.getByLabel("Field to measure").fill("amount");
    await page.getByRole("button", { name: "Apply", exact: true }).click();
    await filterType(page, "purchase");
    // percentile_cont(0.9) of 10, 20, 30, 40, 50: 40 + 0.6 * 10.
    await page.getByTestId("measure").filter({ hasText: /^46$/ }).waitFor();
    const summary = page.getByRole("table", { name: "Summary of amount" });
    await summary.locator("td").first().waitFor();
    assert.deepEqual(await summary.locator("td").allInnerTexts(), [
      "5",
      "150",
      "30",
      "10",
      "50",
      "30",
      "46",
      "48",
      "49.6",
    ]);
    await total(page).filter({ hasText: /^5$/ }).waitFor();
    const shared = page.url();
    assert.match(shared, /measure=p90/);
    assert.match(shared, /field=amount/);

    // The same address in a new browser context shows the same answer.
    const other = await dash.open(p.owner);
    await other.page.goto(shared);
    await other.page.getByTestId("measure").filter({ hasText: /^46$/ }).waitFor();
    assert.equal(await other.page.getByLabel("Measure", { exact: true }).inputValue(), "p90");
    assert.equal(await other.page.getByLabel("Field to measure").inputValue(), "amount");
    assert.equal(await other.page.getByLabel("Field", { exact: true }).inputValue(), "type");
    assert.equal(await other.page.getByLabel("Value", { exact: true }).inputValue(), "purchase");
    await other.page.getByTestId("total").filter({ hasText: /^5$/ }).waitFor();
    await other.context.close();

    // Unique values of a field, most frequent first.
    await page.getByLabel("Measure", { exact: true }).selectOption("unique");
    await page.getByLabel("Field to measure").fill("plan");
    await page.getByRole("button", { name: "Apply", exact: true }).click();
    await page.getByRole("button", { name: "Clear" }).click();
    const values = page.getByRole("table", { name: "Values of plan" });
    await values.getByRole("cell", { name: "free" }).waitFor();
    // The answer to the query without the filter (Clear asks again; an earlier answer may still be shown).
    const expected = [
      ["free", "5"],
      ["pro", "4"],
    ];
    const read = async () => (await rows(values)).map((r) => r.slice(0, 2));
    for (let i = 0; i < 100 && JSON.stringify(await read()) !== JSON.stringify(expected); i++)
      await page.waitForTimeout(100);
    assert.deepEqual(await read(), expected);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("charts the chosen measure, builds a funnel and a retention grid, all restored from the URL", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner, { width: 1280, height: 1000 });
    // The chart driven by the measure: the sum of amount per day (the buckets' `value`), and the group table with it.
    await page.goto(`/projects/${p.projectId}/analytics?range=7d&interval=day&measure=sum&field=amount&group=plan`);
    const card = page.getByRole("region", { name: "Sum of amount per day" });
    await card.locator(".chart[data-rendered]").waitFor();
    await card.getByText("Show the numbers").click();
    await card.locator("details tbody tr").first().waitFor();
    const sums = new Map<string, number>();
    for (const e of events.filter((x) => x.data.amount !== undefined)) {
      const day = new Date(Math.floor(Date.parse(e.timestamp) / 86_400_000) * 86_400_000).toISOString();
      sums.set(day, (sums.get(day) ?? 0) + e.data.amount!);
    }
    const days = await card
      .locator("details tbody tr time")
      .evaluateAll((ts) => ts.map((x) => x.getAttribute("datetime")!));
    const values = await card.locator("details tbody tr td:nth-child(2)").allInnerTexts();
    // Days without a purchase sum to 0 (or have no value): the others are the sums sent.
    assert.equal(days.length, 8);
    assert.deepEqual(
      new Map(days.map((d, i) => [d, Number(values[i].replace(/,/g, ""))] as const).filter(([, v]) => v > 0)),
      sums,
    );
    const groups = page.getByRole("table", { name: "Sum of amount by plan" });
    await groups.getByRole("cell", { name: "80" }).waitFor();
    // The event of the first case ("late", no plan, no amount) is a group of its own.
    assert.deepEqual(await rows(groups), [
      ["free", "5", "80", "50.0%"],
      ["pro", "4", "70", "40.0%"],
      ["(none)", "1", "0", "10.0%"],
    ]);
    await page.locator('[aria-label="Sum of amount by plan, top 2"][data-rendered]').waitFor();
    await card.getByText("Show the numbers").click();
    await dash.screenshot(page, "analytics-measure");

    // A funnel: sign-up then purchase within 7 days, built with a filter builder per step.
    await page.getByRole("link", { name: "Funnel" }).click();
    await page.getByRole("status").filter({ hasText: "Give every step a filter" }).waitFor();
    await filterType(page, "signup", page.getByRole("region", { name: "Step 1" }));
    await page.waitForURL(/steps=/);
    await filterType(page, "purchase", page.getByRole("region", { name: "Step 2" }));
    await page.getByLabel("Conversion window").selectOption("604800000");
    await page.waitForURL(/window=604800000/);
    const funnel = page.getByRole("table", { name: "Funnel" });
    // Median time to purchase: u3 23 h 2 min, u1 23 h 5 min, u2 47 h 38 min -> 23 h 5 min.
    const expected = [
      ["1. type = signup", "4", "100 %", "—", "—"],
      ["2. type = purchase", "3", "75 %", "1 (25 %)", "23.08 h"],
    ];
    await funnel.getByRole("cell", { name: "75 %" }).waitFor();
    assert.deepEqual(await rows(funnel), expected);
    // The answer is the endpoint's.
    const api = await t.rest.post(
      `/v1/projects/${p.projectId}/analytics/funnel`,
      {
        steps: ["signup", "purchase"].map((value) => ({ filters: { field: "type", operator: "equals", value } })),
        windowMs: 604_800_000,
        time: { start: new Date(Date.now() - 7 * 86_400_000).toISOString(), end: new Date().toISOString() },
      },
      { key: p.key },
    );
    assert.deepEqual(
      api.body.data.steps.map((x: { count: number; medianTimeMs: number | null }) => [x.count, x.medianTimeMs]),
      [
        [4, null],
        [3, (23 * 60 + 5) * 60_000],
      ],
    );
    await dash.screenshot(page, "analytics-funnel");
    // Reload: the URL restores the steps, the window and the answer.
    await page.reload();
    await funnel.getByRole("cell", { name: "75 %" }).waitFor();
    assert.deepEqual(await rows(funnel), expected);
    assert.equal(await page.getByLabel("Conversion window").inputValue(), "604800000");
    assert.equal(
      await page.getByRole("region", { name: "Step 2" }).getByLabel("Value", { exact: true }).inputValue(),
      "purchase",
    );

    // Retention: daily cohorts of sign-ups, coming back with a purchase.
    await page.getByRole("link", { name: "Retention" }).click();
    await page.getByLabel("Cohorts by").selectOption("day");
    await page.getByLabel("Periods").selectOption("4");
    await filterType(page, "signup", page.getByRole("region", { name: "First event (joins the cohort)" }));
    await filterType(page, "purchase", page.getByRole("region", { name: "Returning event" }));
    await page.waitForURL(/return=/);
    // Independently: each user's purchase days after its sign-up day (UTC), among the 4 periods.
    const DAY = 86_400_000;
    const dayOf = (iso: string) => Math.floor(Date.parse(iso) / DAY);
    const signups = events.filter((e) => e.type === "signup");
    const cohort = dayOf(signups[0].timestamp);
    const cells = [0, 1, 2, 3].map((k) => {
      if ((cohort + k) * DAY > Date.now()) return null;
      const back = new Set(
        events
          .filter((e) => e.type === "purchase" && dayOf(e.timestamp) - cohort === k)
          .map((e) => e.userId)
          .filter((u) => signups.some((s) => s.userId === u)),
      );
      return `${back.size * 25} %`;
    });
    const grid = page.getByRole("table", { name: "Retention" });
    await grid.locator("tbody tr").first().waitFor();
    const want = [[new Date(cohort * DAY).toISOString().slice(0, 10), "4", ...cells.filter((c) => c !== null)]];
    const readGrid = () =>
      grid
        .locator("tbody tr")
        .evaluateAll((trs) =>
          trs.map((tr) =>
            [...tr.querySelectorAll("th, td")].map((c) => (c as HTMLElement).innerText.trim()).filter(Boolean),
          ),
        );
    for (let i = 0; i < 50 && JSON.stringify(await readGrid()) !== JSON.stringify(want); i++)
      await page.waitForTimeout(100);
    assert.deepEqual(await readGrid(), want);
    await dash.screenshot(page, "analytics-retention");
    await page.reload();
    await grid.locator("tbody tr").first().waitFor();
    assert.deepEqual(await readGrid(), want);
    assert.equal(await page.getByLabel("Cohorts by").inputValue(), "day");
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("explains an impossible query in words, and tells a new project how to send events", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    // 30 days of minutes is 43,200 buckets: over the 10,000 the API allows.
    await page.goto(`/projects/${p.projectId}/analytics?range=30d&interval=minute`);
    await page
      .getByRole("alert")
      .filter({ hasText: /more than 10000 minute buckets; use a larger interval/ })
      .waitFor();
    // A field name the filter grammar refuses: the server's reason, next to the measure.
    await page.goto(`/projects/${p.projectId}/analytics?measure=avg&field=a%20b`);
    await page.getByRole("alert").filter({ hasText: /field/i }).first().waitFor();

    // Hostile field names and values: prototype members as keys, markup as a value, shown as text.
    const hostile = JSON.parse('{"__proto__": "p", "constructor": "<b>x</b>", "toString": 3}');
    const sentHostile = await t.rest.post(
      "/v1/events/batch",
      { events: [1, 2].map(() => ({ type: "hostile", data: hostile })) },
      { key: p.key },
    );
    assert.equal(sentHostile.body?.data?.accepted, 2, sentHostile.text);
    const filter = encodeURIComponent(
      JSON.stringify({ and: [{ field: "type", operator: "equals", value: "hostile" }] }),
    );
    await page.goto(
      `/projects/${p.projectId}/analytics?range=24h&filter=${filter}&group=__proto__,constructor,toString&measure=unique&field=constructor`,
    );
    const hostileGroups = page.getByRole("table", { name: "Events by __proto__, constructor, toString" });
    await hostileGroups.getByRole("cell", { name: "<b>x</b>" }).waitFor();
    assert.deepEqual(await rows(hostileGroups), [["p", "<b>x</b>", "3", "2", "100.0%"]]);
    const hostileValues = page.getByRole("table", { name: "Values of constructor" });
    await hostileValues.getByRole("cell", { name: "<b>x</b>" }).waitFor();
    assert.equal(await page.locator("main b").count(), 0);

    const fresh = await project(t.rest);
    const empty = await dash.open(fresh.owner);
    await empty.page.goto(`/projects/${fresh.projectId}/analytics`);
    await empty.page.getByRole("heading", { name: "No events yet" }).waitFor();
    const curl = await empty.page.locator("pre.curl").textContent();
    assert.ok(curl?.includes(`${t.url}/v1/events`), curl ?? "");
    await dash.screenshot(empty.page, "analytics-empty");
    // The command works as pasted (after the screenshot: it sends the project's first event).
    const sent = await runShownCurl(curl!, fresh.key);
    assert.equal(sent.status, 202, sent.out);
    assert.deepEqual(pageErrors, []);
    await empty.context.close();
    await context.close();
  });
});

/** The table's body cells, row by row, read in one step (a re-render cannot mix two answers). */
function rows(table: ReturnType<Page["getByRole"]>): Promise<string[][]> {
  return table
    .locator("tbody tr")
    .evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => (td as HTMLElement).innerText.trim()).filter(Boolean)),
    );
}
