// The webhooks screens in a real browser against a real local receiver (node:http on 127.0.0.1;
// WEBHOOK_ALLOW_PRIVATE=true, short backoff, two attempts): create an http webhook from the UI
// (its secret shown once verifies the deliveries' signatures), a delivery that fails shows its
// attempts in the log, the Retry button makes it succeed without a reload, a test send is told in
// words, disabling stops deliveries, a webhook Vigil disabled for failing says why and since when
// and is enabled again from its page, and a member sees no write controls.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { memberOf } from "../helpers/fixtures.js";
import { useDashboard } from "../helpers/dashboard.js";
import { Receiver, waitFor } from "../webhooks/receiver.js";
import { verifyWebhook } from "../../sdk/src/index.js";
import { createPool } from "../../src/storage/db.js";
import { noteOutcomes } from "../../src/webhooks/store.js";

const { t, p, dash, pageErrors, available, SKIP } = useDashboard({
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_BACKOFF_BASE_MS: "50",
  WEBHOOK_MAX_ATTEMPTS: "2",
  WEBHOOK_TIMEOUT_MS: "2000",
});

let rx: Receiver;
before(async () => {
  rx = await Receiver.start();
});
after(async () => {
  await rx.close();
});

async function track(type: string, data: Record<string, unknown> = {}) {
  const r = await t.rest.post("/v1/events", { type, userId: "u1", data }, { key: p.key });
  assert.equal(r.status, 202, r.text);
  return r.body.data as { id: string };
}

describe("dashboard: webhooks", () => {
  it("creates an http webhook, shows failed attempts, retries to success, tests, disables", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    // The project has seen order.paid: the form offers it.
    await track("order.paid", { amount: 1 });
    let failing = true;
    const url = rx.on("/orders", () =>
      // Slow answers: the log shows each delivery unfinished first, so only its own refresh can show
      // the outcome (a reload right after the click would not).
      failing
        ? { status: 500, body: "receiver is down: try later", delayMs: 300 }
        : { status: 200, body: "thanks", delayMs: 800 },
    );

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/webhooks`);
    await page.getByRole("heading", { name: "No webhooks yet" }).waitFor();
    await page.getByRole("button", { name: "New webhook" }).click();
    const form = page.getByRole("form", { name: "New webhook" });
    // Discord asks for the channel's webhook URL; http for an endpoint.
    await form.getByLabel("Kind").selectOption("discord");
    await form.getByLabel("Discord webhook URL").waitFor();
    await form.getByLabel("Kind").selectOption("http");
    await form.getByLabel("Name").fill("Orders");
    await form.getByLabel("Endpoint URL").fill(url);
    await form.getByRole("checkbox", { name: "order.paid" }).check();
    await form.getByRole("checkbox", { name: /incident\.started/ }).check();
    await form.getByRole("button", { name: "Create webhook" }).click();

    const secret = (await page.getByTestId("secret").textContent())?.trim() ?? "";
    assert.match(secret, /^whsec_/);
    await page.getByRole("button", { name: "Done" }).click();
    // Shown once: gone after Done, and not in the list or a reload.
    await page.getByTestId("secret").waitFor({ state: "detached" });
    const row = page.getByRole("row").filter({ hasText: "Orders" });
    await row.getByText("enabled").waitFor();
    await row.getByText("incident.started").waitFor();
    await page.reload();
    await row.waitFor();
    assert.equal(await page.getByText(secret).count(), 0);
    await dash.screenshot(page, "webhooks");

    // An event of the watched type: the receiver answers 500 twice, the delivery is abandoned.
    const ev = await track("order.paid", { amount: 42 });
    await row.getByRole("link", { name: "Orders" }).click();
    await page.waitForURL(/\/webhooks\/wh_/);
    const delivery = page.getByRole("listitem").filter({ hasText: "order.paid" });
    await delivery.getByText("abandoned").waitFor({ timeout: 15_000 });
    const attempts = delivery.getByRole("row").filter({ hasText: "HTTP 500" });
    assert.equal(await attempts.count(), 2);
    await attempts.first().getByText("receiver is down: try later").waitFor();
    assert.equal(rx.at("/orders").length, 2);

    // The receiver recovers; Retry from the log: a third attempt, 200, shown without a reload.
    failing = false;
    await delivery.getByRole("button", { name: /^Retry delivery/ }).click();
    await delivery.getByText("succeeded").waitFor({ timeout: 15_000 });
    await delivery.getByRole("row").filter({ hasText: "HTTP 200" }).getByText("thanks").waitFor();
    assert.equal(
      await delivery
        .getByRole("row")
        .filter({ hasText: /HTTP \d{3}/ })
        .count(),
      3,
    );
    assert.equal(await delivery.getByRole("button", { name: /^Retry delivery/ }).count(), 0);
    // The secret the screen showed verifies what was received (the SDK's verifyWebhook).
    const last = rx.at("/orders").at(-1)!;
    const verified = await verifyWebhook(last.raw, last.headers as Record<string, string>, secret);
    assert.equal(verified.type, "order.paid");
    assert.equal((verified.data as { id: string }).id, ev.id);
    await assert.rejects(verifyWebhook(last.raw, last.headers as Record<string, string>, `${secret}x`));
    await dash.screenshot(page, "webhook-deliveries");

    // Send a test: the outcome in words.
    await page.getByRole("button", { name: "Send a test" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: /Test delivered: the endpoint answered 200/ })
      .waitFor({ timeout: 15_000 });
    assert.equal(rx.at("/orders").length, 4);

    // Disable: new events create no delivery. A second (enabled) webhook watching the same type
    // receives the event, so the first one had its chance.
    await page.getByRole("button", { name: "Disable" }).click();
    await page.getByText(/Disabled since .+: new events create no deliveries/).waitFor();
    const control = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: "control", url: rx.on("/control", () => ({ status: 200 })), events: ["order.paid"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(control.status, 201, control.text);
    const after = await track("order.paid", { amount: 7 });
    await waitFor(
      () => rx.at("/control").find((r) => JSON.parse(r.raw).data.id === after.id),
      "the control webhook's delivery",
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(rx.at("/orders").length, 4);
    await page.getByRole("button", { name: "Refresh" }).click();
    assert.equal(await page.getByRole("listitem").filter({ hasText: "order.paid" }).count(), 1);

    await page.goto(`/projects/${p.projectId}/webhooks`);
    await page.getByRole("row").filter({ hasText: "Orders" }).getByText("disabled").waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("creates a discord webhook (no secret), shows URL errors by the field, pages the delivery log", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/webhooks`);
    await page.getByRole("button", { name: "New webhook" }).click();
    const form = page.getByRole("form", { name: "New webhook" });
    await form.getByLabel("Kind").selectOption("discord");
    await form.getByLabel("Name").fill("Team channel");
    await form.getByLabel("Discord webhook URL").fill("ftp://discord.example/api/webhooks/1/x");
    // A type typed in (none seen yet), added with Enter.
    await form.getByLabel("Another event type").fill("deploy.finished");
    await form.getByLabel("Another event type").press("Enter");
    await form.getByRole("checkbox", { name: "deploy.finished" }).waitFor();
    await form.getByRole("button", { name: "Create webhook" }).click();
    // The server's validation message, under the URL field.
    const urlNote = await form.getByLabel("Discord webhook URL").getAttribute("aria-describedby");
    await page.locator(`[id="${urlNote}"].field-error`).waitFor();
    await form.getByLabel("Discord webhook URL").fill(rx.on("/discord", () => ({ status: 204 })));
    await form.getByRole("button", { name: "Create webhook" }).click();
    const row = page.getByRole("row").filter({ hasText: "Team channel" });
    await row.getByRole("cell", { name: "Discord", exact: true }).waitFor();
    assert.equal(await page.getByTestId("secret").count(), 0);

    // 23 test deliveries: the log shows the newest 20, then the 3 older ones.
    const id = (await row.getByRole("link", { name: "Team channel" }).getAttribute("href"))!.split("/").at(-1)!;
    for (let i = 0; i < 23; i++) {
      const r = await t.rest.post(`/v1/projects/${p.projectId}/webhooks/${id}/test`, {}, { cookie: p.owner.cookie });
      assert.equal(r.status, 202, r.text);
    }
    await waitFor(() => rx.at("/discord").length >= 23, "the test deliveries");
    await row.getByRole("link", { name: "Team channel" }).click();
    const items = page.getByRole("listitem").filter({ hasText: "webhook.test" });
    await page.getByRole("button", { name: "Older →" }).waitFor();
    assert.equal(await items.count(), 20);
    const newest = await items.first().getAttribute("aria-label");
    await page.getByRole("button", { name: "Older →" }).click();
    await page.getByText("Page 2").waitFor();
    await waitFor(async () => (await items.count()) === 3, "the second page");
    assert.ok(await page.getByRole("button", { name: "Older →" }).isDisabled());
    await page.getByRole("button", { name: "← Newer" }).click();
    await page.getByText("Page 1").waitFor();
    assert.equal(await items.first().getAttribute("aria-label"), newest);
    // The status filter: nothing failed.
    await page.getByRole("combobox", { name: "Show" }).selectOption("abandoned");
    await page.getByRole("heading", { name: "No abandoned deliveries" }).waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("shows why Vigil disabled a webhook and since when, and the owner enables it again", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const base = `/v1/projects/${p.projectId}/webhooks`;
    const made = await t.rest.post(
      base,
      { name: "Flaky", url: rx.on("/flaky", () => ({ status: 503 })), events: ["order.paid"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(made.status, 201, made.text);
    const id = made.body.data.id as string;
    // Its deliveries failed for six days (the runners' own record of outcomes, failing.ts): disabled.
    const pool = createPool(t.databaseUrl, 1);
    const now = new Date();
    const days = (n: number) => new Date(now.getTime() - n * 86_400_000);
    await noteOutcomes(pool, [{ webhookId: id, ok: false }], days(6), days(11));
    assert.deepEqual(
      (await noteOutcomes(pool, [{ webhookId: id, ok: false }], now, days(5))).map((w) => w.id),
      [id],
    );
    await pool.end();
    const off = (await t.rest.get(`${base}/${id}`, { cookie: p.owner.cookie })).body.data;
    assert.equal(off.enabled, false);
    assert.equal(off.disabledReason, "failing");
    assert.equal(off.disabledAt, now.toISOString());

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/webhooks`);
    const row = page.getByRole("row").filter({ hasText: "Flaky" });
    await row.getByText("failing for days · disabled just now").waitFor();
    await row.getByRole("link", { name: "Flaky" }).click();
    const notice = page.getByRole("status", { name: "Why this webhook is disabled" });
    await notice.getByText(/Disabled by Vigil since .+ \(just now\): every delivery failed for days/).waitFor();
    await notice.getByRole("button", { name: "Enable again" }).click();
    await notice.waitFor({ state: "detached" });
    await page.getByRole("heading", { name: /Flaky/ }).getByText("enabled").waitFor();
    const on = (await t.rest.get(`${base}/${id}`, { cookie: p.owner.cookie })).body.data;
    assert.equal(on.enabled, true);
    assert.equal(on.disabledReason, null);
    assert.equal(on.disabledAt, null);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("payload filters: set in the settings, only matching events delivered, shown again on reload, removed", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    await track("order.paid", { amount: 1 }); // the project has seen data.amount, a number
    const base = `/v1/projects/${p.projectId}/webhooks`;
    const made = await t.rest.post(
      base,
      { name: "Big orders", url: rx.on("/big", () => ({ status: 200 })), events: ["order.paid"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(made.status, 201, made.text);
    const id = made.body.data.id as string;
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/webhooks/${id}`);
    const settings = page.getByRole("form", { name: "Settings" });
    const filters = settings.getByRole("group", { name: "Only events matching" });
    await filters.getByText("Every event of the chosen types.").waitFor();
    await filters.getByRole("button", { name: "+ Condition" }).click();
    await filters.getByLabel("Field").fill("data.amount");
    await filters.getByLabel("Operator").selectOption("gt");
    await filters.getByLabel("Value", { exact: true }).fill("100");
    await filters.getByRole("button", { name: "Apply filters" }).click();
    await settings.getByRole("button", { name: "Save" }).click();
    await settings.getByRole("status").getByText("Saved.").waitFor();
    await dash.screenshot(page, "webhook-filters");
    const stored = (await t.rest.get(`${base}/${id}`, { cookie: p.owner.cookie })).body.data;
    assert.deepEqual(stored.filters, { and: [{ field: "data.amount", operator: "gt", value: 100 }] });

    // Only the big order becomes a delivery.
    await track("order.paid", { amount: 20 });
    const big = await track("order.paid", { amount: 250 });
    await waitFor(() => rx.at("/big").length >= 1, "the big order's delivery");
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(
      rx.at("/big").map((r) => (JSON.parse(r.raw) as { data: { id: string } }).data.id),
      [big.id],
    );

    // Shown again after a reload; cleared and saved: removed (null), every order.paid delivered again.
    await filters.getByText("Not applied yet.").waitFor({ state: "detached" });
    await page.reload();
    assert.equal(await filters.getByLabel("Field").inputValue(), "data.amount");
    assert.equal(await filters.getByText("Not applied yet.").count(), 0, "the stored filter is the applied one");
    await filters.getByRole("button", { name: "Clear" }).click();
    await settings.getByRole("button", { name: "Save" }).click();
    await settings.getByRole("status").getByText("Saved.").waitFor();
    assert.equal((await t.rest.get(`${base}/${id}`, { cookie: p.owner.cookie })).body.data.filters, null);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("shows a member no write controls", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const member = await memberOf(t.rest, p);
    const made = await t.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { name: "for members", url: rx.on("/members", () => ({ status: 200 })), events: ["signup"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(made.status, 201, made.text);
    const hookId = made.body.data.id as string;
    const { context, page } = await dash.open(member);
    for (const path of ["webhooks", `webhooks/${hookId}`]) {
      await page.goto(`/projects/${p.projectId}/${path}`);
      await page.getByRole("heading", { name: /managed by the project's owner and admins/ }).waitFor();
      assert.equal(await page.getByRole("main").getByRole("button").count(), 0, path);
      assert.equal(await page.getByRole("alert").count(), 0, path);
    }
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
