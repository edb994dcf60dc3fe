// A person's first minutes in the dashboard, in a real browser: sign up, the empty state that
// says what to do, create a project, rename it, sign out, sign back in (sent back where they
// were), and delete the project as its owner; a member sees no owner controls; another tenant's
// project is "not found".
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { memberOf, signup } from "../helpers/fixtures.js";
import { useDashboard } from "../helpers/dashboard.js";
import { SECTIONS } from "../../web/src/sections.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard();

describe("dashboard: account and projects", () => {
  it("signs up, creates, renames and deletes a project, signs out and back in", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open();
    await page.goto("/projects");
    // Signed out: sent to sign in, with the way back kept.
    await page.waitForURL(/\/login\?next=%2Fprojects/);
    await page.getByRole("link", { name: "Create one" }).click();
    const email = `dash-${Date.now()}@example.com`;
    await page.getByLabel("Name").fill("Dana");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("short");
    await page.getByRole("button", { name: "Create account" }).click();
    // The server's validation message, in words, next to the field.
    await page
      .getByText(/at least 8/i)
      .first()
      .waitFor();
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { name: "Create your first project" }).waitFor();
    await dash.screenshot(page, "projects-empty");

    await page.getByLabel("Project name").fill("Storefront");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.waitForURL(/\/projects\/[\w-]+\/keys$/);
    const projectId = page.url().split("/")[4];
    // The owner sees every section of the sidebar.
    assert.equal(await page.getByRole("navigation", { name: "Project" }).getByRole("link").count(), SECTIONS.length);

    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByLabel("Project name").fill("Storefront (prod)");
    await page.getByRole("button", { name: "Rename" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    // The project switcher follows the new name.
    await page
      .getByRole("combobox", { name: "Project" })
      .locator("option:checked", { hasText: "Storefront (prod)" })
      .waitFor({ state: "attached" });

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/login$/);
    // The session is gone on the server, not only in this tab.
    assert.equal((await context.request.get("/v1/auth/me")).status(), 401);
    await page.goto(`/projects/${projectId}/settings`);
    await page.waitForURL(/\/login\?next=/);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("wrong password!");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").waitFor();
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(new RegExp(`/projects/${projectId}/settings$`));

    await page.getByRole("button", { name: "Delete project" }).click();
    await page.getByRole("button", { name: "Yes, delete project" }).click();
    await page.waitForURL(/\/projects$/);
    await page.getByRole("heading", { name: "Create your first project" }).waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("shows a member no owner controls, and another tenant's project as not found", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const member = await memberOf(t.rest, p);
    const { context, page } = await dash.open(member);
    await page.goto(`/projects/${p.projectId}/settings`);
    await page.getByText("Only the project's owner can delete it.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Delete project" }).count(), 0);
    assert.ok(await page.getByLabel("Project name").isDisabled());

    const stranger = await signup(t.rest, "stranger");
    const other = await dash.open(stranger);
    await other.page.goto(`/projects/${p.projectId}/events`);
    await other.page
      .getByRole("alert")
      .filter({ hasText: /not found/i })
      .waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
    await other.context.close();
  });
});
