// The uptime screens in a real browser against a real Vigil (real timers, the embedded deadline
// scheduler): the empty state's heartbeat command; monitors appearing from heartbeats sent over
// REST with their status, 24-hour sparkline and 90-day bars; a one-second monitor created in the
// dashboard missing its deadline, turning red on the list and its incident appearing on its page
// without a reload; editing the incident and posting an update (kept across a reload); pause,
// resume and delete for the owner; none of those controls for a member; the maintenance calendar
// (a one-off window made in the form, listed as upcoming, deleted) and the public status page
// while a window is in progress.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Page } from "playwright-core";
import { memberOf, pingKey } from "../helpers/fixtures.js";
import { runShownCurl, useDashboard } from "../helpers/dashboard.js";
import { randomBytes } from "node:crypto";
import { waitFor } from "../uptime/util.js";

// PUBLIC_URL: the ping URLs a monitor's page shows are on the public address, not the page's origin.
// STATUS_PAGE_REFRESH_MS: the public page's cache (docs/pages.md "Caching") short, so a window's start shows at once.
const PUBLIC_URL = "https://vigil.example";
const { t, p, dash, pageErrors, available, SKIP } = useDashboard({ PUBLIC_URL, STATUS_PAGE_REFRESH_MS: "100" });

const base = () => `/v1/projects/${p.projectId}`;
const beat = async (slug: string, body: Record<string, unknown> = {}) => {
  const r = await t.rest.post(`${base()}/heartbeats/${slug}`, body, { key: p.key });
  assert.equal(r.status, 200, r.text);
  return r.body.data.monitor;
};
/** The monitor's card on the list (by its heading). */
const card = (page: Page, name: string) =>
  page
    .getByRole("list", { name: "Monitors" })
    .getByRole("listitem")
    .filter({ has: page.getByRole("heading", { name, exact: true }) });
const today = () => new Date().toISOString().slice(0, 10);

describe("dashboard: uptime", () => {
  it("shows the heartbeat command, then monitors from heartbeats with status, sparkline and 90-day bars", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/uptime`);
    await page.getByRole("heading", { name: "No monitors yet" }).waitFor();
    const curl = await page.getByTestId("heartbeat-curl").textContent();
    assert.match(curl ?? "", new RegExp(`/v1/projects/${p.projectId}/heartbeats/nightly-backup`));
    assert.match(curl ?? "", /Authorization: Bearer \$VIGIL_KEY/);

    // Heartbeats over REST create the monitors; the list shows them without a reload.
    for (const latencyMs of [42, 38, 51, 47]) await beat("backup-job", { expectedIntervalMs: 3_600_000, latencyMs });
    await beat("api-worker", { expectedIntervalMs: 60_000, gracePeriodMs: 30_000, latencyMs: 120 });
    await beat("search-indexer", { expectedIntervalMs: 300_000, status: "down" });

    const backup = card(page, "backup-job");
    await backup.getByText("up", { exact: true }).waitFor({ timeout: 10_000 });
    await card(page, "api-worker").getByText("up", { exact: true }).waitFor();
    await card(page, "search-indexer").getByText("down", { exact: true }).waitFor();
    await backup.getByText("1 h + 30 s grace").waitFor(); // expected interval and the default grace
    await backup.getByText("just now").waitFor(); // last heartbeat

    // 90 bars, one per day, each labelled; today is up, the days before the monitor existed have no data.
    const bars = backup.getByRole("group", { name: "Last 90 days of backup-job" }).getByRole("img");
    await bars.first().waitFor();
    assert.equal(await bars.count(), 90);
    assert.equal(await bars.last().getAttribute("aria-label"), `${today()}: 100 % up`);
    assert.match((await bars.first().getAttribute("aria-label")) ?? "", /^\d{4}-\d{2}-\d{2}: no data$/);
    const down = card(page, "search-indexer").getByRole("group", { name: "Last 90 days of search-indexer" });
    assert.match((await down.getByRole("img").last().getAttribute("aria-label")) ?? "", /: [\d.]+ % up, .+ down$/);
    // The sparkline: the hourly latency of the last 24 hours.
    await backup
      .getByRole("img", {
        name: /^Last 24 hours of backup-job: latency [\d.]+–[\d.]+ ms \(hourly average\); no downtime$/,
      })
      .waitFor();
    await dash.screenshot(page, "uptime");
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("turns a one-second monitor down on the list and shows its incident, to edit and update, without reload", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/uptime`);
    await page.getByRole("button", { name: "New monitor" }).click();
    await page.getByLabel("Name").fill("Flaky cron");
    await page.getByLabel("Expected interval (seconds)").fill("0.01");
    await page.getByRole("button", { name: "Create monitor" }).click();
    // The server's validation message, next to the field it names.
    await page.getByText("at least 100", { exact: true }).waitFor();
    // Careless input: words and numbers past int64 are refused by the server, in words, not a crash.
    await page.getByLabel("Expected interval (seconds)").fill("1e300");
    await page.getByRole("button", { name: "Create monitor" }).click();
    await page.getByText(/^at most/).waitFor();
    await page.getByLabel("Expected interval (seconds)").fill("soon");
    await page.getByRole("button", { name: "Create monitor" }).click();
    await page.getByText("at least 100", { exact: true }).waitFor();
    await page.getByLabel("Expected interval (seconds)").fill("1");
    await page.getByLabel("Grace period (seconds)").fill("0");
    await page.getByRole("button", { name: "Create monitor" }).click();
    await page.getByRole("heading", { name: "Monitor “Flaky cron” created" }).waitFor();
    await page.getByRole("button", { name: "Done" }).click();
    const flaky = card(page, "Flaky cron");
    await flaky.getByText("unknown", { exact: true }).waitFor();
    await flaky.getByText("after the first heartbeat").waitFor();

    // Its page, open in a second tab before anything happens.
    const href = await flaky.getByRole("link", { name: "Flaky cron" }).getAttribute("href");
    assert.match(href ?? "", new RegExp(`^/projects/${p.projectId}/uptime/mon_`));
    const detail = await context.newPage();
    await detail.goto(href!);
    await detail.getByRole("heading", { name: "Incidents" }).waitFor();
    await detail.getByText(/^No incidents\./).waitFor();
    // Marks both documents: a reload would lose the marks.
    for (const pg of [page, detail]) await pg.evaluate(() => ((window as unknown as { mark: number }).mark = 1));

    await beat("flaky-cron", { latencyMs: 5 });
    // No heartbeat within a second: down on the list, the incident on its page.
    await flaky.getByText("down", { exact: true }).waitFor({ timeout: 10_000 });
    const incident = detail
      .getByRole("listitem")
      .filter({ has: detail.getByRole("heading", { name: "Flaky cron is down" }) });
    await incident.waitFor({ timeout: 10_000 });
    await incident.getByText("open", { exact: true }).waitFor();
    await detail
      .getByRole("heading", { name: /Flaky cron/, level: 1 })
      .getByText("down", { exact: true })
      .waitFor();
    await detail.getByText(/down for .+ \(since /).waitFor();
    for (const pg of [page, detail])
      assert.equal(await pg.evaluate(() => (window as unknown as { mark?: number }).mark), 1, "not reloaded");
    const today90 = card(page, "Flaky cron")
      .getByRole("group", { name: "Last 90 days of Flaky cron" })
      .getByRole("img");
    await waitFor(
      async () => /down$/.test((await today90.last().getAttribute("aria-label")) ?? ""),
      10_000,
      "a red day",
    );

    // Edit the incident's title and description; kept across a reload.
    await incident.getByRole("button", { name: /^Edit incident/ }).click();
    await detail.getByLabel("Incident title").fill("Cron host lost power");
    await detail.getByLabel("Incident description").fill("The rack's PDU tripped at 03:12.\nMoved to the spare host.");
    await detail.getByRole("button", { name: "Save incident" }).click();
    await detail.getByRole("heading", { name: "Cron host lost power" }).waitFor();
    await detail.reload();
    const edited = detail
      .getByRole("listitem")
      .filter({ has: detail.getByRole("heading", { name: "Cron host lost power" }) });
    await edited.getByText("The rack's PDU tripped at 03:12.", { exact: false }).waitFor();

    // Post an update: shown in the incident's updates, and kept.
    await edited.getByLabel("Post an update").fill("Power is back; watching the next runs.");
    await edited.getByRole("button", { name: "Post update" }).click();
    const updates = edited.getByRole("list", { name: "Updates of “Cron host lost power”" });
    await updates.getByText("Power is back; watching the next runs.").waitFor();
    assert.equal(await edited.getByLabel("Post an update").inputValue(), "");
    const stored = await t.rest.get(`${base()}/monitors/${href!.split("/").pop()}/incidents`, { key: p.key });
    assert.equal(stored.body.data[0].title, "Cron host lost power");
    assert.equal(stored.body.data[0].description, "The rack's PDU tripped at 03:12.\nMoved to the spare host.");
    await detail.reload();
    await detail.getByText("Power is back; watching the next runs.").waitFor();
    await dash.screenshot(detail, "monitor");
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("pauses, resumes and deletes for the owner; shows a member none of those; an unknown monitor is not found", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/uptime`);
    const backup = card(page, "backup-job");
    await backup.getByRole("button", { name: "Pause backup-job" }).click();
    await backup.getByText("paused", { exact: true }).waitFor();
    const paused = await t.rest.get(`${base()}/monitors/overview`, { key: p.key });
    assert.equal(paused.body.data.find((m: { slug: string }) => m.slug === "backup-job").status, "paused");
    await backup.getByRole("button", { name: "Resume backup-job" }).click();
    await backup.getByText("unknown", { exact: true }).waitFor();

    const worker = card(page, "api-worker");
    const workerId = (await worker.getByRole("link", { name: "api-worker" }).getAttribute("href"))!.split("/").pop();
    await worker.getByRole("button", { name: "Delete" }).click();
    await worker.getByRole("button", { name: "Yes, delete api-worker" }).click();
    await worker.waitFor({ state: "detached" });
    assert.equal((await t.rest.get(`${base()}/monitors/${workerId}`, { key: p.key })).status, 404);

    // A deleted (or never existing) monitor's page says so in words.
    await page.goto(`/projects/${p.projectId}/uptime/${workerId}`);
    await page
      .getByRole("alert")
      .filter({ hasText: /not found/i })
      .waitFor();

    const member = await memberOf(t.rest, p, "uptime-member");
    const m = await dash.open(member);
    await m.page.goto(`/projects/${p.projectId}/uptime`);
    await card(m.page, "backup-job").waitFor();
    assert.equal(await m.page.getByRole("button", { name: /^(Pause|Resume|Delete)/ }).count(), 0);
    assert.equal(await m.page.getByRole("button", { name: "New monitor" }).count(), 0);
    await card(m.page, "Flaky cron").getByRole("link", { name: "Flaky cron" }).click();
    await m.page.getByRole("heading", { name: "Incidents" }).waitFor();
    assert.equal(await m.page.getByRole("button", { name: /^(Pause|Resume|Delete)/ }).count(), 0);
    assert.ok(await m.page.getByLabel("Expected interval (seconds)").isDisabled());
    await m.page.getByText("Only the project's owner and admins can change a monitor.").waitFor();
    // A member may still post an incident update (decisions.md: "member or above").
    // (waited for: the incidents render after the monitor's settings, and a count does not wait)
    await m.page.getByLabel("Post an update").first().waitFor();
    assert.deepEqual(pageErrors, []);
    await m.context.close();
    await context.close();
  });
  it("pages a monitor's heartbeats, newest first; edits its settings; a hostile monitor name is shown as text", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    for (let i = 0; i < 23; i++) await beat("pager", { latencyMs: i, metadata: { run: i } });
    const hostile = '<img src=x onerror="window.pwned=1">';
    const made = await t.rest.post(`${base()}/monitors`, { name: hostile, slug: "hostile" }, { key: p.key });
    assert.equal(made.status, 201, made.text);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/uptime`);
    await card(page, hostile).waitFor();
    await card(page, "pager").getByRole("link", { name: "pager" }).click();
    const table = page.getByRole("region", { name: "Heartbeats", exact: true }).getByRole("table");
    const latencies = async () => (await table.locator("tbody td.num").allTextContents()).map((x) => x.trim());
    await table.waitFor();
    const first = await latencies();
    assert.equal(first.length, 20);
    assert.deepEqual(first.slice(0, 2), ["22 ms", "21 ms"]);
    assert.equal(first[19], "3 ms");
    await table.getByText('{"run":22}').waitFor();
    await page.getByRole("button", { name: "Older" }).click();
    await table.getByRole("cell", { name: "0 ms", exact: true }).waitFor();
    assert.deepEqual(await latencies(), ["2 ms", "1 ms", "0 ms"]);
    assert.ok(await page.getByRole("button", { name: "Older" }).isDisabled());
    await page.getByRole("button", { name: "Newest" }).click();
    await table.getByRole("cell", { name: "22 ms", exact: true }).waitFor();
    assert.equal((await latencies()).length, 20);
    assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);

    // Its settings: a slug another monitor has is refused in words; a new interval is kept.
    const pagerId = page.url().split("/").pop();
    await page.getByLabel("Slug").fill("hostile");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByRole("alert").filter({ hasText: /slug/i }).first().waitFor();
    await page.getByLabel("Slug").fill("pager");
    await page.getByLabel("Expected interval (seconds)").fill("120");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    const saved = await t.rest.get(`${base()}/monitors/${pagerId}`, { key: p.key });
    assert.equal(saved.body.data.expectedIntervalMs, 120_000);
    assert.equal(saved.body.data.slug, "pager");
    await page.getByText("Every 2 min from the job").waitFor();
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("shows a cron monitor's schedule in words, next runs, runs with exit codes and their durations, and its ping URL", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const created = await t.rest.post(
      `${base()}/monitors`,
      {
        name: "Nightly backup",
        slug: "nightly-db-backup",
        schedule: { cron: "30 3 * * 1-5", timezone: "Europe/Berlin" },
        maxRuntimeMs: 3_600_000,
        failureTolerance: 1,
      },
      { key: p.key },
    );
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id;
    const signal = async (path: string, body: Record<string, unknown> = {}) => {
      const r = await t.rest.post(`${base()}/heartbeats/nightly-db-backup/${path}`, body, { key: p.key });
      assert.equal(r.status, 200, r.text);
    };
    // Three runs with a duration each: a success, a failure with exit code 2 (tolerated), a success.
    for (const [runId, end, output] of [
      ["run-1", "exit/0", "dumped 1.2 GB"],
      ["run-2", "exit/2", "pg_dump: error: connection refused"],
      ["run-3", "exit/0", "dumped 1.3 GB"],
    ]) {
      await signal("start", { runId });
      await new Promise((r) => setTimeout(r, 40));
      await signal(end, { runId, output });
    }
    const next = (await t.rest.get(`${base()}/monitors/${id}/schedule`, { key: p.key })).body.data.next;
    // A ping key made over REST: its secret is not this session's, so the page shows a placeholder.
    await pingKey(t.rest, p, "cron host");

    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/uptime/${id}`);
    await page.getByTestId("schedule-words").getByText("At 03:30, Monday through Friday").waitFor();
    assert.match((await page.getByTestId("schedule-words").textContent()) ?? "", /\(Europe\/Berlin\)$/);
    const nextRuns = page.getByRole("list", { name: "Next runs" }).locator("time");
    await nextRuns.first().waitFor();
    assert.deepEqual(await nextRuns.evaluateAll((ts) => ts.map((x) => x.getAttribute("datetime"))), next);

    // The run list, newest first: outcome, exit code, run id; the duration chart has the three runs.
    const runs = page.getByRole("table", { name: "Runs of Nightly backup" });
    await runs.getByRole("cell", { name: "run-3" }).waitFor();
    const rows = await runs
      .locator("tbody tr")
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].slice(1, 5).map((td) => td.textContent?.trim())),
      );
    assert.deepEqual(
      rows.map((r) => [r[0], r[2], r[3]]),
      [
        ["succeeded", "0", "run-3"],
        ["failed", "2", "run-2"],
        ["succeeded", "0", "run-1"],
      ],
    );
    for (const r of rows) assert.match(r[1] ?? "", /^\d+ ms$/, "each run's duration");
    const chart = page.locator('[aria-label="Run durations of Nightly backup"][data-rendered]');
    await chart.waitFor();
    assert.equal(await chart.getAttribute("data-rendered"), "3");

    // The ping URL: a placeholder, naming the ping key that exists.
    const ping = page.getByRole("region", { name: "Ping URL" });
    await ping.getByText("“cron host” (").waitFor();
    const placeholder = await ping.getByTestId("ping-url").textContent();
    assert.equal(placeholder, `curl -fsS -m 10 --retry 5 ${PUBLIC_URL}/ping/<ping-key>/nightly-db-backup`);
    await page.evaluate(() => document.getElementById("schedule-title")?.scrollIntoView());
    await dash.screenshot(page, "cron-monitor");

    // A ping key created in this session: the page then shows the full URL, which works as shown.
    await ping.getByRole("link", { name: "create a new one" }).click();
    await page.getByLabel("Key name").fill("backup host");
    await page.getByRole("radio", { name: /^Ping/ }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByTestId("secret").textContent();
    assert.match(secret ?? "", /^vk_ping_/);
    await page.getByRole("button", { name: "Done" }).click();
    await page.goBack();
    await ping.getByText("“backup host” you just created").waitFor();
    const full = (await ping.getByTestId("ping-url").textContent()) ?? "";
    assert.equal(full, `curl -fsS -m 10 --retry 5 ${PUBLIC_URL}/ping/${secret}/nightly-db-backup`);
    // Run as shown, with this test's Vigil standing in for the public address.
    assert.equal((await runShownCurl(full.replace(PUBLIC_URL, t.url), "")).status, 200);
    assert.deepEqual(pageErrors, []);
    await context.close();
  });

  it("plans a one-off maintenance window in the form, lists it as upcoming, deletes it; the public page during one", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const db = await beat("maint-db");
    const web = await beat("maint-web");
    // A recurring window made over REST: its schedule is shown in words.
    const weekly = await t.rest.post(
      `${base()}/maintenances`,
      {
        title: "Weekly patching",
        monitorIds: [web.id],
        schedule: { cron: "0 4 * * 0", timezone: "Europe/Berlin", durationMs: 1_800_000 },
      },
      { key: p.key },
    );
    assert.equal(weekly.status, 201, weekly.text);
    const { context, page } = await dash.open(p.owner);
    await page.goto(`/projects/${p.projectId}/uptime`);
    await page.getByRole("navigation", { name: "Uptime views" }).getByRole("link", { name: "Maintenance" }).click();
    await page.waitForURL(new RegExp(`/projects/${p.projectId}/uptime/maintenance$`));
    const upcoming = page.getByRole("list", { name: "In progress and upcoming" });
    const item = (title: string) =>
      upcoming.getByRole("listitem").filter({ has: page.getByRole("heading", { name: title, exact: true }) });
    await item("Weekly patching").getByText("At 04:00, only on Sunday").waitFor();

    // The form's state is in the URL (a reload keeps it open).
    await page.getByRole("button", { name: "New maintenance window" }).click();
    await page.waitForURL(/\?new=once$/);
    await page.reload();
    const form = page.getByRole("form", { name: "New maintenance window" });
    await form.getByLabel("Title").fill("Database upgrade");
    await form.getByRole("checkbox", { name: "maint-db" }).check();
    await form.getByLabel("Starts").fill("2030-01-15T02:00");
    await form.getByLabel("Ends").fill("2030-01-15T04:00");
    await form.getByRole("button", { name: "Create window" }).click();
    const upgrade = item("Database upgrade");
    await upgrade.getByText("scheduled", { exact: true }).waitFor();
    await upgrade.getByText("maint-db", { exact: true }).waitFor();
    assert.doesNotMatch(page.url(), /new=/);
    // Soonest first: the 2030 window after next Sunday's.
    assert.deepEqual(await upcoming.locator("h3").allTextContents(), ["Weekly patching", "Database upgrade"]);
    const stored = (await t.rest.get(`${base()}/maintenances`, { key: p.key })).body.data.find(
      (m: { title: string }) => m.title === "Database upgrade",
    );
    const expected = await page.evaluate(() => new Date("2030-01-15T02:00").toISOString());
    assert.equal(stored.startsAt, expected);
    assert.deepEqual(stored.monitorIds, [db.id]);
    await dash.screenshot(page, "maintenance");

    // Edit (PATCH): the form opens filled in, in the URL; a new title and end are saved.
    await upgrade.getByRole("button", { name: "Edit Database upgrade" }).click();
    await page.waitForURL(/\?edit=mnt_/);
    const edit = page.getByRole("form", { name: "Edit maintenance window" });
    assert.equal(await edit.getByLabel("Title").inputValue(), "Database upgrade");
    assert.equal(await edit.getByLabel("Starts").inputValue(), "2030-01-15T02:00");
    assert.equal(await edit.getByRole("checkbox", { name: "maint-db" }).isChecked(), true);
    assert.equal(await edit.getByRole("checkbox", { name: "maint-web" }).isChecked(), false);
    await edit.getByLabel("Title").fill("Database upgrade, part 2");
    await edit.getByLabel("Ends").fill("2030-01-15T05:30");
    await edit.getByRole("button", { name: "Save window" }).click();
    const upgraded = item("Database upgrade, part 2");
    await upgraded.getByText("scheduled", { exact: true }).waitFor();
    assert.doesNotMatch(page.url(), /edit=/);
    const patched = (await t.rest.get(`${base()}/maintenances/${stored.id}`, { key: p.key })).body.data;
    assert.equal(patched.title, "Database upgrade, part 2");
    assert.equal(patched.startsAt, expected);
    assert.equal(patched.endsAt, await page.evaluate(() => new Date("2030-01-15T05:30").toISOString()));

    await upgraded.getByRole("button", { name: "Delete" }).click();
    await upgraded.getByRole("button", { name: "Yes, delete Database upgrade, part 2" }).click();
    await upgraded.waitFor({ state: "detached" });
    assert.equal((await t.rest.get(`${base()}/maintenances/${stored.id}`, { key: p.key })).status, 404);

    // The public page while a window is in progress (docs/pages.md).
    const slug = `maint-${randomBytes(3).toString("hex")}`;
    const made = await t.rest.post(
      `${base()}/pages`,
      {
        slug,
        title: "Acme status",
        published: true,
        monitors: [
          { monitorId: db.id, name: "Database" },
          { monitorId: web.id, name: "Website" },
        ],
      },
      { cookie: p.owner.cookie },
    );
    assert.equal(made.status, 201, made.text);
    const now = Date.now();
    const active = await t.rest.post(
      `${base()}/maintenances`,
      {
        title: "Database upgrade to PostgreSQL 17",
        description: "Writes are paused for up to an hour.",
        monitorIds: [db.id],
        startsAt: new Date(now - 1_000).toISOString(),
        endsAt: new Date(now + 3_600_000).toISOString(),
      },
      { key: p.key },
    );
    assert.equal(active.status, 201, active.text);
    await waitFor(
      async () => (await t.rest.get(`/status/${slug}`)).text.includes("Under maintenance"),
      10_000,
      "the monitor under maintenance on the public page",
    );
    const tab = await context.newPage();
    await tab.goto(`/status/${slug}`);
    await tab.getByText("Database upgrade to PostgreSQL 17").first().waitFor();
    await dash.screenshot(tab, "status-page-maintenance");

    // A window in progress: its title and description can change, its times and monitors cannot.
    await page.reload();
    const running = item("Database upgrade to PostgreSQL 17");
    await running.getByText("in progress", { exact: true }).waitFor();
    await running.getByRole("button", { name: "Edit Database upgrade to PostgreSQL 17" }).click();
    const live = page.getByRole("form", { name: "Edit maintenance window" });
    assert.equal(await live.getByRole("checkbox", { name: "maint-db" }).isDisabled(), true);
    assert.equal(await live.getByLabel("Ends").isDisabled(), true);
    await live.getByLabel("Description").fill("Writes are paused for up to two hours.");
    await live.getByRole("button", { name: "Save window" }).click();
    await running.getByText("Writes are paused for up to two hours.", { exact: false }).waitFor();
    const renamed = (await t.rest.get(`${base()}/maintenances/${active.body.data.id}`, { key: p.key })).body.data;
    assert.equal(renamed.description, "Writes are paused for up to two hours.");
    assert.equal(renamed.status, "in_progress");
    assert.deepEqual(pageErrors, []);
    await context.close();
  });
});
