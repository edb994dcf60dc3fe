import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import pino from "pino";
import { chromium } from "playwright-core";
import { startTestApp } from "../helpers/app.js";
import { errorBody, project } from "../helpers/fixtures.js";
import { useSmtpServer } from "../helpers/smtp.js";
import { useProject } from "../helpers/use.js";
import { useReceiver, waitFor } from "./receiver.js";

// `email` webhooks (decisions.md "Notification channels"; docs/webhooks.md "Email"), against a real
// SMTP server process on loopback (aiosmtpd, test/helpers/smtp.ts) that requires a login: the
// management rules (`to` instead of `url`, 400 without SMTP_URL), readable incident and event mail
// (headers, plain text and HTML, links), the SMTP reply recorded as the attempt's result, and the
// SMTP password in no response and no log line. Both runners (`npm test -- --temporal` too). The
// HTML of the "down" mail as a reader sees it (headless Chromium, where installed) goes to
// .tmp/webhook-email.png, and replaces docs/images/webhook-email.png with UPDATE_DOCS_IMAGES=1.

const CHROMIUM = "/usr/bin/chromium";
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SCREENSHOT = path.join(
  ROOT,
  process.env.UPDATE_DOCS_IMAGES === "1" ? "docs/images" : ".tmp",
  "webhook-email.png",
);

const USER = "vigil-mailer";
const PASSWORD = "pa$$:w/rd@smtp-31337";
const smtp = useSmtpServer({ user: USER, password: PASSWORD });
const logLines: string[] = [];
/** Moved forward by the last case (a webhook failing for days) instead of waiting for days. */
let skewMs = 0;
const { t, p } = useProject(
  async () => ({
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_BACKOFF_BASE_MS: "60000",
    WEBHOOK_TIMEOUT_MS: "5000",
    SMTP_URL: (await smtp()).url(USER, PASSWORD),
    MAIL_FROM: "Vigil Alerts <alerts@vigil.test>",
    PUBLIC_URL: "https://vigil.example.com/",
  }),
  {
    log: pino({ level: "debug" }, { write: (l: string) => void logLines.push(l) }),
    clock: () => new Date(Date.now() + skewMs),
  },
);
const rx = useReceiver();

/** Bound of a wait for a delivery: generous, for a loaded machine running Temporal (no speed is asserted). */
const WAIT_MS = 30_000;

const base = () => `/v1/projects/${p.projectId}/webhooks`;
const owner = () => ({ cookie: p.owner.cookie });
const deliveries = async (id: string) => (await t.rest.get(`${base()}/${id}/deliveries`, owner())).body.data;
/** Every response body this file read, to look for the password in. */
const seen: string[] = [];

describe("email webhooks: management", () => {
  it("takes `to` (1-10 addresses) instead of `url`, has no secret, and is listed by the server's types", async () => {
    const c = await t.rest.post(
      base(),
      { type: "email", to: ["oncall@example.com", "OnCall@example.com", "ops@example.com"], events: ["deploy"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    seen.push(c.text);
    assert.equal(c.body.data.type, "email");
    assert.deepEqual(c.body.data.to, ["oncall@example.com", "ops@example.com"]);
    assert.equal(c.body.data.url ?? null, null);
    assert.equal(c.body.data.secret, null);
    assert.equal(c.body.data.name, "oncall@example.com and 1 more");

    const bad: [Record<string, unknown>, string][] = [
      [{ url: "https://example.com/x" }, "to"],
      [{ to: ["a@example.com"], url: "https://example.com/x" }, "url"],
      [{ to: [] }, "to"],
      [{ to: Array.from({ length: 11 }, (_, i) => `u${i}@example.com`) }, "to"],
      [{ to: ["not an address"] }, "to.0"],
      [{ to: ["a@example.com"], routingKey: "x".repeat(32) }, "routingKey"],
    ];
    for (const [body, field] of bad) {
      const r = await t.rest.post(base(), { type: "email", events: ["deploy"], ...body }, owner());
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.ok(
        (e.details as { field: string }[]).some((d) => d.field === field),
        `${JSON.stringify(body)}: ${JSON.stringify(e.details)}`,
      );
    }
    // PATCH: new recipients; a url is not an email webhook's.
    const id = c.body.data.id;
    const patched = await t.rest.patch(`${base()}/${id}`, { to: ["team@example.com"] }, owner());
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.body.data.to, ["team@example.com"]);
    const wrong = await t.rest.patch(`${base()}/${id}`, { url: "https://example.com/x" }, owner());
    assert.equal(wrong.status, 400, wrong.text);
    assert.ok((errorBody(wrong).details as { field: string }[]).some((d) => d.field === "url"));

    const types = await t.rest.get("/v1/webhook-types", owner());
    assert.equal(types.status, 200, types.text);
    const email = types.body.data.find((x: { type: string }) => x.type === "email");
    assert.deepEqual(email, { type: "email", signed: false, address: "to", available: true });
  });

  it("without SMTP_URL, creating one is a 400 naming `type`, and the type is listed as unavailable", async () => {
    const bare = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: "true" });
    try {
      const q = await project(bare.rest);
      const r = await bare.rest.post(
        `/v1/projects/${q.projectId}/webhooks`,
        { type: "email", to: ["oncall@example.com"], events: ["deploy"] },
        { cookie: q.owner.cookie },
      );
      assert.equal(r.status, 400, r.text);
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.deepEqual(
        (e.details as { field: string }[]).map((d) => d.field),
        ["type"],
      );
      assert.match(e.message, /SMTP_URL/);
      const types = await bare.rest.get("/v1/webhook-types", { cookie: q.owner.cookie });
      assert.equal(types.body.data.find((x: { type: string }) => x.type === "email").available, false);
    } finally {
      await bare.close();
    }
  });
});

describe("email webhooks: deliveries", () => {
  it("mails a monitor going down and recovering (text and HTML, links), recording the SMTP reply", async () => {
    const server = await smtp();
    const c = await t.rest.post(
      base(),
      {
        type: "email",
        to: ["oncall@example.com", "sre@example.com"],
        events: ["incident.started", "incident.recovered"],
      },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    const hb = (status: "up" | "down") =>
      t.rest.post(
        `/v1/projects/${p.projectId}/heartbeats/checkout-worker`,
        { status, expectedIntervalMs: 60_000, gracePeriodMs: 0 },
        { key: p.key },
      );
    assert.ok((await hb("up")).status < 300);
    const monitors = await t.rest.get(`/v1/projects/${p.projectId}/monitors`, { key: p.key });
    const monitor = monitors.body.data.find((m: { slug: string }) => m.slug === "checkout-worker");
    assert.ok(monitor, monitors.text);
    const page = await t.rest.post(
      `/v1/projects/${p.projectId}/pages`,
      {
        slug: `shop-${p.projectId.slice(-6).toLowerCase()}`,
        title: "Shop",
        published: true,
        monitors: [{ monitorId: monitor.id }],
      },
      owner(),
    );
    assert.equal(page.status, 201, page.text);
    assert.ok((await hb("down")).status < 300);
    assert.ok((await hb("up")).status < 300);

    const mails = await waitFor(
      () => {
        const m = server.messages.filter((x) => x.rcptTos.includes("sre@example.com"));
        return m.length >= 2 ? m : undefined;
      },
      "two incident mails",
      WAIT_MS,
    );
    const down = mails.find((m) => m.headers.subject.includes("Down"));
    const up = mails.find((m) => m.headers.subject.includes("Recovered"));
    assert.ok(down && up, JSON.stringify(mails.map((m) => m.headers.subject)));
    for (const m of [down, up]) {
      // One message to all recipients, from MAIL_FROM, after logging in.
      assert.deepEqual(m.rcptTos, ["oncall@example.com", "sre@example.com"]);
      assert.equal(m.mailFrom, "alerts@vigil.test");
      assert.equal(m.login, USER);
      assert.equal(m.headers.from, "Vigil Alerts <alerts@vigil.test>");
      assert.equal(m.headers.to, "oncall@example.com, sre@example.com");
      assert.match(m.headers["content-type"], /^multipart\/alternative/);
      assert.ok(m.headers["x-vigil-delivery-id"].startsWith("whd_"));
      assert.ok(m.text && m.html, "plain text and HTML");
      const dashboard = `https://vigil.example.com/projects/${p.projectId}/uptime/${monitor.id}`;
      const status = `https://vigil.example.com/status/${page.body.data.slug}`;
      assert.ok(m.text.includes(dashboard) && m.text.includes(status), m.text);
      assert.ok(m.html.includes(`href="${dashboard}"`) && m.html.includes(`href="${status}"`), m.html);
      assert.match(m.text, /incidentId: inc_/);
      assert.match(m.html, /<table/);
    }
    assert.equal(down.headers.subject, "[Vigil] 🔴 Down: checkout-worker");
    assert.match(down.text!, /^🔴 Down: checkout-worker\r?\n/, JSON.stringify(down.text!.slice(0, 40)));
    assert.ok(down.html!.includes("<h1") && down.html!.includes("🔴 Down: checkout-worker"));
    assert.equal(up.headers.subject, "[Vigil] 🟢 Recovered: checkout-worker");
    if (existsSync(CHROMIUM)) {
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      try {
        const page = await browser.newPage({ viewport: { width: 720, height: 290 } });
        await page.setContent(down.html!, { waitUntil: "load" });
        mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
        await page.screenshot({ path: SCREENSHOT });
      } finally {
        await browser.close();
      }
    }

    const ds = await waitFor(
      async () => {
        const list = await deliveries(c.body.data.id);
        return list.length === 2 && list.every((d: { status: string }) => d.status === "succeeded") ? list : undefined;
      },
      "both deliveries recorded",
      WAIT_MS,
    );
    seen.push(JSON.stringify(ds));
    for (const d of ds) {
      assert.equal(d.attempts.length, 1);
      assert.equal(d.attempts[0].statusCode, 250);
      assert.match(d.attempts[0].responseBody, /^250 2\.0\.0 Ok: queued as TEST\d+/);
      assert.equal(d.attempts[0].error ?? null, null);
    }
  });

  it("mails an event with its data, HTML-escaped", async () => {
    const server = await smtp();
    const c = await t.rest.post(
      base(),
      { type: "email", to: ["events@example.com"], events: ["order.failed"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    const ev = await t.rest.post(
      "/v1/events",
      { type: "order.failed", userId: "u-42", data: { orderId: "o-1", note: "<script>alert(1)</script>" } },
      { key: p.key },
    );
    assert.equal(ev.status, 202, ev.text);
    const m = await waitFor(
      () => server.messages.find((x) => x.rcptTos.includes("events@example.com")),
      "event mail",
      WAIT_MS,
    );
    assert.equal(m.headers.subject, `[Vigil] order.failed in project ${p.projectId}`);
    assert.match(m.text!, /userId: u-42/);
    assert.match(m.text!, /"orderId": "o-1"/);
    assert.ok(m.text!.includes(`https://vigil.example.com/projects/${p.projectId}/events`));
    assert.ok(!m.html!.includes("<script>"), m.html!);
    assert.ok(m.html!.includes("&lt;script&gt;"), m.html!);
  });

  it("records a refusal's SMTP reply (451) and retries; the password is in no response and no log line", async () => {
    const c = await t.rest.post(base(), { type: "email", to: ["tempfail@example.com"], events: ["x.y"] }, owner());
    assert.equal(c.status, 201, c.text);
    const test = await t.rest.post(`${base()}/${c.body.data.id}/test`, {}, owner());
    assert.equal(test.status, 202, test.text);
    const d = await waitFor(
      async () => {
        const x = (await deliveries(c.body.data.id))[0];
        return x?.attempts.length ? x : undefined;
      },
      "the refused attempt",
      WAIT_MS,
    );
    seen.push(JSON.stringify(d));
    assert.equal(d.status, "retrying");
    assert.equal(d.attempts[0].statusCode, 451);
    assert.equal(d.attempts[0].error, "SMTP 451");
    assert.match(d.attempts[0].responseBody, /451 4\.3\.0 try again later/);

    for (const path of [base(), `${base()}/${c.body.data.id}`, "/v1/webhook-types"])
      seen.push((await t.rest.get(path, owner())).text);
    assert.ok(logLines.length > 0, "the app logged");
    for (const text of [...seen, ...logLines]) {
      assert.ok(!text.includes(PASSWORD), `password in: ${text.slice(0, 300)}`);
      assert.ok(!text.includes(encodeURIComponent(PASSWORD)), `encoded password in: ${text.slice(0, 300)}`);
    }
  });
});

describe("email webhooks: manual incidents", () => {
  it("mails a manual incident's start and resolution, headed by its title, naming kind, impact and status", async () => {
    const server = await smtp();
    const c = await t.rest.post(
      base(),
      { type: "email", to: ["status@example.com"], events: ["incident.started", "incident.recovered"] },
      owner(),
    );
    assert.equal(c.status, 201, c.text);
    const m = await t.rest.post(
      `/v1/projects/${p.projectId}/monitors`,
      { name: "Checkout", slug: "checkout-manual" },
      {
        key: p.key,
      },
    );
    assert.equal(m.status, 201, m.text);
    const inc = await t.rest.post(
      `/v1/projects/${p.projectId}/incidents`,
      {
        title: "Checkout is slow",
        impact: "critical",
        monitorIds: [m.body.data.id],
        status: "identified",
        message: "A database index is missing",
      },
      { key: p.key },
    );
    assert.equal(inc.status, 201, inc.text);
    const done = await t.rest.post(
      `/v1/projects/${p.projectId}/incidents/${inc.body.data.id}/updates`,
      { message: "Index added", status: "resolved" },
      { key: p.key },
    );
    assert.equal(done.status, 201, done.text);
    const mails = await waitFor(
      () => {
        const l = server.messages.filter((x) => x.rcptTos.includes("status@example.com"));
        return l.length >= 2 ? l : undefined;
      },
      "two manual incident mails",
      WAIT_MS,
    );
    assert.deepEqual(mails.map((x) => x.headers.subject).sort(), [
      "[Vigil] 🔴 Incident: Checkout is slow",
      "[Vigil] 🟢 Resolved: Checkout is slow",
    ]);
    for (const x of mails) {
      assert.match(x.text!, /kind: manual/);
      assert.match(x.text!, /impact: critical/);
      assert.match(x.text!, new RegExp(`incidentId: ${inc.body.data.id}`));
      assert.match(x.text!, /monitors: Checkout/);
    }
    const resolved = mails.find((x) => x.headers.subject.includes("Resolved"))!;
    assert.match(resolved.text!, /status: resolved/);
  });
});

// Last: it moves the server's clock on by days.
describe("a webhook that fails for days (WEBHOOK_DISABLE_AFTER_DAYS, default 5)", () => {
  it("is disabled with the reason failing, its owners are mailed, and enabling it again works", async () => {
    const server = await smtp();
    let up = false;
    const url = rx.on("/down", () => (up ? { status: 200, body: "ok" } : { status: 503, body: "down" }));
    const c = await t.rest.post(base(), { name: "Orders <hook>", url, events: ["order.paid"] }, owner());
    assert.equal(c.status, 201, c.text);
    const id: string = c.body.data.id;
    const get = async () => (await t.rest.get(`${base()}/${id}`, owner())).body.data;
    /** A test delivery and its first attempt (sent even while disabled). */
    const attempt = async () => {
      const d = await t.rest.post(`${base()}/${id}/test`, {}, owner());
      assert.equal(d.status, 202, d.text);
      return waitFor(
        async () =>
          (await deliveries(id)).find(
            (x: { id: string; attempts: unknown[] }) => x.id === d.body.data.id && x.attempts.length,
          ),
        "the test delivery's attempt",
        WAIT_MS,
      );
    };

    // Failing, but for less than five days: still enabled.
    await attempt();
    skewMs = 4 * 86_400_000;
    await attempt();
    assert.equal((await get()).enabled, true);
    assert.equal((await get()).disabledReason, null);

    // Still failing five days after the first failure: disabled, with the reason.
    skewMs = 5 * 86_400_000 + 60_000;
    await attempt();
    const w = await waitFor(async () => {
      const x = await get();
      return x.enabled ? undefined : x;
    }, "the webhook disabled");
    assert.equal(w.disabledReason, "failing");
    const listed = (await t.rest.get(base(), owner())).body.data.find((x: { id: string }) => x.id === id);
    assert.equal(listed.disabledReason, "failing");

    // The owner's mail: why, what it means, and the link to the webhook.
    const mail = await waitFor(
      () => server.messages.find((m) => m.rcptTos.includes(p.owner.email) && m.headers["x-vigil-webhook-id"] === id),
      "the owners' mail",
      WAIT_MS,
    );
    assert.match(mail.headers.subject, /Webhook "Orders <hook>" disabled: failing for 5 days/);
    assert.match(mail.text!, /Every delivery of the webhook "Orders <hook>" has failed for 5 days/);
    assert.ok(mail.text!.includes(`https://vigil.example.com/projects/${p.projectId}/webhooks/${id}`), mail.text!);
    assert.ok(mail.html!.includes("Orders &lt;hook&gt;"), mail.html!);
    assert.ok(mail.text!.includes(url), "names the destination");

    // Enabling it again clears the reason and the streak: one more failure does not disable it.
    const on = await t.rest.patch(`${base()}/${id}`, { enabled: true }, owner());
    assert.equal(on.status, 200, on.text);
    assert.equal(on.body.data.enabled, true);
    assert.equal(on.body.data.disabledReason, null);
    skewMs += 86_400_000;
    await attempt();
    assert.equal((await get()).enabled, true);
    // A success ends the streak too: failures starting later count from then.
    up = true;
    await attempt();
    up = false;
    skewMs += 5 * 86_400_000;
    await attempt();
    const after = await get();
    assert.equal(after.enabled, true);
    assert.equal(after.disabledReason, null);
    assert.equal(server.messages.filter((m) => m.headers["x-vigil-webhook-id"] === id).length, 1);
  });
});
