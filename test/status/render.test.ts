// The status pages' pure writing helpers: the markup escaper, the words of days and durations, and
// the header parsing of the HTTP routes (Accept-Encoding, If-None-Match).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { renderBadge } from "../../src/status/badge.js";
import { markup } from "../../src/status/escape.js";
import { dayText, downtimeText, percentText } from "../../src/status/html.js";
import { acceptsGzip, etagMatches } from "../../src/status/http.js";

describe("markup", () => {
  it("escapes the five characters and replaces what XML cannot hold", () => {
    assert.equal(markup(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    assert.equal(markup("a\u0001b\u000bc\nd\te"), "a\ufffdb\ufffdc\nd\te");
    assert.equal(markup("&amp;"), "&amp;amp;", "already escaped text is escaped again (it is text)");
  });

  it("a badge carries its label and message escaped, never raw", () => {
    const svg = renderBadge(`<script>"x"</script>`, "down", "#e05d44");
    assert.doesNotMatch(svg, /<script/);
    assert.match(svg, /<title>&lt;script&gt;&quot;x&quot;&lt;\/script&gt;: down<\/title>/);
    const long = renderBadge("x".repeat(200), "up", "#4c1");
    assert.match(long, new RegExp(`<title>${"x".repeat(39)}…: up</title>`));
  });
});

describe("words", () => {
  it("percentages round down: any downtime never reads 100%", () => {
    assert.equal(percentText(100), "100%");
    assert.equal(percentText(99.999), "99.99%");
    assert.equal(percentText(99.306), "99.3%");
  });

  it("downtime in minutes and hours", () => {
    assert.equal(downtimeText(0), "no downtime");
    assert.equal(downtimeText(20_000), "less than 1 min down");
    assert.equal(downtimeText(600_000), "10 min down");
    assert.equal(downtimeText(2 * 3_600_000), "2 h down");
    assert.equal(downtimeText(2 * 3_600_000 + 5 * 60_000), "2 h 5 min down");
  });

  it("a day's text", () => {
    assert.equal(
      dayText({ date: "2026-11-20", status: "down", uptimePercentage: 99.306, downtimeMs: 600_000 }),
      "2026-11-20: 99.3% up, 10 min down",
    );
    assert.equal(
      dayText({ date: "2026-11-20", status: "unknown", uptimePercentage: null, downtimeMs: 0 }),
      "2026-11-20: no data",
    );
    assert.equal(
      dayText({ date: "2026-11-20", status: "paused", uptimePercentage: null, downtimeMs: 0 }),
      "2026-11-20: paused",
    );
  });
});

describe("request headers", () => {
  it("Accept-Encoding: gzip unless refused with q=0", () => {
    assert.equal(acceptsGzip("gzip, deflate, br"), true);
    assert.equal(acceptsGzip("br;q=1, gzip;q=0.5"), true);
    assert.equal(acceptsGzip("gzip;q=0"), false);
    assert.equal(acceptsGzip("gzip;q=0, *"), false);
    assert.equal(acceptsGzip("*"), true);
    assert.equal(acceptsGzip("identity"), false);
    assert.equal(acceptsGzip(undefined), false);
    assert.equal(acceptsGzip("x-gzip"), true);
  });

  it("If-None-Match: weak comparison over a list, and *", () => {
    const etag = 'W/"abc"';
    assert.equal(etagMatches('W/"abc"', etag), true);
    assert.equal(etagMatches('"abc"', etag), true);
    assert.equal(etagMatches('"x", W/"abc"', etag), true);
    assert.equal(etagMatches("*", etag), true);
    assert.equal(etagMatches('W/"abd"', etag), false);
    assert.equal(etagMatches(undefined, etag), false);
    assert.equal(etagMatches("", etag), false);
  });
});
