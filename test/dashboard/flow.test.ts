// The end-to-end path, in one browser session against one real Vigil (real timers, a real
// local webhook receiver): sign up → create a project → create a key → events sent over the API
// with that key appear in the live tail → a filter narrows them → a chart shows their count → a
// monitor misses its deadline and its incident appears → a failed webhook delivery is retried from
// the delivery log and succeeds. Each screen's own file tests it in depth; this one proves they
// make one product. The main screens' screenshots come from here too (UPDATE_DOCS_IMAGES=1 puts
// them in docs/images for the README and docs/dashboard.md).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Page } from "playwright-core";
import { useDashboard } from "../helpers/dashboard.js";
import { Receiver } from "../webhooks/receiver.js";

const { t, dash, pageErrors, available, SKIP } = useDashboard({
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_BACKOFF_BASE_MS: "50",
  WEBHOOK_MAX_ATTEMPTS: "2",
  WEBHOOK_TIMEOUT_MS: "2000",
});

let rx: Receiver;
before(async () => {
  rx = await Receiver.start();
});
after(async () => {
  await rx.close();
});

/** The rows of a list of the events screen (`events` or `tail`). */
const rows = (page: Page, testid: string) => page.locator(`[data-testid="${testid}"] > [role="row"]`);
const waitRows = (page: Page, testid: string, n: number) =>
  page.waitForFunction(
    ([id, count]) => document.querySelectorAll(`[data-testid="${id}"] > [role="row"]`).length === count,
    [testid, n] as const,
  );

describe("dashboard: the whole path", () => {
  it("sign up → project → key → live tail → filter → chart → incident → webhook retried", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open();

    // Sign up and create a project: the new project opens on its API keys.
    await page.goto("/signup");
    await page.getByLabel("Email").fill(`flow-${Date.now()}@example.com`);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByLabel("Project name").fill("Acme shop");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.waitForURL(/\/projects\/[\w-]+\/keys$/);
    const projectId = page.url().split("/")[4];

    // A key, its secret shown once: everything below is sent with it.
    await page.getByLabel("Key name").fill("backend");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = ((await page.getByTestId("secret").textContent()) ?? "").trim();
    assert.match(key, /^vk_/);
    await page.getByRole("button", { name: "Done" }).click();
    const send = async (events: Record<string, unknown>[]) => {
      const r = await t.rest.post("/v1/events/batch", { events }, { key });
      assert.equal(r.status, 202, r.text);
    };

    // The live tail: events sent over the API appear without a reload.
    await page.getByRole("link", { name: "Events" }).click();
    await page.getByRole("button", { name: "Live tail" }).click();
    await page.getByTestId("tail").waitFor({ state: "attached" });
    const purchases = Array.from({ length: 6 }, (_, i) => ({
      type: "purchase",
      userId: `buyer${i}`,
      data: { amount: (i + 1) * 10 },
    }));
    const views = Array.from({ length: 9 }, (_, i) => ({ type: "page_view", userId: `viewer${i}`, data: { i } }));
    await send([...purchases, ...views]);
    await waitRows(page, "tail", 15);
    await dash.screenshot(page, "flow-tail");

    // A filter narrows them: purchases over 30 → 3.
    await page.getByRole("button", { name: "Browse" }).click();
    await page.getByRole("button", { name: "+ Condition" }).click();
    await page.getByLabel("Field").fill("type");
    await page.getByLabel("Value", { exact: true }).fill("purchase");
    await page.getByRole("button", { name: "+ Condition" }).click();
    const second = page.getByTestId("filter-condition").nth(1);
    await second.getByLabel("Field").fill("data.amount");
    await second.getByLabel("Operator").selectOption("gt");
    await second.getByLabel("Value type").selectOption("number");
    await second.getByLabel("Value", { exact: true }).fill("30");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await waitRows(page, "events", 3);
    assert.deepEqual((await rows(page, "events").locator(".col-user").allTextContents()).sort(), [
      "buyer3",
      "buyer4",
      "buyer5",
    ]);

    // A chart shows the count: 15 events in the last 24 hours, hourly.
    await page.getByRole("link", { name: "Analytics" }).click();
    await page.goto(`/projects/${projectId}/analytics?range=24h&interval=hour`);
    await page.locator(".chart[data-rendered]").first().waitFor();
    await page.getByTestId("total").filter({ hasText: /^15$/ }).waitFor();
    await dash.screenshot(page, "flow-analytics");

    // A monitor misses its one-second deadline: down on the list, its incident on its page.
    const beat = await t.rest.post(
      `/v1/projects/${projectId}/heartbeats/nightly-backup`,
      { expectedIntervalMs: 1000, gracePeriodMs: 0 },
      { key },
    );
    assert.equal(beat.status, 200, beat.text);
    await page.getByRole("link", { name: "Uptime" }).click();
    const card = page
      .getByRole("list", { name: "Monitors" })
      .getByRole("listitem")
      .filter({ has: page.getByRole("heading", { name: "nightly-backup", exact: true }) });
    await card.getByText("down", { exact: true }).waitFor({ timeout: 15_000 });
    await card.getByRole("link", { name: "nightly-backup" }).click();
    await page
      .getByRole("listitem")
      .filter({ has: page.getByRole("heading", { name: /nightly-backup is down/ }) })
      .waitFor({ timeout: 15_000 });
    await dash.screenshot(page, "flow-incident");

    // A webhook whose receiver fails at first: the delivery fails, Retry makes it succeed.
    let failing = true;
    const url = rx.on("/acme", () =>
      failing ? { status: 503, body: "down for maintenance" } : { status: 200, body: "ok" },
    );
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("button", { name: "New webhook" }).click();
    const form = page.getByRole("form", { name: "New webhook" });
    await form.getByLabel("Name").fill("Orders");
    await form.getByLabel("Endpoint URL").fill(url);
    await form.getByRole("checkbox", { name: "purchase" }).check();
    await form.getByRole("button", { name: "Create webhook" }).click();
    await page.getByRole("button", { name: "Done" }).click();
    await send([{ type: "purchase", userId: "buyer9", data: { amount: 99 } }]);
    await page.getByRole("row").filter({ hasText: "Orders" }).getByRole("link", { name: "Orders" }).click();
    const delivery = page.getByRole("listitem").filter({ hasText: "purchase" }).first();
    await delivery.getByRole("row").filter({ hasText: "HTTP 503" }).nth(1).waitFor({ timeout: 15_000 });
    failing = false;
    await delivery.getByRole("button", { name: /^Retry delivery/ }).click();
    await delivery.getByRole("row").filter({ hasText: "HTTP 200" }).waitFor({ timeout: 15_000 });
    await dash.screenshot(page, "flow-webhook");
    assert.ok(rx.requests.filter((r) => r.path === "/acme").length >= 3);

    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
