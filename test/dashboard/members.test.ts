// The members screen in a real browser: add an existing account by email (an unknown email's error
// in words), change a role, remove someone (asked twice); the owner's row has no controls; a member
// reads the list without controls; the server's changes are checked over REST.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { memberOf, signup } from "../helpers/fixtures.js";
import { useDashboard } from "../helpers/dashboard.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard();

const roles = async () => {
  const r = await t.rest.get(`/v1/projects/${p.projectId}/members`, { cookie: p.owner.cookie });
  assert.equal(r.status, 200, r.text);
  return Object.fromEntries(r.body.data.map((m: { email: string; role: string }) => [m.email, m.role]));
};

describe("dashboard: members", () => {
  it("adds by email, changes a role, removes; the owner's row has no controls", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const ana = await signup(t.rest, "ana");
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/members`);
    // Alone: the owner's row, and what to do next.
    await page.getByText(/Nobody else is here yet/).waitFor();
    const ownerRow = page.getByRole("row").filter({ hasText: p.owner.email });
    await ownerRow.getByText("owner", { exact: true }).waitFor();
    await ownerRow.getByText("(you)").waitFor();

    // An email without an account: the server's answer, in words.
    await page.getByLabel("Email").fill("nobody-here@example.com");
    await page.getByRole("button", { name: "Add member" }).click();
    await page.getByRole("alert").filter({ hasText: "no account with this email" }).waitFor();
    assert.equal((await roles())["nobody-here@example.com"], undefined);

    // Add ana as a member.
    await page.getByLabel("Email").fill(ana.email);
    await page.getByRole("button", { name: "Add member" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `${ana.email} was added as a member.` })
      .waitFor();
    assert.equal(await page.getByRole("alert").count(), 0, "the earlier error is gone");
    assert.equal((await roles())[ana.email], "member");
    const anaRow = page.getByRole("row").filter({ hasText: ana.email });
    // Adding her again: a conflict, in words.
    await page.getByLabel("Email").fill(ana.email);
    await page.getByRole("button", { name: "Add member" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: /already a member/ })
      .waitFor();
    await page.getByLabel("Email").fill("");

    // Promote her to admin.
    await anaRow.getByRole("combobox", { name: `Role of ${ana.email}` }).selectOption("admin");
    await page
      .getByRole("status")
      .filter({ hasText: `${ana.email} is now an admin.` })
      .waitFor();
    assert.equal((await roles())[ana.email], "admin");

    // The owner's row: no role select, no remove button.
    assert.equal(await ownerRow.getByRole("combobox").count(), 0);
    assert.equal(await ownerRow.getByRole("button").count(), 0);
    await dash.screenshot(page, "members");

    // Remove her: asked twice.
    await anaRow.getByRole("button", { name: "Remove" }).click();
    await anaRow.getByRole("button", { name: `Remove ${ana.email}` }).click();
    await anaRow.waitFor({ state: "detached" });
    assert.equal((await roles())[ana.email], undefined);
    assert.equal((await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: ana.cookie })).status, 404);

    // Removed by someone else meanwhile: the server's refusal in words, and the list follows.
    const cy = await memberOf(t.rest, p, "cy");
    await page.reload();
    const cyRow = page.getByRole("row").filter({ hasText: cy.email });
    await cyRow.getByRole("button", { name: "Remove" }).click();
    assert.equal(
      (await t.rest.del(`/v1/projects/${p.projectId}/members/${cy.id}`, { cookie: p.owner.cookie })).status,
      204,
    );
    await cyRow.getByRole("button", { name: `Remove ${cy.email}` }).click();
    await page.getByRole("alert").filter({ hasText: "member not found" }).waitFor();
    await cyRow.waitFor({ state: "detached" });
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("shows a member the list read-only", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const bo = await memberOf(t.rest, p, "bo");
    const { context, page } = await dash.open(bo);
    await page.goto(`/projects/${p.projectId}/members`);
    await page.getByRole("row").filter({ hasText: p.owner.email }).waitFor();
    await page.getByRole("row").filter({ hasText: bo.email }).getByText("(you)").waitFor();
    await page.getByText("Only the project's owner and admins can add, change or remove members.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Add member" }).count(), 0);
    assert.equal(await page.getByRole("combobox", { name: /Role of/ }).count(), 0);
    assert.equal(await page.getByRole("button", { name: "Remove" }).count(), 0);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
