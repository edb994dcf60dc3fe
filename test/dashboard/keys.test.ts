// The API keys screen in a real browser: a new project's empty state; creating a secret and a
// publishable key, each secret shown once and working (the page's own curl command, run as
// written, is accepted with 202); after "Done" the secret is gone from the page and from a reload;
// last use shown; revoking a key makes it a 401; the allowed origins of publishable keys edited
// (a bad entry's error in words); a member sees no key controls.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { memberOf } from "../helpers/fixtures.js";
import { runShownCurl, useDashboard } from "../helpers/dashboard.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard();

describe("dashboard: API keys", () => {
  it("creates both kinds, shows each secret once with a working curl, revokes", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // A fresh project: the screen a new project lands on, with no key yet.
    const created = await t.rest.post("/v1/projects", { name: "Keys", platform: "node" }, { cookie: p.owner.cookie });
    assert.equal(created.status, 201, created.text);
    const projectId: string = created.body.data.id;
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${projectId}/keys`);
    await page.getByRole("heading", { name: "No API keys yet" }).waitFor();
    await dash.screenshot(page, "keys-empty");

    // A secret key.
    await page.getByLabel("Key name").fill("backend");
    await page.getByRole("button", { name: "Create key" }).click();
    const secretBox = page.getByTestId("secret");
    await secretBox.waitFor();
    const secret = (await secretBox.textContent())!.trim();
    assert.match(secret, /^vk_(?!pub_)[A-Za-z0-9]{32,}$/);
    const curl = (await page.getByTestId("curl").textContent())!;
    assert.ok(curl.includes(secret), curl);
    assert.ok(curl.includes(`${t.url}/v1/events`), curl);
    // The command works as written: run it through a shell, as a person pasting it would.
    const pasted = await runShownCurl(curl, "");
    assert.equal(pasted.status, 202, pasted.out);
    // And the key works over REST too.
    const sent = await t.rest.post("/v1/events", { type: "signup", userId: "u1" }, { key: secret });
    assert.equal(sent.status, 202, sent.text);
    // The new key is in the list already, behind the secret.
    await page.getByRole("cell", { name: "backend" }).waitFor();
    await dash.screenshot(page, "keys");
    await page.getByRole("button", { name: "Done" }).click();
    await secretBox.waitFor({ state: "detached" });
    assert.ok(!(await page.content()).includes(secret), "the secret is gone from the page");

    // Last use: the server records it off the request path; then a reload shows it, and no secret.
    for (let i = 0; i < 50; i++) {
      const list = await t.rest.get(`/v1/projects/${projectId}/api-keys`, { cookie: p.owner.cookie });
      if (list.body.data[0]?.lastUsedAt) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.reload();
    const row = page.getByRole("row").filter({ hasText: "backend" });
    await row.getByText("just now").waitFor();
    assert.ok((await row.textContent())!.includes(secret.slice(0, 7)), "the prefix is listed");
    assert.ok(!(await page.content()).includes(secret), "a reload does not show the secret");

    // A publishable key: its own sentence, a vk_pub_ secret that sends events.
    await page.getByText(/safe in a web page/).waitFor();
    await page.getByLabel("Key name").fill("website");
    await page.getByLabel("Environment").selectOption("development");
    await page.getByRole("radio", { name: /Publishable/ }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const pub = (await page.getByTestId("secret").textContent())!.trim();
    assert.match(pub, /^vk_pub_[A-Za-z0-9]{32,}$/);
    assert.equal(
      (await t.rest.post("/v1/events", { type: "page" }, { key: pub, headers: { origin: t.url } })).status,
      202,
    );
    await page.getByRole("button", { name: "Done" }).click();
    const pubRow = page.getByRole("row").filter({ hasText: "website" });
    await pubRow.getByText("publishable").waitFor();
    await pubRow.getByText("development").waitFor();

    // Revoke the secret key: asked twice, gone from the list, refused by the API.
    await row.getByRole("button", { name: "Revoke" }).click();
    await row.getByRole("button", { name: "Revoke backend" }).click();
    await row.waitFor({ state: "detached" });
    const refused = await t.rest.post("/v1/events", { type: "signup" }, { key: secret });
    assert.equal(refused.status, 401, refused.text);
    assert.equal((await t.rest.post("/v1/events", { type: "page" }, { key: pub })).status, 202);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("edits the allowed origins of publishable keys, with a bad entry's error in words", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/keys`);
    await page.getByText("Any origin", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Edit allowed origins" }).click();
    const box = page.getByLabel("Origins, one per line");
    await box.fill("https://shop.example.com\nftp://files.example.com");
    await page.getByRole("button", { name: "Save origins" }).click();
    // The server names the second entry; the screen says which line.
    await page.getByText(/ftp:\/\/files\.example\.com: must be an origin/).waitFor();
    await box.fill("https://shop.example.com\nhttp://localhost:5173/");
    await page.getByRole("button", { name: "Save origins" }).click();
    const list = page.getByRole("list", { name: "Allowed origins" });
    await list.getByText("http://localhost:5173").waitFor();
    const proj = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.deepEqual(proj.body.data.allowedOrigins, ["https://shop.example.com", "http://localhost:5173"]);
    // Emptied again: any origin.
    await page.getByRole("button", { name: "Edit allowed origins" }).click();
    await box.fill("");
    await page.getByRole("button", { name: "Save origins" }).click();
    // Exact: the form's hint ("Leave empty to allow any origin") matches a loose "Any origin"
    // before the save has landed; the view's <strong>Any origin</strong> shows only after it.
    await page.getByText("Any origin", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Edit allowed origins" }).waitFor();
    const again = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.deepEqual(again.body.data.allowedOrigins, []);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("shows a member no key controls and the origins read-only", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const member = await memberOf(t.rest, p);
    const { context, page } = await dash.open(member);
    await page.goto(`/projects/${p.projectId}/keys`);
    await page.getByRole("heading", { name: /managed by the project's owner and admins/ }).waitFor();
    await page.getByText("Only the project's owner and admins can change them.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Create key" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: "Revoke" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: "Edit allowed origins" }).count(), 0);
    assert.equal(await page.getByRole("alert").count(), 0, "no 403 shown to a member");
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
