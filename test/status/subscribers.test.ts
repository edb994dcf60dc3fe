import assert from "node:assert/strict";
import http from "node:http";
import { describe, it } from "node:test";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, memberOf, project } from "../helpers/fixtures.js";
import { useSmtpServer, type ReceivedMail } from "../helpers/smtp.js";
import { useProject } from "../helpers/use.js";
import { waitFor } from "../webhooks/receiver.js";
import { monitorAndPage as pageFor } from "./util.js";

// Status page subscribers (decisions.md "Status communication"; docs/pages.md "Subscribers"), over
// a real port, against a real SMTP server on loopback (aiosmtpd, test/helpers/smtp.ts, as the email
// channel's tests): subscribe -> confirmation mail -> confirm -> a manual incident's start, update
// and resolution mailed with List-Unsubscribe headers -> one-click unsubscribe deletes the row and
// no more mail; a pending address gets nothing but its confirmation; the same 202 for known and
// unknown addresses; the per-email and per-address rate limits (429); the page cap; the owners'
// list and removal (members 403, other tenants 404). One app for the file. Without SMTP_URL the
// routes are 404s: test/status/public.test.ts (an app without SMTP).

const PUBLIC = "https://status.example.test";
const PER_ADDRESS = 20;
const CAP = 3;
const smtp = useSmtpServer();
const { t, p } = useProject(async () => ({
  ...GENEROUS_LIMITS,
  STATUS_PAGE_REFRESH_MS: "50",
  SMTP_URL: (await smtp()).url(),
  MAIL_FROM: "Status <status@vigil.test>",
  PUBLIC_URL: PUBLIC,
  RATE_LIMIT_SUBSCRIBES_PER_MINUTE: String(PER_ADDRESS),
  RATE_LIMIT_SUBSCRIBES_PER_EMAIL_PER_HOUR: "3",
  MAX_SUBSCRIBERS_PER_PAGE: String(CAP),
}));

/** Bound of a wait for a mail: generous, for a loaded machine (no speed is asserted). */
const WAIT_MS = 30_000;
const owner = () => ({ cookie: p.owner.cookie });
const mailsTo = async (to: string): Promise<ReceivedMail[]> =>
  (await smtp()).messages.filter((m) => m.rcptTos.includes(to));
const waitMails = (to: string, n: number) =>
  waitFor(async () => ((await mailsTo(to)).length >= n ? mailsTo(to) : undefined), `${n} mails to ${to}`, WAIT_MS);
/** The path and query of a link in a mail (PUBLIC_URL is not this app's address). */
const local = (url: string) => {
  assert.ok(url.startsWith(`${PUBLIC}/status/`), url);
  const u = new URL(url);
  return u.pathname + u.search;
};
const form = (path: string, body: string) =>
  t.rest.req("POST", path, { raw: body, contentType: "application/x-www-form-urlencoded" });
const subscribe = (slug: string, email: unknown) => t.rest.post(`/v1/status/${slug}/subscribe`, { email });

const monitorAndPage = (slug: string) => pageFor(t, p, slug);

/** Subscribes and follows the confirmation link: GET shows a button, POST confirms, a second POST is a 404. */
async function confirmed(slug: string, email: string): Promise<void> {
  assert.equal((await subscribe(slug, email)).status, 202);
  const [mail] = await waitMails(email, 1);
  assert.match(mail.headers.subject, /Confirm your subscription/);
  const link = local(/Confirm: (\S+)/.exec(mail.text ?? "")![1]);
  const page = await t.rest.get(link);
  assert.equal(page.status, 200, page.text);
  assert.match(page.text, /<form method="post"/);
  assert.equal((await form(link, "")).status, 200);
  assert.equal((await form(link, "")).status, 404, "a confirmation link is single-use");
}

const subscribers = (pageId: string) => `/v1/projects/${p.projectId}/pages/${pageId}/subscribers`;

describe("status page subscribers", { concurrency: true }, () => {
  it("subscribe -> confirm -> incident started, updated, resolved mailed -> one-click unsubscribe -> no more mail", async () => {
    const { monitorId, pageId } = await monitorAndPage("subs-flow");
    const [alice, carol, bob] = ["alice@example.com", "carol@example.com", "bob@example.com"];
    await confirmed("subs-flow", alice);
    await confirmed("subs-flow", carol);
    assert.equal((await subscribe("subs-flow", bob)).status, 202); // never confirmed
    await waitMails(bob, 1);

    const list = await t.rest.get(subscribers(pageId), owner());
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((s: { email: string; status: string }) => [s.email, s.status]),
      [
        [alice, "confirmed"],
        [carol, "confirmed"],
        [bob, "pending"],
      ],
    );

    const inc = await t.rest.post(
      `/v1/projects/${p.projectId}/incidents`,
      { title: "Logins fail", impact: "major", monitorIds: [monitorId], status: "investigating", message: "Looking" },
      owner(),
    );
    assert.equal(inc.status, 201, inc.text);
    const updates = `/v1/projects/${p.projectId}/incidents/${inc.body.data.id}/updates`;
    assert.equal(
      (await t.rest.post(updates, { message: "Found the cause", status: "identified" }, owner())).status,
      201,
    );
    assert.equal((await t.rest.post(updates, { message: "All good", status: "resolved" }, owner())).status, 201);

    const mails = (await waitMails(alice, 4)).slice(1);
    assert.deepEqual(
      mails.map((m) => m.headers.subject),
      [
        "[Acme subs-flow] New incident: Logins fail",
        "[Acme subs-flow] Incident update: Logins fail",
        "[Acme subs-flow] Resolved: Logins fail",
      ],
    );
    for (const m of mails) {
      assert.match(
        m.headers["list-unsubscribe"].trim(),
        /^<https:\/\/status\.example\.test\/status\/subs-flow\/unsubscribe\?token=/,
      );
      assert.equal(m.headers["list-unsubscribe-post"].trim(), "List-Unsubscribe=One-Click");
      assert.match(m.text ?? "", /Status page: https:\/\/status\.example\.test\/status\/subs-flow/);
      assert.match(m.html ?? "", /Unsubscribe<\/a>/);
    }
    assert.match(mails[1].text ?? "", /Found the cause/);
    assert.match(mails[1].text ?? "", /Status: identified/);

    // One-click unsubscribe (RFC 8058): GET shows a button, the POST removes the row.
    const link = local(mails[0].headers["list-unsubscribe"].trim().slice(1, -1));
    const confirmPage = await t.rest.get(link);
    assert.equal(confirmPage.status, 200);
    assert.match(confirmPage.text, /name="List-Unsubscribe" value="One-Click"/);
    assert.equal((await form(link, "List-Unsubscribe=One-Click")).status, 200);
    assert.equal((await form(link, "List-Unsubscribe=One-Click")).status, 200, "a second one-click POST is harmless");
    const rows = await t.app.deps.db.query("SELECT 1 FROM page_subscribers WHERE email = $1", [alice]);
    assert.equal(rows.rowCount, 0, "the row is deleted, not flagged");

    // Another incident: carol is told, alice (unsubscribed) and bob (unconfirmed) are not.
    const again = await t.rest.post(
      `/v1/projects/${p.projectId}/incidents`,
      { title: "Second one", impact: "minor", monitorIds: [monitorId], status: "investigating", message: "Again" },
      owner(),
    );
    assert.equal(again.status, 201, again.text);
    const carols = await waitMails(carol, 5);
    assert.equal(carols[4].headers.subject, "[Acme subs-flow] New incident: Second one");
    assert.equal((await mailsTo(alice)).length, 4);
    assert.equal((await mailsTo(bob)).length, 1, "a pending address gets its confirmation link only");
    // A row is deleted once its batch's sends are done, just after the SMTP server has the mail; the
    // other tests of this file queue mails of their own pages meanwhile: this page's rows only.
    await waitFor(
      async () => {
        const left = await t.app.deps.db.query(
          `SELECT 1 FROM page_mails m JOIN page_subscribers s ON s.id = m.subscriber_id
            JOIN pages pg ON pg.id = s.page_id WHERE pg.slug = 'subs-flow'`,
        );
        return left.rowCount === 0;
      },
      "every queued mail of the page sent and its row deleted",
      WAIT_MS,
    );
  });

  it("mails a maintenance window's start and end to the page's confirmed subscribers, once each", async () => {
    const { monitorId } = await monitorAndPage("subs-maint");
    const hana = "hana@example.com";
    await confirmed("subs-maint", hana);
    const start = Date.now() + 500;
    const w = await t.rest.post(
      `/v1/projects/${p.projectId}/maintenances`,
      {
        title: "Database upgrade",
        description: "Minutes of read-only mode",
        monitorIds: [monitorId],
        startsAt: new Date(start).toISOString(),
        endsAt: new Date(start + 500).toISOString(),
      },
      { key: p.key },
    );
    assert.equal(w.status, 201, w.text);
    const mails = (await waitMails(hana, 3)).slice(1);
    assert.deepEqual(
      mails.map((m) => m.headers.subject),
      [
        "[Acme subs-maint] Maintenance started: Database upgrade",
        "[Acme subs-maint] Maintenance completed: Database upgrade",
      ],
    );
    assert.match(mails[0].text ?? "", /Minutes of read-only mode/);
    for (const m of mails) assert.equal(m.headers["list-unsubscribe-post"].trim(), "List-Unsubscribe=One-Click");
  });

  it("answers the same 202 for new, pending and confirmed addresses; 429 past the per-email limit", async () => {
    await monitorAndPage("subs-same");
    const first = await subscribe("subs-same", "dave@example.com");
    const again = await subscribe("subs-same", "DAVE@example.com");
    const other = await subscribe("subs-same", "erin@example.com");
    assert.deepEqual([first.status, again.status, other.status], [202, 202, 202]);
    assert.equal(first.text, again.text);
    assert.equal(first.text, other.text);
    assert.doesNotMatch(first.text, /dave|erin|\d/);
    // The per-email limit (3 an hour) counts the address whatever its case.
    assert.equal((await subscribe("subs-same", "dave@example.com")).status, 202);
    const limited = await subscribe("subs-same", "dave@example.com");
    assert.equal(limited.status, 429, limited.text);
    errorBody(limited);
    assert.ok(limited.headers.get("retry-after"));

    assert.equal(errorBody(await subscribe("subs-same", "not an address")).code, "validation_failed");
    assert.equal((await subscribe("no-such-page", "dave2@example.com")).status, 404);
    assert.equal((await t.rest.get("/v1/status/subs-same/subscribe")).status, 405);
    const page = await t.rest.get("/v1/status/subs-same");
    assert.doesNotMatch(page.text, /dave|erin|subscriber/i, "no public answer shows addresses or counts");
    assert.equal((await t.rest.get("/status/subs-same/confirm?token=psc_nope")).status, 404);
    assert.equal(
      (await form("/status/subs-same/unsubscribe?token=psub_x.y", "List-Unsubscribe=One-Click")).status,
      404,
    );
  });

  it("rate limits subscription requests per client address (429)", async () => {
    await monitorAndPage("subs-rate");
    // Another loopback address: this case's requests count apart from the rest of the file's.
    const post = (i: number) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ email: `flood${i}@example.com` });
        const req = http.request(
          {
            host: "127.0.0.1",
            port: t.port,
            localAddress: "127.0.0.3",
            method: "POST",
            path: "/v1/status/subs-rate/subscribe",
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    // The limit counts per minute of the clock (fixed windows, src/shared/ratelimit.ts): the requests
    // must not straddle a minute's end, or they count in two windows and none is refused.
    const toMinuteEnd = 60_000 - (Date.now() % 60_000);
    if (toMinuteEnd < 5_000) await new Promise((r) => setTimeout(r, toMinuteEnd + 50));
    const statuses: number[] = [];
    for (let i = 0; i <= PER_ADDRESS; i++) statuses.push(await post(i));
    assert.equal(statuses.filter((s) => s === 202).length, PER_ADDRESS);
    assert.equal(statuses[PER_ADDRESS], 429);
  });

  it("holds a page to MAX_SUBSCRIBERS_PER_PAGE, still answering 202", async () => {
    const { pageId } = await monitorAndPage("subs-cap");
    for (let i = 0; i <= CAP; i++) assert.equal((await subscribe("subs-cap", `cap${i}@example.com`)).status, 202);
    await waitMails(`cap${CAP - 1}@example.com`, 1);
    const list = await t.rest.get(subscribers(pageId), owner());
    assert.equal(list.body.data.length, CAP);
    assert.equal((await mailsTo(`cap${CAP}@example.com`)).length, 0);
  });

  it("owners and admins list and remove subscribers; members 403; other tenants 404", async () => {
    const { pageId } = await monitorAndPage("subs-owners");
    assert.equal((await subscribe("subs-owners", "fay@example.com")).status, 202);
    assert.equal((await subscribe("subs-owners", "gus@example.com")).status, 202);
    const admin = await memberOf(t.rest, p, "admin", "admin");
    const member = await memberOf(t.rest, p, "member", "member");
    const other = await project(t.rest);

    const first = await t.rest.get(`${subscribers(pageId)}?limit=1`, { cookie: admin.cookie });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.data.length, 1);
    assert.equal(first.body.pagination.hasMore, true);
    const second = await t.rest.get(
      `${subscribers(pageId)}?limit=1&cursor=${first.body.pagination.nextCursor}`,
      owner(),
    );
    assert.equal(second.body.data[0].email, "gus@example.com");
    assert.equal(second.body.pagination.hasMore, false);

    assert.equal((await t.rest.get(subscribers(pageId), { cookie: member.cookie })).status, 403);
    assert.equal((await t.rest.get(subscribers(pageId), { key: p.key })).status, 403);
    const foreign = `/v1/projects/${other.projectId}/pages/${pageId}/subscribers`;
    assert.equal((await t.rest.get(foreign, { cookie: other.owner.cookie })).status, 404);
    const id = first.body.data[0].id;
    assert.equal((await t.rest.del(`${foreign}/${id}`, { cookie: other.owner.cookie })).status, 404);
    assert.equal((await t.rest.del(`${subscribers(pageId)}/${id}`, { cookie: member.cookie })).status, 403);
    assert.equal((await t.rest.del(`${subscribers(pageId)}/${id}`, { cookie: admin.cookie })).status, 204);
    assert.equal((await t.rest.del(`${subscribers(pageId)}/${id}`, owner())).status, 404);
    const after = await t.rest.get(subscribers(pageId), owner());
    assert.deepEqual(
      after.body.data.map((s: { email: string }) => s.email),
      ["gus@example.com"],
    );
  });
});
