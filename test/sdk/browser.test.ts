// The SDK's browser build in a real browser (headless Chromium, Debian's /usr/bin/chromium, driven
// by playwright-core; "Shown working" in issue #17). The SDK is built with its own `tsc -p sdk` into
// a temp directory and served as ES modules by a real HTTP server on its own origin; the page talks
// to a real Vigil through a fault proxy (test/helpers/faults.ts) that can make the API unavailable.
//   1. the page tracks events while the API is unavailable; it is reloaded with them still queued
//      (persisted in localStorage); the reloaded page sends them once the API is back
//   2. a page tracks events and is closed with them queued: they arrive by sendBeacon
//   3. the next page load sends the beacon's events again (the SDK cannot know a beacon arrived):
//      the server's id dedupe stores nothing new
//   4. a batch over 16 KiB is gzipped by the SDK and accepted through CORS
//   5. a page from an origin that is not in the project's allowedOrigins: CORS refuses it, nothing
//      is stored, the SDK keeps it queued and retries (a CORS refusal looks like a network error),
//      tells onError once (origin_refused), and the server logs one warning naming the origin
// Afterwards every event is in PostgreSQL exactly once. Skipped, with a message, where Chromium is
// not installed (CI installs it).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { after, describe, it } from "node:test";
import pg from "pg";
import pino from "pino";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { startFaultProxy, type FaultProxy } from "../helpers/faults.js";
import { buildSdk, serveOrigin, type StaticOrigin } from "../helpers/pages.js";
import { useProject } from "../helpers/use.js";

const CHROMIUM = "/usr/bin/chromium";

// The page: a Vigil configured from its query string, exposed with the errors it reports.
const PAGE = `<!doctype html><meta charset="utf-8"><title>SDK test page</title>
<script type="module">
  import { Vigil } from "/sdk/index.js";
  const q = new URLSearchParams(location.search);
  window.sdkErrors = [];
  window.vigil = new Vigil({
    apiKey: q.get("key"),
    apiUrl: q.get("api"),
    flushAt: Number(q.get("flushAt")),
    flushIntervalMs: Number(q.get("flushIntervalMs")),
    retry: { baseMs: 50, maxMs: 300 },
    onError: (e) => window.sdkErrors.push(e.code + ": " + e.message),
  });
  window.ready = true;
</script>`;

// The server's log lines (a refused origin is logged as a warning naming it).
const logLines: Record<string, unknown>[] = [];
const log = pino({ level: "info" }, { write: (s: string) => void logLines.push(JSON.parse(s)) });
const { t, p } = useProject(GENEROUS_LIMITS, { log });
let browser: Browser | undefined;
let proxy: FaultProxy | undefined;
const origins: StaticOrigin[] = [];
let sdkDir: string | undefined;
after(async () => {
  await browser?.close();
  await proxy?.close();
  for (const o of origins) await o.close();
  if (sdkDir) await rm(sdkDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The proxy's last requests, for failure messages. */
const lastRequests = () =>
  (proxy?.log ?? [])
    .slice(-6)
    .map((r) => `${r.method} ${r.path.replace(/key=[^&]+/, "key=…")} ${r.fault} → ${r.upstreamStatus ?? "-"}`)
    .join("; ");

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last requests: ${lastRequests()})`);
    await sleep(50);
  }
}

describe("the SDK in a real browser", () => {
  it("keeps events across a reload, sends them by beacon on close, stores each once, and is refused from another origin", async (ctx) => {
    if (!existsSync(CHROMIUM)) return ctx.skip(`${CHROMIUM} not installed (apt-get install chromium)`);
    sdkDir = await buildSdk();
    const allowed = await serveOrigin(PAGE, sdkDir);
    const other = await serveOrigin(PAGE, sdkDir);
    origins.push(allowed, other);

    const k = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "web", environment: "production", kind: "publishable" },
      { cookie: p.owner.cookie },
    );
    assert.equal(k.status, 201, k.text);
    const pub: string = k.body.data.secret;
    assert.match(pub, /^vk_pub_/);
    const patched = await t.rest.patch(
      `/v1/projects/${p.projectId}`,
      { allowedOrigins: [allowed.origin] },
      { cookie: p.owner.cookie },
    );
    assert.equal(patched.status, 200, patched.text);

    proxy = await startFaultProxy(t.url);
    const px = proxy;
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    ctx.after(() => db.end());
    const stored = async (phase: string) =>
      (
        await db.query<{ seq: number; n: number }>(
          "SELECT (data->>'seq')::int AS seq, count(*)::int AS n FROM events WHERE project_id = $1 AND type = 'browser' AND data->>'phase' = $2 GROUP BY 1 ORDER BY 1",
          [p.projectId, phase],
        )
      ).rows;
    const storedOnce = async (phase: string, n: number) => {
      const rows = await stored(phase);
      return rows.length === n && rows.every((r, i) => r.seq === i && r.n === 1);
    };

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    const context: BrowserContext = await browser.newContext();
    const open = async (origin: string, flushAt: number, flushIntervalMs: number): Promise<Page> => {
      const page = await context.newPage();
      const q = new URLSearchParams({
        key: pub,
        api: px.url,
        flushAt: String(flushAt),
        flushIntervalMs: String(flushIntervalMs),
      });
      await page.goto(`${origin}/?${q}`, { waitUntil: "load" });
      await page.waitForFunction("window.ready === true");
      return page;
    };
    // Strings, not functions, to page.evaluate: tsx would compile a function with its `__name` helper.
    const track = (page: Page, phase: string, n: number) =>
      page.evaluate(`for (let i = 0; i < ${n}; i++) window.vigil.track("browser", { phase: "${phase}", seq: i })`);
    const stats = (page: Page) =>
      page.evaluate("({ ...window.vigil.stats })") as Promise<{ queued: number; sent: number; retries: number }>;
    const posts = () => px.log.filter((r) => r.method === "POST" && r.path.startsWith("/v1/events"));
    // Stored means committed, which comes before Vigil's answer reaches the proxy: wait for the answers.
    const answered = (requests: typeof px.log) =>
      until("their answers at the proxy", () => requests.every((r) => r.upstreamStatus !== undefined));

    // 1. Tracked while the API is unavailable, reloaded with the events queued, sent after the reload.
    px.setPolicy(() => "drop-before");
    let page = await open(allowed.origin, 10, 50);
    await track(page, "reload", 30);
    const attempts = px.log.length;
    await until("the SDK trying the unavailable API", () => px.log.length >= attempts + 2);
    assert.equal((await stats(page)).queued, 30, "queued while the API is unavailable");
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction("window.ready === true");
    assert.equal((await stats(page)).queued, 30, "the reloaded page has the queue back from storage");
    assert.equal((await stored("reload")).length, 0, "nothing could arrive yet");
    px.setPolicy(() => "pass");
    await until("the reloaded page's events stored", () => storedOnce("reload", 30));
    await until("the queue acknowledged", async () => (await stats(page)).queued === 0);
    await page.close();

    // 2. Queued (no count or interval flush can happen) and the page closed: the beacon carries them.
    page = await open(allowed.origin, 1000, 600_000);
    const postsBefore = posts().length;
    await track(page, "close", 40);
    await sleep(300);
    assert.equal(posts().length, postsBefore, "nothing sent before the page is closed");
    await page.close();
    await until("the beacon's events stored", () => storedOnce("close", 40));
    const beacons = posts()
      .slice(postsBefore)
      .filter((r) => r.path.includes("key=") && /^text\/plain/.test(r.contentType ?? ""));
    assert.ok(beacons.length > 0, `no text/plain beacon with ?key=: ${JSON.stringify(posts().slice(postsBefore))}`);
    await answered(beacons);
    assert.ok(
      beacons.every((b) => b.upstreamStatus === 202),
      `beacon answers: ${beacons.map((b) => b.upstreamStatus)}`,
    );
    const beaconIds = new Set(beacons.flatMap((b) => b.ids));
    assert.equal(beaconIds.size, 40, "every queued event in a beacon");

    // 3. The next load sends the beacon's events again (kept until acknowledged): stored once still.
    const resentBefore = px.log.length;
    page = await open(allowed.origin, 10, 50);
    await until("the kept queue re-sent and acknowledged", () =>
      px.log
        .slice(resentBefore)
        .some((r) => r.method === "POST" && r.upstreamStatus === 202 && r.ids.some((id) => beaconIds.has(id))),
    );
    await until("nothing queued", async () => (await stats(page)).queued === 0);
    assert.ok(await storedOnce("close", 40), JSON.stringify(await stored("close")));
    await page.close();

    // 4. A batch over 16 KiB: the SDK gzips it (CompressionStream) and the browser sends it through
    // CORS (content-encoding is an allowed header); stored once.
    const gzipBefore = px.log.length;
    page = await open(allowed.origin, 100, 50);
    await page.evaluate(
      `for (let i = 0; i < 100; i++) window.vigil.track("browser", { phase: "gzip", seq: i, text: "x".repeat(300) })`,
    );
    await until("the gzipped batch stored", () => storedOnce("gzip", 100));
    const gzipped = px.log.slice(gzipBefore).filter((r) => r.method === "POST" && r.contentEncoding === "gzip");
    await answered(gzipped);
    assert.ok(gzipped.length > 0 && gzipped.every((r) => r.upstreamStatus === 202), lastRequests());
    assert.equal(new Set(gzipped.flatMap((r) => r.ids)).size, 100, "every event in a gzipped batch");
    await until("nothing queued", async () => (await stats(page)).queued === 0);
    await page.close();

    // 5. An origin not in allowedOrigins: the server answers 403 without CORS headers and logs a
    // warning naming the origin; the browser refuses the answer (the page sees a network error);
    // the SDK tells it from an outage (Vigil answers its keyless check) and reports it to onError
    // once, however many retries follow; nothing is stored.
    const refusedBefore = px.log.length;
    page = await open(other.origin, 5, 50);
    const consoleErrors: string[] = [];
    page.on("console", (m) => consoleErrors.push(m.text()));
    await track(page, "refused", 5);
    const refused = () =>
      px.log
        .slice(refusedBefore)
        .filter((r) => r.origin === other.origin && r.method === "POST" && r.upstreamStatus !== undefined);
    await until("the refused origin's request answered by Vigil", () => refused().length > 0);
    assert.deepEqual(
      [...new Set(refused().map((r) => r.upstreamStatus))],
      [403],
      "the other origin's requests are answered 403",
    );
    const sdkErrors = () => page.evaluate("window.sdkErrors") as Promise<string[]>;
    await until("the SDK reporting the refusal", async () => (await sdkErrors()).length > 0);
    const reportedAt = (await stats(page)).retries;
    await until("more retries after the report", async () => (await stats(page)).retries >= reportedAt + 4);
    const reported = await sdkErrors();
    assert.equal(reported.length, 1, `reported once, not per retry: ${JSON.stringify(reported)}`);
    assert.match(reported[0], /^origin_refused: .*allowedOrigins/);
    assert.ok(reported[0].includes(other.origin), reported[0]);
    assert.equal((await stats(page)).queued, 5, "kept queued, not sent, after a CORS refusal");
    const warned = logLines.filter((l) => l.level === 40 && l.origin === other.origin);
    assert.ok(warned.length >= 1, "no warning naming the refused origin");
    assert.equal(warned[0].projectId, p.projectId);
    assert.match(String(warned[0].msg), /allowedOrigins/);
    assert.equal(warned.length, 1, "one warning per origin and minute, not one per retry");
    await until("the browser saying CORS blocked it", () => consoleErrors.some((m) => /CORS/.test(m)));
    await page.close(); // its beacon is refused too
    await until("the refused origin's beacon answered", () => refused().some((r) => r.path.includes("key=")));
    assert.deepEqual(await stored("refused"), [], "events from a refused origin were stored");

    // The publishable key itself is never logged (the beacon's ?key= included).
    assert.ok(!JSON.stringify(logLines).includes(pub), "the key appears in the server's log");

    // Finally: every event once, nothing else.
    assert.ok(await storedOnce("reload", 30), JSON.stringify(await stored("reload")));
    assert.ok(await storedOnce("close", 40), JSON.stringify(await stored("close")));
    assert.ok(await storedOnce("gzip", 100), JSON.stringify(await stored("gzip")));
  });
});
