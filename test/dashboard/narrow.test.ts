// Every project screen on a phone-wide window (390 x 844, an iPhone's CSS pixels) in a real browser:
// with data on it (events, a monitor, a webhook, a key), no screen is wider than the window (wide
// tables scroll inside their own box, not the page), the navigation still reaches every section,
// and nothing the page runs throws.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useDashboard } from "../helpers/dashboard.js";
import { SECTIONS } from "../../web/src/sections.js";

// Webhooks to a local address (no DNS here; nothing is delivered in this test).
const { t, p, dash, pageErrors, available, SKIP } = useDashboard({ WEBHOOK_ALLOW_PRIVATE: "true" });

describe("dashboard: a phone-wide window", () => {
  it("fits every project screen in 390 px and keeps the navigation", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // Data that makes the screens' tables and charts appear, with long values that could widen them.
    const long = "a-very-long-value-without-spaces-".repeat(4);
    const sent = await t.rest.post(
      "/v1/events/batch",
      {
        events: Array.from({ length: 30 }, (_, i) => ({
          type: i % 2 ? "signup_completed_with_a_long_name" : "page_view",
          userId: `user-${i}-${long}`,
          data: { path: `/${long}/${i}`, plan: "pro" },
        })),
      },
      { key: p.key },
    );
    assert.equal(sent.status, 202, sent.text);
    const beat = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/nightly-backup-of-the-main-database`,
      { expectedIntervalMs: 3_600_000 },
      { key: p.key },
    );
    assert.equal(beat.status, 200, beat.text);
    const hook = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: `Hook ${long}`, url: `http://127.0.0.1:9/hooks/${long}`, events: ["page_view"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(hook.status, 201, hook.text);

    const { context, page } = await dash.open(p.owner, { width: 390, height: 844 });
    // Every section of the sidebar; each one's label is its screen's heading.
    for (const [path, heading] of SECTIONS) {
      await page.goto(`/projects/${p.projectId}/${path}`);
      await page.getByRole("heading", { name: heading, exact: true, level: 1 }).waitFor();
      await page.waitForLoadState("networkidle");
      // The screens with the widest content show it before they are measured.
      if (path === "events") await page.getByText("user-29-a-very-long-value", { exact: false }).first().waitFor();
      if (path === "keys") await page.locator("table.keys-table").waitFor();
      // The page's width, and what sticks out past the window (named in the failure message).
      const widths = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        window: window.innerWidth,
        wider: [...document.querySelectorAll("body *")]
          .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
          .slice(0, 8)
          .map(
            (e) => `${e.tagName.toLowerCase()}.${e.className} ends at ${Math.round(e.getBoundingClientRect().right)}`,
          ),
      }));
      if (widths.page > widths.window) await dash.screenshot(page, `narrow-${path}-too-wide`);
      assert.ok(
        widths.page <= widths.window,
        `/${path} is ${widths.page} px wide in a ${widths.window} px window: ${widths.wider.join(", ")}`,
      );
      // The navigation is on screen and leads to the other sections.
      const nav = page.getByRole("navigation").getByRole("link", { name: "Users", exact: true });
      assert.equal(await nav.isVisible(), true, `/${path}: the Users link is visible`);
    }
    await dash.screenshot(page, "narrow-settings");
    // A section reached through the navigation itself.
    await page.getByRole("navigation").getByRole("link", { name: "Events", exact: true }).click();
    await page.waitForURL(new RegExp(`/projects/${p.projectId}/events`));
    await page.getByText("user-29-a-very-long-value", { exact: false }).first().waitFor();
    await dash.screenshot(page, "narrow-events");
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
