import { execFile } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before } from "node:test";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import type { Account } from "./fixtures.js";
import { GENEROUS_LIMITS, type TestApp } from "./app.js";
import { useApp, useProject } from "./use.js";

// The dashboard (web/) in a real browser: headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core) against a real Vigil serving the build of the current sources. npm test builds
// it once per run (test/run.ts: VIGIL_TEST_DASHBOARD_DIR, which startTestApp passes as
// DASHBOARD_DIR); a file run some other way builds its own.

export const CHROMIUM = "/usr/bin/chromium";
export { buildDashboard } from "./dashboard-build.js";

/**
 * Runs a `curl` the dashboard shows through bash, as a person pasting it would after
 * `export VIGIL_KEY=<key>`; the HTTP status it got (and what it printed, for messages).
 */
export async function runShownCurl(curl: string, key: string): Promise<{ status: number; out: string }> {
  const { stdout } = await promisify(execFile)("bash", ["-c", `${curl} -w '\\n%{http_code}'`], {
    env: { ...process.env, VIGIL_KEY: key },
  });
  return { status: Number(stdout.trim().split("\n").pop()), out: stdout };
}
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Where a screenshot goes: .tmp/ on every run, docs/images/ with UPDATE_DOCS_IMAGES=1. */
function screenshotPath(name: string): string {
  const dir = path.join(ROOT, process.env.UPDATE_DOCS_IMAGES === "1" ? "docs/images" : ".tmp");
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `dashboard-${name}.png`);
}

interface DashboardHarness {
  /** A new browser context signed in as `account` (none: signed out), and a page in it. */
  open(
    account?: Account,
    viewport?: { width: number; height: number },
  ): Promise<{ context: BrowserContext; page: Page }>;
  /** Saves the page as screenshotPath(name). */
  screenshot(page: Page, name: string): Promise<void>;
}

/**
 * A file's Vigil with a project (useProject: `t`, `p`), the dashboard build and one browser.
 * `available()` is false where Chromium is missing: a test then calls ctx.skip with `SKIP`.
 */
export function useDashboard(env: Record<string, string> = {}) {
  const { t, p } = useProject({ ...GENEROUS_LIMITS, ...env });
  return { t: t as TestApp, p, ...useBrowser(t) };
}

/** The same without any account: a fresh Vigil, as its first visitor finds it. */
export function useFreshDashboard(env: Record<string, string> = {}) {
  const { t } = useApp({ ...GENEROUS_LIMITS, ...env });
  return { t: t as TestApp, ...useBrowser(t) };
}

/** One Chromium for the file, opening pages on `t`'s Vigil. */
function useBrowser(t: TestApp) {
  let browser: Browser | undefined;
  before(async () => {
    if (!existsSync(CHROMIUM)) return;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
  });
  after(async () => {
    await browser?.close();
  });
  const harness: DashboardHarness = {
    async open(account, viewport = { width: 1280, height: 860 }) {
      if (!browser) throw new Error(`${CHROMIUM} not installed`);
      const context = await browser.newContext({ viewport, baseURL: t.url });
      if (account) {
        const value = account.cookie.split(";")[0].split("=").slice(1).join("=");
        await context.addCookies([{ name: "vigil_session", value, url: t.url }]);
      }
      const page = await context.newPage();
      // Any error the page logs fails the test that reads `pageErrors` (a crash is not a pass).
      page.on("pageerror", (err) => pageErrors.push(err.message));
      return { context, page };
    },
    async screenshot(page, name) {
      await page.screenshot({ path: screenshotPath(name), fullPage: false });
    },
  };
  const pageErrors: string[] = [];
  return {
    dash: harness,
    /** Uncaught errors of every page opened so far. */
    pageErrors,
    available: () => existsSync(CHROMIUM),
    SKIP: `${CHROMIUM} not installed (apt-get install chromium)`,
  };
}
