// A fresh Vigil, as its first visitor finds it: no account exists, so `/` offers sign-up (nobody
// could sign in), and GetSignupState says only that; once an account exists, sign-in stays.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useFreshDashboard } from "../helpers/dashboard.js";

const { t, dash, pageErrors, available, SKIP } = useFreshDashboard();

const signupState = () => t.rest.get("/v1/auth/signup-state");

describe("dashboard: first run", () => {
  it("on a server without accounts, / offers sign-up; once one exists, sign-in", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // No credentials needed, and one bit only.
    const before = await signupState();
    assert.equal(before.status, 200, before.text);
    assert.deepEqual(before.body, { data: { accountsExist: false } });

    const { context, page } = await dash.open();
    await page.goto("/");
    await page.waitForURL(/\/signup(\?|$)/);
    await page.getByRole("heading", { name: "Create your Vigil account" }).waitFor();
    await page.getByLabel("Name").fill("First");
    await page.getByLabel("Email").fill("first@example.com");
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { name: "Create your first project" }).waitFor();
    await context.close();

    assert.deepEqual((await signupState()).body, { data: { accountsExist: true } });
    const again = await dash.open();
    const answered = again.page.waitForResponse((r) => r.url().endsWith("/vigil.v1.AuthService/GetSignupState"));
    await again.page.goto("/");
    await again.page.waitForURL(/\/login(\?|$)/);
    assert.equal((await answered).status(), 200);
    await again.page.getByRole("heading", { name: "Sign in to Vigil" }).waitFor();
    assert.match(again.page.url(), /\/login\?next=/, "stays on sign-in once an account exists");
    await again.context.close();
    assert.deepEqual(pageErrors, []);
  });
});
