// The users screens in a real browser: the empty state of a project without users; users made by
// events (a userId, a $identify event) and by identify, listed with their properties and exact
// event counts (the analytics Group by userId, checked against each record's own eventCount);
// paging past 50 users; a user's page with their properties and their events, newest first, with
// "Load older events" walking the cursor.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useDashboard } from "../helpers/dashboard.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard();

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

describe("dashboard: users", () => {
  it("explains where users come from in an empty project", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const created = await t.rest.post("/v1/projects", { name: "Empty", platform: "node" }, { cookie: p.owner.cookie });
    assert.equal(created.status, 201, created.text);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${created.body.data.id}/users`);
    await page.getByRole("heading", { name: "No users yet" }).waitFor();
    await page.getByText(/as soon as an event carries a userId/).waitFor();
    await page.getByText(`POST /v1/projects/${created.body.data.id}/identify`).waitFor();
    await dash.screenshot(page, "users-empty");
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("lists users with properties and event counts, pages, and shows a user's events", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // 55 users seen two days ago, one event each (the second page's users).
    const old = await t.rest.post(
      "/v1/events/batch",
      {
        events: Array.from({ length: 55 }, (_, i) => ({
          type: "visit",
          userId: `old-${String(i).padStart(2, "0")}`,
          timestamp: ago(2 * 86_400_000 + i * 1000),
        })),
      },
      { key: p.key },
    );
    assert.equal(old.status, 202, old.text);
    assert.equal(old.body.data.accepted, 55);
    // alice: 30 events, in order; bob: 2; dave: a $identify event; carol: identified, no event.
    const steps = Array.from({ length: 30 }, (_, i) => ({
      type: `step-${i + 1}`,
      userId: "alice",
      data: { n: i + 1 },
      timestamp: ago((30 - i) * 1000),
    }));
    const recent = await t.rest.post(
      "/v1/events/batch",
      {
        events: [
          ...steps,
          { type: "login", userId: "bob" },
          { type: "login", userId: "bob", data: { plan: "free" } },
          { type: "$identify", userId: "dave", data: { name: "Dave", plan: "pro" } },
        ],
      },
      { key: p.key },
    );
    assert.equal(recent.body.data.accepted, 33, recent.text);
    for (const [externalId, properties] of [
      ["alice", { name: "Alice", plan: "team", seats: 12, address: { city: "Lisbon" } }],
      ["carol", { plan: "pro" }],
    ] as const) {
      const r = await t.rest.post(
        `/v1/projects/${p.projectId}/identify`,
        { externalId, properties },
        { cookie: p.owner.cookie },
      );
      assert.equal(r.status, 200, r.text);
    }

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/users`);
    await page.getByRole("status").filter({ hasText: "1–50 of 59" }).waitFor();
    const countOf = async (externalId: string) => {
      const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: externalId, exact: true }) });
      const cell = row.getByTestId("event-count");
      await cell.filter({ hasNotText: "…" }).waitFor();
      return (await cell.textContent())!.trim();
    };
    const expected = { alice: "30", bob: "2", dave: "1", carol: "0" };
    for (const [user, n] of Object.entries(expected)) {
      assert.equal(await countOf(user), n, user);
      // The same as the record's own count (GET .../users/:userId).
      const rec = await t.rest.get(`/v1/projects/${p.projectId}/users/${user}`, { key: p.key });
      assert.equal(String(rec.body.data.eventCount), n, user);
    }
    const aliceRow = page.getByRole("row").filter({ has: page.getByRole("link", { name: "alice", exact: true }) });
    await aliceRow.getByText("Alice", { exact: true }).waitFor();
    assert.match((await aliceRow.textContent())!, /\+1 more/);
    await dash.screenshot(page, "users");

    // The second page: the remaining nine, with their counts; the URL keeps the page.
    await page.getByRole("button", { name: "Next" }).click();
    await page.getByRole("status").filter({ hasText: "51–59 of 59" }).waitFor();
    assert.match(page.url(), /\?page=2$/);
    assert.equal(await page.getByRole("link", { name: /^old-\d\d$/ }).count(), 9);
    assert.equal(await countOf("old-54"), "1");
    assert.ok(await page.getByRole("button", { name: "Next" }).isDisabled());
    await page.getByRole("button", { name: "Previous" }).click();
    await page.getByRole("status").filter({ hasText: "1–50 of 59" }).waitFor();

    // alice's page: her properties as a table, her events newest first, 25 then the older 5.
    await page.getByRole("link", { name: "alice", exact: true }).click();
    await page.getByRole("heading", { name: "alice", level: 1 }).waitFor();
    assert.equal((await page.getByTestId("user-event-count").textContent())!.trim(), "30");
    const props = page.getByRole("table", { name: "Properties" });
    await props.getByRole("row", { name: /plan\s+team/ }).waitFor();
    await props.getByRole("row", { name: /seats\s+12/ }).waitFor();
    await props.getByText(/"city": "Lisbon"/).waitFor();
    const events = page.getByRole("table", { name: "Events of alice" });
    await events.getByText("step-30", { exact: true }).waitFor();
    assert.equal(await events.locator("tbody tr").count(), 25);
    assert.equal(await events.locator("tbody tr").first().locator("code").textContent(), "step-30");
    await dash.screenshot(page, "user");
    await page.getByRole("button", { name: "Load older events" }).click();
    await events.getByText("step-1", { exact: true }).waitFor();
    assert.equal(await events.locator("tbody tr").count(), 30);
    assert.equal(await page.getByRole("button", { name: "Load older events" }).count(), 0);
    const types = await events.locator("tbody tr td:nth-child(2)").allTextContents();
    assert.deepEqual(types, steps.map((s) => s.type).reverse());

    // carol (identified only): properties, and no events yet.
    await page.goto(`/projects/${p.projectId}/users/carol`);
    await page.getByRole("heading", { name: "carol", level: 1 }).waitFor();
    await page.getByText("No events carry this user's id").waitFor();
    // Hostile property names and values are data: shown as text, nothing runs, nothing breaks.
    const hostile = await t.rest.req("POST", `/v1/projects/${p.projectId}/identify`, {
      raw: '{"externalId":"mallory","properties":{"__proto__":{"polluted":true},"constructor":"ctor","<img src=x onerror=alert(1)>":"<b>bold</b>"}}',
      contentType: "application/json",
      cookie: p.owner.cookie,
    });
    assert.equal(hostile.status, 200, hostile.text);
    page.on("dialog", (d) => pageErrors.push(`dialog: ${d.message()}`));
    await page.goto(`/projects/${p.projectId}/users/mallory`);
    const hostileProps = page.getByRole("table", { name: "Properties" });
    await hostileProps.getByRole("row", { name: /constructor\s+ctor/ }).waitFor();
    await hostileProps.getByText("<img src=x onerror=alert(1)>", { exact: true }).waitFor();
    await hostileProps.getByText("<b>bold</b>", { exact: true }).waitFor();
    await hostileProps.getByRole("row", { name: /__proto__\s+\{\s+"polluted": true\s+\}/ }).waitFor();
    // An unknown user: not found, in words.
    await page.goto(`/projects/${p.projectId}/users/usr_nobody`);
    await page
      .getByRole("alert")
      .filter({ hasText: /not found/ })
      .waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
