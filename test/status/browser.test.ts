// A published status page in a real browser (headless Chromium, Debian's /usr/bin/chromium, driven
// by playwright-core): the monitors, their sections and 90-day bars; the page turning red when a
// monitor misses its deadline (real timers, a one-second interval) and green again after a
// heartbeat; on a phone, one column and 30 days; every text at WCAG AA contrast; and the screenshot
// docs/pages.md shows. The screenshot goes to .tmp/status-page.png on
// every run, and replaces docs/images/status-page.png with UPDATE_DOCS_IMAGES=1. Skipped, with a
// message, where Chromium is not installed (CI installs it).
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { useProject } from "../helpers/use.js";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SCREENSHOT = path.join(ROOT, process.env.UPDATE_DOCS_IMAGES === "1" ? "docs/images" : ".tmp", "status-page.png");

const { t, p } = useProject({ ...GENEROUS_LIMITS, STATUS_PAGE_REFRESH_MS: "100" });
let browser: Browser | undefined;
after(async () => {
  await browser?.close();
});

const beat = async (slug: string, expectedIntervalMs: number) => {
  const r = await t.rest.post(
    `/v1/projects/${p.projectId}/heartbeats/${slug}`,
    { expectedIntervalMs, gracePeriodMs: 0 },
    { key: p.key },
  );
  assert.ok(r.status >= 200 && r.status < 300, r.text);
};

/** Reloads the page until `check` holds (bounded: the page has no script, a reader reloads it). */
async function reloadUntil(page: Page, what: string, check: () => Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await page.reload({ waitUntil: "load" });
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Runs in the page: [text, contrast ratio] of every visible text a reader relies on, against the
 * first opaque background behind it (white at the top), by WCAG 2's relative luminance.
 */
const CONTRAST_SCRIPT = `(() => {
  const lum = (c) => {
    const [r, g, b] = (c.match(/[\\d.]+/g) || []).slice(0, 3).map((x) => {
      const v = Number(x) / 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = (e) => {
    for (; e; e = e.parentElement) {
      const bg = getComputedStyle(e).backgroundColor;
      if (bg !== "rgba(0, 0, 0, 0)" && bg !== "transparent") return bg;
    }
    return "rgb(255, 255, 255)";
  };
  const out = [];
  for (const sel of ["h1", "h2", "h3", ".desc", ".overall", ".name", ".st", ".muted", "footer", "a"]) {
    for (const e of Array.from(document.querySelectorAll(sel))) {
      if (!(e.textContent || "").trim() || getComputedStyle(e).display === "none") continue;
      const [l1, l2] = [lum(getComputedStyle(e).color), lum(background(e))].sort((a, b) => b - a);
      out.push([sel + ": " + (e.textContent || "").trim().slice(0, 30), (l1 + 0.05) / (l2 + 0.05)]);
    }
  }
  return out;
})()`;

/** The computed colour of an element, as [r, g, b]. */
async function rgb(page: Page, selector: string): Promise<number[]> {
  const c = await page
    .locator(selector)
    .first()
    .evaluate((e) => getComputedStyle(e).color);
  return (c.match(/\d+/g) ?? []).slice(0, 3).map(Number);
}

describe("a status page in a real browser", () => {
  it("shows the monitors and bars, turns red on a missed deadline and green after a heartbeat, fits a phone, reads at AA contrast", async (ctx) => {
    if (!existsSync(CHROMIUM)) return ctx.skip(`${CHROMIUM} not installed (apt-get install chromium)`);
    // Every monitor starts with an hour's interval, so nothing can go down before the first look
    // (however slow the machine); the API gets its one-second deadline afterwards.
    await beat("checkout-api", 3_600_000);
    await beat("worker", 3_600_000);
    await beat("database", 3_600_000);
    const ids = new Map<string, string>();
    for (const m of (await t.rest.get(`/v1/projects/${p.projectId}/monitors`, { key: p.key })).body.data)
      ids.set(m.slug, m.id);
    const created = await t.rest.post(
      `/v1/projects/${p.projectId}/pages`,
      {
        slug: "acme-status",
        title: "Acme status",
        description: "Live status of Acme's services.",
        published: true,
        monitors: [
          { monitorId: ids.get("checkout-api"), name: "Checkout API", section: "Public services" },
          { monitorId: ids.get("worker"), name: "Order worker", section: "Background" },
          { monitorId: ids.get("database"), name: "Database", section: "Background" },
        ],
      },
      { cookie: p.owner.cookie },
    );
    assert.equal(created.status, 201, created.text);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 }, javaScriptEnabled: false });
    const res = await page.goto(`${t.url}/status/acme-status`, { waitUntil: "load" });
    assert.equal(res?.status(), 200);

    // What a reader sees, with no script: the title, the sections, the monitors, 90 bars each.
    assert.equal(await page.locator("h1").textContent(), "Acme status");
    assert.deepEqual(await page.locator("section[aria-labelledby=monitors] h3").allTextContents(), [
      "Public services",
      "Background",
    ]);
    assert.deepEqual(await page.locator("li.monitor .name").allTextContents(), [
      "Checkout API",
      "Order worker",
      "Database",
    ]);
    for (let i = 0; i < 3; i++)
      assert.equal(await page.locator("li.monitor").nth(i).locator("ol.days > li").count(), 90);
    const overall = page.locator(".overall");
    assert.match((await overall.textContent()) ?? "", /operational/i);
    const green = await rgb(page, ".overall");
    assert.ok(green[1] > green[0], `operational is green: rgb(${green})`);

    // The API misses a one-second deadline: the page turns red (degraded, the API down).
    await beat("checkout-api", 1_000);
    const api = page.locator("li.monitor").first();
    await reloadUntil(page, "the API down on the page", async () =>
      /down/i.test((await api.locator(".st").textContent()) ?? ""),
    );
    assert.match((await overall.textContent()) ?? "", /degraded|partial/i);
    const red = await rgb(page, "li.monitor .st.m-down");
    assert.ok(red[0] > red[1], `down is red: rgb(${red})`);
    assert.match((await api.locator("ol.days > li").last().getAttribute("class")) ?? "", /d-down/);
    assert.equal(await page.getByRole("heading", { name: "Incidents" }).count(), 1);

    // A heartbeat: green again, today's bar keeps the downtime.
    await beat("checkout-api", 3_600_000);
    await reloadUntil(page, "the API up again", async () => /operational/i.test((await overall.textContent()) ?? ""));
    assert.match((await api.locator(".st").textContent()) ?? "", /up|operational/i);
    assert.match((await api.locator("ol.days > li").last().getAttribute("class")) ?? "", /d-down/);

    // On a phone: one column, no sideways scrolling, the last 30 days per monitor.
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, javaScriptEnabled: false });
    await phone.goto(`${t.url}/status/acme-status`, { waitUntil: "load" });
    const widths = await phone.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    assert.ok(widths[0] <= widths[1], `no horizontal scroll on a phone: ${widths}`);
    for (let i = 0; i < 3; i++) {
      const bars = phone.locator("li.monitor").nth(i).locator("ol.days > li");
      const shown = await bars.evaluateAll((els) => els.filter((e) => getComputedStyle(e).display !== "none").length);
      assert.equal(shown, 30);
    }
    // Every text a reader relies on meets WCAG AA contrast (4.5:1) against what is behind it.
    // (A string: tsx would wrap the functions of a callback in a helper the page does not have.)
    const ratios = await page.evaluate<[string, number][]>(CONTRAST_SCRIPT);
    assert.ok(ratios.length > 10, `texts checked: ${ratios.length}`);
    for (const [what, ratio] of ratios) assert.ok(ratio >= 4.5, `${what}: contrast ${ratio.toFixed(2)} < 4.5`);

    // The badge image may still be the one cached a moment ago (Cache-Control: max-age of at least
    // a second): let it expire, so the picture shows one moment.
    await new Promise((r) => setTimeout(r, 1_500));
    await page.reload({ waitUntil: "load" });
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.ok(existsSync(SCREENSHOT));
  });
});
