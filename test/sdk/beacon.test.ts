import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { chromium, type Browser } from "playwright-core";
import { buildSdk, serveOrigin, type StaticOrigin } from "../helpers/pages.js";
import { accept, FakeServer } from "./fake-server.js";

// The browser side of the SDK in headless Chromium (the package's own tsc build, served as ES
// modules from a real origin) against the local recording server: what a page sends. The end-to-end
// proof against a real Vigil (reloads, CORS, exactly once) is test/sdk/browser.test.ts; this file
// checks the beacons' shape and sizes, $page's fields and the anonymous id.

const CHROMIUM = "/usr/bin/chromium";
const PAGE = `<!doctype html><meta charset="utf-8"><title>Beacon page</title>
<script type="module">
  import { Vigil } from "/sdk/index.js";
  const q = new URLSearchParams(location.search);
  window.sdkErrors = [];
  window.vigil = new Vigil({
    apiKey: q.get("key"), apiUrl: q.get("api"), flushAt: 1000, flushIntervalMs: 600000,
    onError: (e) => window.sdkErrors.push(e.code + ": " + e.message),
  });
  window.ready = true;
</script>`;

let f: FakeServer;
let origin: StaticOrigin | undefined;
let sdkDir: string | undefined;
let browser: Browser | undefined;
before(async () => {
  f = await FakeServer.start();
  f.cors = true;
});
after(async () => {
  await browser?.close();
  await origin?.close();
  await f.close();
  if (sdkDir) await rm(sdkDir, { recursive: true, force: true });
});

describe("the SDK in a page (Chromium)", () => {
  it("page hide: queued events leave by sendBeacon as text/plain under 60 KiB with ?key=, and stay stored for the next load", async (ctx) => {
    if (!existsSync(CHROMIUM)) return ctx.skip(`${CHROMIUM} not installed (apt-get install chromium)`);
    sdkDir = await buildSdk();
    origin = await serveOrigin(PAGE, sdkDir);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    const context = await browser.newContext();
    // fetch never gets an answer (the events stay queued); beacons are accepted.
    f.answer = (req) => (req.query.get("key") ? accept(req) : "hang");
    const url = `${origin.origin}/?${new URLSearchParams({ key: "vk_pub_test", api: f.url })}`;
    const page = await context.newPage();
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction("window.ready === true");
    // 400 events of ~400 bytes: about 160 KB, so several beacons.
    const ids = (await page.evaluate(
      `const ids = [window.vigil.page({ section: "docs" })];
       for (let i = 0; i < 400; i++) ids.push(window.vigil.track("b", { i, pad: "x".repeat(300) }));
       ids`,
    )) as string[];
    const anon = (await page.evaluate("window.vigil.anonymousId")) as string;
    await page.close({ runBeforeUnload: true });
    const beacons = () => f.seen.filter((s) => s.query.get("key"));
    // Chromium allows 64 KiB of beacon data in flight per page: the first chunk (under 60 KiB) goes,
    // the next ones are refused by the browser and stay stored for the next load.
    await f.until(() => beacons().length >= 1, 10_000, "a beacon");
    await new Promise((r) => setTimeout(r, 200));
    for (const b of beacons()) {
      assert.equal(b.path, "/v1/events/batch");
      assert.equal(b.query.get("key"), "vk_pub_test");
      assert.match(String(b.headers["content-type"]), /^text\/plain/);
      assert.equal(b.headers.authorization, undefined, "a beacon carries no header key");
      assert.ok(Buffer.byteLength(b.raw) <= 60 * 1024, `a beacon of ${Buffer.byteLength(b.raw)} bytes`);
    }
    const events = beacons().flatMap((b) => b.body.events);
    assert.ok(events.length >= 100, `${events.length} events beaconed`);
    assert.ok(Buffer.byteLength(beacons()[0].raw) > 50 * 1024, "the chunk is filled up to the limit");
    assert.equal(new Set(events.map((e: any) => e.id)).size, events.length, "each event in one beacon only");
    assert.deepEqual(
      events.map((e: any) => e.id),
      ids.slice(0, events.length),
      "oldest first",
    );
    const [pg] = events.filter((e: any) => e.type === "$page");
    assert.equal(pg.data.section, "docs");
    assert.equal(pg.data.title, "Beacon page");
    assert.equal(pg.data.path, "/");
    assert.ok(pg.data.url.startsWith(origin.origin));
    for (const e of events) assert.equal(e.context.anonymousId, anon);
    assert.equal(events[0].userId, undefined, "no userId before identify");

    // They stayed stored: the next page of the origin adopts them and sends them with their ids.
    f.answer = accept;
    const next = await context.newPage();
    await next.goto(url, { waitUntil: "load" });
    await next.waitForFunction("window.ready === true");
    assert.equal(await next.evaluate("window.vigil.stats.queued"), 401);
    await next.evaluate("window.vigil.flush()");
    const resent = f.seen.filter((s) => !s.query.get("key") && s.headers["content-encoding"] !== undefined);
    const fetched = f.seen
      .filter((s) => !s.query.get("key") && s.body)
      .flatMap((s) => s.body.events)
      .map((e: any) => e.id);
    assert.deepEqual(fetched, ids, "all of them re-sent, in order, with the same ids (the beaconed ones too)");
    assert.ok(resent.length > 0, "large bodies are gzipped in a browser");
    assert.equal(await next.evaluate("window.vigil.anonymousId"), anon, "the anonymous id is kept");
    assert.equal(await next.evaluate("localStorage.length"), 1, "acknowledged: only the anonymous id is left");
    assert.deepEqual(await next.evaluate("window.sdkErrors"), []);
    await next.close();
  });
});
