// The data lifecycle in a real browser: the settings screen shows the retention in force (the
// server's default, then the project's own period), refuses a bad period by name, and goes back to
// the default; a user's page exports their record and events as an NDJSON file, and deletes them as a
// job followed until it has succeeded (then the user is a 404 and their events are gone); a member
// sees neither the retention form nor the delete button.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";
import { memberOf } from "../helpers/fixtures.js";
import { useDashboard } from "../helpers/dashboard.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard({ RETENTION_DAYS: "400" });

describe("dashboard: data lifecycle", () => {
  it("shows and sets the retention, with a bad period's error by name", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/settings`);
    const inForce = page.getByTestId("retention-in-force");
    await inForce.getByText("400 days (the server's default)").waitFor();
    const box = page.getByLabel("Days to keep");
    // Past RETENTION_MAX_DAYS (3650): the browser's own checks (min 1, whole numbers) let it through.
    await box.fill("99999");
    await page.getByRole("button", { name: "Save retention" }).click();
    await page.locator(".field-error").first().waitFor();
    const stored = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.equal(stored.body.data.retentionDays ?? null, null, "a refused period is not stored");

    await box.fill("30");
    await page.getByRole("button", { name: "Save retention" }).click();
    await inForce.getByText("30 days (this project's setting)").waitFor();
    const set = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.equal(set.body.data.retentionDays, 30);
    assert.equal(set.body.data.retention.days, 30);
    await dash.screenshot(page, "settings-retention");

    await page.getByRole("button", { name: "Use the server's default" }).click();
    await inForce.getByText("400 days (the server's default)").waitFor();
    const back = await t.rest.get(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
    assert.equal(back.body.data.retentionDays ?? null, null);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("exports a user's data and deletes them as a job", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const marker = `marker-${Date.now()}`;
    const sent = await t.rest.post(
      "/v1/events/batch",
      {
        events: [
          {
            type: "signup",
            userId: "erin",
            data: { note: marker },
            timestamp: new Date(Date.now() - 2000).toISOString(),
          },
          {
            type: "purchase",
            userId: "erin",
            data: { amount: 12 },
            timestamp: new Date(Date.now() - 1000).toISOString(),
          },
          { type: "signup", userId: "frank" },
        ],
      },
      { key: p.key },
    );
    assert.equal(sent.status, 202, sent.text);
    const user = await t.rest.get(`/v1/projects/${p.projectId}/users/erin`, { key: p.key });
    assert.equal(user.status, 200, user.text);
    const userId: string = user.body.data.id;

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/users/${userId}`);
    await page.getByRole("heading", { name: "This person's data" }).waitFor();

    // Export: an NDJSON file, the record on the first line, then both events, oldest first.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Export as NDJSON" }).click(),
    ]);
    assert.match(download.suggestedFilename(), /\.ndjson$/);
    const text = await readFile((await download.path())!, "utf8");
    const [record, ...events] = text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l));
    assert.equal(record.externalId, "erin");
    assert.deepEqual(
      events.map((e: { type: string }) => e.type),
      ["signup", "purchase"],
    );
    assert.equal(events[0].data.note, marker);

    // Delete: asked twice, then the job is followed to its end.
    await page.getByRole("button", { name: "Delete user and events" }).click();
    await page.getByRole("button", { name: "Yes, delete user and events" }).click();
    // Followed to its end; then the page says the user is gone instead of showing what was deleted.
    await page.getByTestId("delete-job").waitFor();
    const done = page.getByTestId("user-deleted");
    await done.getByText(/This user and their 2 events were deleted/).waitFor({ timeout: 20_000 });
    assert.equal(await page.getByText(marker).count(), 0, "the deleted events are no longer shown");
    await dash.screenshot(page, "user-deleted");
    const gone = await t.rest.get(`/v1/projects/${p.projectId}/users/erin`, { key: p.key });
    assert.equal(gone.status, 404, gone.text);
    const left = await t.rest.get(`/v1/projects/${p.projectId}/events?userId=erin`, { key: p.key });
    assert.deepEqual(left.body.data, []);
    const other = await t.rest.get(`/v1/projects/${p.projectId}/users/frank`, { key: p.key });
    assert.equal(other.status, 200, "another user stays");
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("shows a member the retention and no delete button", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const member = await memberOf(t.rest, p, "lifecycle-member");
    await t.rest.post("/v1/events", { type: "visit", userId: "gina" }, { key: p.key });
    const user = await t.rest.get(`/v1/projects/${p.projectId}/users/gina`, { key: p.key });
    const { context, page } = await dash.open(member);
    await page.goto(`/projects/${p.projectId}/settings`);
    await page.getByTestId("retention-in-force").waitFor();
    assert.equal(await page.getByLabel("Days to keep").count(), 0);
    await page.goto(`/projects/${p.projectId}/users/${user.body.data.id}`);
    await page.getByText("Only the project's owner and admins can delete a user.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Delete user and events" }).count(), 0);
    await page.getByRole("button", { name: "Export as NDJSON" }).waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
