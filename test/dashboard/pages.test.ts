// The status pages screen in a real browser: a page made from the UI with two monitors (created by
// heartbeats over REST) in a chosen order, names and sections; published, its public page lists
// them that way (opened from the screen's link, in a new tab); unpublished it is a 404; a taken
// slug's 409 is shown in words; the empty state of a project without monitors points to Uptime; a
// member sees the pages without write controls; the incident composer (preview, post, update with a status)
// and the subscriber list with its remove button and webhook subscriber form, and the public page during a
// manual incident.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { memberOf } from "../helpers/fixtures.js";
import { useDashboard } from "../helpers/dashboard.js";
import { waitFor } from "../webhooks/receiver.js";

// Public pages are cached per slug for STATUS_PAGE_REFRESH_MS (docs/pages.md "Caching"): short here.
const { t, p, dash, pageErrors, available, SKIP } = useDashboard({ STATUS_PAGE_REFRESH_MS: "100" });

/** The public answer for `path` once its status is `status` (a change shows within one interval). */
async function publicAnswer(path: string, status: number) {
  return waitFor(async () => {
    const r = await t.rest.get(path);
    return r.status === status ? r : undefined;
  }, `${path} answering ${status}`);
}

async function heartbeat(slug: string) {
  const r = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/${slug}`, {}, { key: p.key });
  assert.equal(r.status, 200, r.text);
}

describe("dashboard: status pages", () => {
  it("creates a page with two monitors in order and sections, publishes, unpublishes", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // A project without monitors: the empty state says where monitors come from.
    const empty = await t.rest.post("/v1/projects", { name: "Empty", platform: "node" }, { cookie: p.owner.cookie });
    assert.equal(empty.status, 201, empty.text);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${empty.body.data.id}/pages`);
    await page.getByRole("heading", { name: "No monitors yet" }).waitFor();
    await page.getByRole("link", { name: "Go to Uptime" }).click();
    await page.waitForURL(new RegExp(`/projects/${empty.body.data.id}/uptime$`));

    await heartbeat("api-server");
    await heartbeat("queue-worker");
    const slug = `acme-${randomBytes(3).toString("hex")}`;
    await page.goto(`/projects/${p.projectId}/pages`);
    await page.getByRole("heading", { name: "No status pages yet" }).waitFor();
    await page.getByRole("button", { name: "Create a status page" }).click();
    const form = page.getByRole("form", { name: "New status page" });
    await form.getByLabel("Title").fill("Acme status");
    // The slug follows the title until edited.
    assert.equal(await form.getByLabel("Slug").inputValue(), "acme-status");
    await form.getByLabel("Slug").fill(slug);
    await form.getByLabel("Description").fill("Is Acme up?");
    const add = form.getByLabel("Add a monitor");
    await add.selectOption({ label: "api-server (up)" });
    await form.getByRole("button", { name: "Add", exact: true }).click();
    await add.selectOption({ label: "queue-worker (up)" });
    await form.getByRole("button", { name: "Add", exact: true }).click();
    await form.getByText("Every monitor of the project is on this page.").waitFor();
    // The worker first, under "Background", then the API under "Core".
    await form.getByRole("button", { name: "Move queue-worker up" }).click();
    const worker = form.getByRole("listitem", { name: "queue-worker" });
    const apiItem = form.getByRole("listitem", { name: "api-server" });
    await worker.getByLabel("Display name").fill("Jobs");
    await worker.getByLabel("Section").fill("Background");
    await apiItem.getByLabel("Display name").fill("Public API");
    await apiItem.getByLabel("Section").fill("Core");
    await dash.screenshot(page, "status-page-form");
    await form.getByRole("button", { name: "Create page" }).click();

    const card = page.getByRole("listitem", { name: "Acme status" });
    await card.getByText("draft").waitFor();
    assert.deepEqual(await card.locator(".page-section h3").allTextContents(), ["Background", "Core"]);
    assert.equal((await t.rest.get(`/status/${slug}`)).status, 404);

    await card.getByRole("button", { name: "Publish" }).click();
    await card.getByText("published", { exact: true }).waitFor();
    const pub = await publicAnswer(`/v1/status/${slug}`, 200);
    assert.deepEqual(
      pub.body.data.monitors.map((m: { name: string; section: string }) => [m.name, m.section]),
      [
        ["Jobs", "Background"],
        ["Public API", "Core"],
      ],
    );
    await dash.screenshot(page, "status-pages");

    // The link opens the public page in a new tab; it lists the monitors in that order.
    const [tab] = await Promise.all([
      context.waitForEvent("page"),
      card.getByRole("link", { name: new RegExp(`/status/${slug}`) }).click(),
    ]);
    await tab.waitForLoadState();
    assert.equal(new URL(tab.url()).pathname, `/status/${slug}`);
    await tab.getByRole("heading", { name: "Acme status" }).waitFor();
    const text = (await tab.locator("body").textContent()) ?? "";
    assert.ok(text.indexOf("Jobs") >= 0 && text.indexOf("Jobs") < text.indexOf("Public API"), text);
    assert.ok(text.indexOf("Background") < text.indexOf("Core"), text);
    await tab.close();

    // Edit: swap the order back and rename; then unpublish: the public page is gone.
    await card.getByRole("button", { name: "Edit" }).click();
    const edit = page.getByRole("form", { name: "Edit Acme status" });
    await edit.getByRole("button", { name: "Move api-server up" }).click();
    await edit.getByLabel("Title").fill("Acme services");
    await edit.getByRole("button", { name: "Save page" }).click();
    const edited = page.getByRole("listitem", { name: "Acme services" });
    await edited.waitFor();
    await waitFor(async () => {
      const r = await t.rest.get(`/v1/status/${slug}`);
      return r.body?.data?.monitors?.map((m: { name: string }) => m.name).join() === "Public API,Jobs";
    }, "the public page in its new order");
    await edited.getByRole("button", { name: "Unpublish" }).click();
    await edited.getByText("draft").waitFor();
    await publicAnswer(`/status/${slug}`, 404);
    await publicAnswer(`/v1/status/${slug}`, 404);

    // A slug already used (by another project's page): the 409 in words, the form kept.
    const other = await t.rest.post("/v1/projects", { name: "Other", platform: "node" }, { cookie: p.owner.cookie });
    const taken = `taken-${randomBytes(3).toString("hex")}`;
    const made = await t.rest.post(
      `/v1/projects/${other.body.data.id}/pages`,
      { slug: taken, title: "Elsewhere" },
      { cookie: p.owner.cookie },
    );
    assert.equal(made.status, 201, made.text);
    await page.getByRole("button", { name: "New status page" }).click();
    const again = page.getByRole("form", { name: "New status page" });
    await again.getByLabel("Title").fill("Second");
    await again.getByLabel("Slug").fill(taken);
    await again.getByRole("button", { name: "Create page" }).click();
    await again
      .getByRole("alert")
      .filter({ hasText: new RegExp(`slug '${taken}' is already used`) })
      .waitFor();
    assert.equal(await again.getByLabel("Title").inputValue(), "Second");
    await again.getByRole("button", { name: "Cancel" }).click();

    // Delete, asked twice.
    await edited.getByRole("button", { name: "Delete" }).click();
    await edited.getByRole("button", { name: "Yes, delete the page" }).click();
    await page.getByRole("heading", { name: "No status pages yet" }).waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("composes a manual incident with a preview, posts an update, lists, removes and adds subscribers", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    await heartbeat("checkout");
    const list = await t.rest.get(`/v1/projects/${p.projectId}/monitors`, { key: p.key });
    const checkout = list.body.data.find((m: { slug: string }) => m.slug === "checkout");
    const slug = `incident-${randomBytes(3).toString("hex")}`;
    const made = await t.rest.post(
      `/v1/projects/${p.projectId}/pages`,
      { slug, title: "Shop status", published: true, monitors: [{ monitorId: checkout.id, name: "Checkout" }] },
      { cookie: p.owner.cookie },
    );
    assert.equal(made.status, 201, made.text);
    // This app has no SMTP_URL (no public subscribe route): two subscribers are rows written here.
    await t.app.deps.db.query(
      `INSERT INTO page_subscribers (id, page_id, project_id, email, confirmed_at, created_at) VALUES
         ('psub_dash0000000000000001', $1, $2, 'ann@example.com', now(), now()),
         ('psub_dash0000000000000002', $1, $2, 'ben@example.com', NULL, now())`,
      [made.body.data.id, p.projectId],
    );
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/pages`);
    const card = page.getByRole("listitem", { name: "Shop status" });
    const incidents = card.getByRole("region", { name: "Incidents of Shop status" });
    await incidents.getByRole("button", { name: "New incident" }).click();
    const form = incidents.getByRole("form", { name: "New incident" });
    await form.getByLabel("Title").fill("Payments are failing");
    await form.getByLabel("Impact").selectOption("critical");
    await form.getByLabel("Message").fill("Card payments fail at checkout; we are on it.");
    const preview = form.getByLabel("Preview of the public page");
    await preview.getByText("Payments are failing").waitFor();
    await preview.getByText("critical impact · Checkout").waitFor();
    await preview.getByText("Card payments fail at checkout; we are on it.").waitFor();
    await dash.screenshot(page, "status-page-incident-composer");
    await form.getByRole("button", { name: "Post incident" }).click();

    const open = incidents.getByRole("form", { name: "Update Payments are failing" });
    await open.locator("h4").getByText("investigating").waitFor();
    const pub = await waitFor(async () => {
      const r = await t.rest.get(`/v1/status/${slug}`);
      return r.body?.data?.incidents?.find((i: { title: string }) => i.title === "Payments are failing")
        ? r
        : undefined;
    }, "the incident on the public page");
    assert.equal(pub.body.data.incidents[0].impact, "critical");
    await open.getByLabel("New status").selectOption("identified");
    await open.getByLabel("Update").fill("A bad deploy; rolling back.");
    await open.getByRole("button", { name: "Post update" }).click();
    await open.locator("h4").getByText("identified").waitFor();
    // The public page during the incident (docs/pages.md).
    const tab = await context.newPage();
    await waitFor(async () => {
      const r = await t.rest.get(`/status/${slug}`);
      return r.text.includes("A bad deploy; rolling back.");
    }, "the update on the public page");
    await tab.goto(`/status/${slug}`);
    await tab.getByText("A bad deploy; rolling back.").waitFor();
    await dash.screenshot(tab, "status-page-incident");
    await tab.close();

    const subs = card.getByRole("region", { name: "Subscribers of Shop status" });
    await subs.getByRole("cell", { name: "ann@example.com", exact: true }).waitFor();
    await subs.getByRole("cell", { name: "ben@example.com", exact: true }).waitFor();
    await subs.getByRole("button", { name: "Remove ann@example.com" }).click();
    await subs.getByRole("button", { name: "Yes, remove" }).click();
    await waitFor(
      async () => (await subs.getByRole("cell", { name: "ann@example.com", exact: true }).count()) === 0,
      "ann removed",
    );
    const rows = await t.app.deps.db.query("SELECT email FROM page_subscribers WHERE page_id = $1", [
      made.body.data.id,
    ]);
    assert.deepEqual(
      rows.rows.map((r: { email: string }) => r.email),
      ["ben@example.com"],
    );

    // A webhook subscriber (docs/pages.md "Webhook subscribers"): the server's 400 is shown by the
    // field; added, its secret is shown once, and the list shows its URL. A public address (this app
    // keeps outbound requests to public addresses): nothing is sent to it in this test.
    const hookUrl = subs.getByLabel("Webhook subscriber URL");
    await hookUrl.fill("ftp://example.com/hook");
    await subs.getByRole("button", { name: "Add webhook subscriber" }).click();
    await subs.getByText("must be an http: or https: URL").first().waitFor();
    await hookUrl.fill("https://93.184.215.14/status-hook");
    await subs.getByRole("button", { name: "Add webhook subscriber" }).click();
    const secret = await subs.getByTestId("secret").textContent();
    assert.match(secret ?? "", /^whsec_/);
    await subs.getByRole("cell", { name: "https://93.184.215.14/status-hook", exact: true }).waitFor();
    await subs.getByRole("button", { name: "Add webhook subscriber" }).scrollIntoViewIfNeeded();
    await dash.screenshot(page, "status-page-webhook-subscriber");
    await subs.getByRole("button", { name: "Done" }).click();
    await subs.getByTestId("secret").waitFor({ state: "detached" });
    const hooks = await t.app.deps.db.query("SELECT url FROM page_subscribers WHERE page_id = $1 AND url IS NOT NULL", [
      made.body.data.id,
    ]);
    assert.deepEqual(
      hooks.rows.map((r: { url: string }) => r.url),
      ["https://93.184.215.14/status-hook"],
    );
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("shows a member the pages without write controls", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    await heartbeat("api-server");
    const list = await t.rest.get(`/v1/projects/${p.projectId}/monitors`, { key: p.key });
    const made = await t.rest.post(
      `/v1/projects/${p.projectId}/pages`,
      {
        slug: `member-${randomBytes(3).toString("hex")}`,
        title: "Seen by members",
        published: true,
        monitors: [{ monitorId: list.body.data[0].id }],
      },
      { cookie: p.owner.cookie },
    );
    assert.equal(made.status, 201, made.text);
    const member = await memberOf(t.rest, p);
    const { context, page } = await dash.open(member);
    await page.goto(`/projects/${p.projectId}/pages`);
    await page.getByRole("listitem", { name: "Seen by members" }).getByText("published").waitFor();
    assert.equal(await page.getByRole("main").getByRole("button").count(), 0);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
