// One timestamp grammar on every route (decisions.md "Time values"): RFC 3339 with a required
// offset, real calendar dates, leap seconds only where one can occur. Each text of the table goes
// through every route a timestamp enters by, so each route is shown to use the same parser.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { canonicalTimestamp, parseTimestamp, parseTimestampParts, TIMESTAMP_SHAPE } from "../../src/shared/time.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";

/** Accepted texts and the UTC instant each stands for (as stored and returned: milliseconds). */
const ACCEPTED: [string, string][] = [
  ["2024-05-06T10:00:00Z", "2024-05-06T10:00:00.000Z"],
  ["2024-05-06t10:00:00z", "2024-05-06T10:00:00.000Z"],
  ["2024-05-06T12:00:00+02:00", "2024-05-06T10:00:00.000Z"],
  ["2024-05-06T05:30:00-04:30", "2024-05-06T10:00:00.000Z"],
  ["2024-05-06T10:00:00-00:00", "2024-05-06T10:00:00.000Z"],
  ["2024-05-07T09:59:00+23:59", "2024-05-06T10:00:00.000Z"],
  ["2024-05-06T10:00:00.5Z", "2024-05-06T10:00:00.500Z"],
  ["2024-05-06T10:00:00.123456789Z", "2024-05-06T10:00:00.123Z"],
  ["2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000Z"],
  // A leap second, only at 23:59:60 UTC on a month's last day: the last instant of that day.
  ["2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999Z"],
  ["2024-07-01T01:59:60.5+02:00", "2024-06-30T23:59:59.999Z"],
];

const REFUSED: string[] = [
  "2024-05-06 10:00:00Z", // space instead of T
  "2024-05-06T10:00:00+0200", // offset without colon
  "2024-05-06T10:00:00+02", // offset without minutes
  "2024-05-06T10:00Z", // no seconds
  "2024-05-06T10:00:00", // no offset
  "2024-05-06",
  "2024-02-30T00:00:00Z", // no rollover to 1 March
  "2023-02-29T00:00:00Z",
  "2024-04-31T00:00:00Z",
  "2024-13-01T00:00:00Z",
  "2024-05-06T24:00:00Z",
  "2024-05-06T10:60:00Z",
  "2024-05-06T10:00:60Z", // a leap second where none can be
  "2024-06-30T23:59:60+02:00", // 21:59:60 UTC
  "2024-05-06T10:00:00+24:00",
  "2024-05-06T10:00:00+02:60",
  "2024-05-06T10:00:00.Z",
  "2024-05-06T10:00:00.1234567890Z", // more than 9 fraction digits
  " 2024-05-06T10:00:00Z",
  "2024-05-06T10:00:00Z ",
  "2024-05-06T10:00:00ZZ",
  "2024-5-6T10:00:00Z",
  "2024-05-06T10:00:00UTC",
  "\uff12024-05-06T10:00:00Z",
  "now",
];

describe("the timestamp grammar (src/shared/time.ts)", () => {
  it("reads each accepted text as its UTC instant", () => {
    for (const [text, iso] of ACCEPTED) assert.equal(parseTimestamp(text)?.toISOString(), iso, text);
  });
  it("refuses every other text", () => {
    for (const text of [...REFUSED, "2024-05-06T10:00:00\u0000Z", "2024-05-06T10:00:00.\u0000Z"])
      assert.equal(parseTimestamp(text), undefined, JSON.stringify(text));
  });
  it("TIMESTAMP_SHAPE (the descriptors' pattern) matches every accepted text; the parser refuses only calendar and range", () => {
    const shape = new RegExp(TIMESTAMP_SHAPE);
    for (const [text] of ACCEPTED) assert.ok(shape.test(text), text);
    // Matched by the shape, refused by the parser: dates the calendar lacks, misplaced leap seconds, range.
    const calendar = ["2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-04-31T00:00:00Z", "2024-05-06T10:00:60Z"];
    for (const text of REFUSED)
      assert.equal(shape.test(text), calendar.includes(text) || text === "2024-06-30T23:59:60+02:00", text);
    const two = (lo: number, hi: number) => fc.integer({ min: lo, max: hi }).map((n) => String(n).padStart(2, "0"));
    const text = fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, "0")),
        two(0, 13),
        two(0, 32),
        fc.constantFrom("T", "t", " ", "x"),
        two(0, 24),
        two(0, 60),
        two(0, 61),
        fc.constantFrom("", ".5", ".123456789", ".1234567890", "."),
        fc.constantFrom("Z", "z", "+02:00", "-23:59", "+24:00", "-00:60", "+0200", ""),
      )
      .map(([y, mo, d, t, h, mi, s, f, o]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}${f}${o}`);
    fc.assert(
      fc.property(text, (t) => {
        const parsed = parseTimestamp(t) !== undefined;
        if (parsed) assert.ok(shape.test(t), `accepted but not matched: ${t}`);
        else if (shape.test(t)) {
          const [, y, mo, d, s] = /^(\d{4})-(\d\d)-(\d\d)[Tt]\d\d:\d\d:(\d\d)/.exec(t)!;
          const real = new Date(Date.UTC(+y, +mo - 1, +d)).getUTCDate() === +d;
          assert.ok(!real || +y === 0 || s === "60" || /^(0001-01-01|9999-12-31)/.test(t), `matched, refused: ${t}`);
        }
      }),
      { numRuns: 20_000 },
    );
  });
  it("covers years 0001-9999 in UTC, real years below 100, and keeps nanoseconds for range bounds", () => {
    assert.equal(parseTimestamp("0001-01-01T00:00:00Z")?.toISOString(), "0001-01-01T00:00:00.000Z");
    assert.equal(parseTimestamp("0099-12-31T23:00:00-01:00")?.toISOString(), "0100-01-01T00:00:00.000Z");
    assert.equal(parseTimestamp("9999-12-31T23:59:59.999Z")?.toISOString(), "9999-12-31T23:59:59.999Z");
    assert.equal(parseTimestamp("0000-01-01T00:00:00Z"), undefined);
    assert.equal(parseTimestamp("0001-01-01T00:00:00+00:01"), undefined, "before year 1 in UTC");
    assert.equal(parseTimestamp("9999-12-31T23:59:59-00:01"), undefined, "year 10000 in UTC");
    const p = parseTimestampParts("2024-05-06T12:00:00.123456789+02:00")!;
    assert.deepEqual(p, { ms: Date.UTC(2024, 4, 6, 10, 0, 0, 123), subMsNanos: 456_789 });
    assert.equal(canonicalTimestamp(p), "2024-05-06T10:00:00.123456789Z");
    assert.equal(canonicalTimestamp(parseTimestampParts("2024-05-06T10:00:00Z")!), "2024-05-06T10:00:00.000Z");
    // Every day of 400 years against the platform's calendar.
    for (let d = Date.UTC(1900, 0, 1); d < Date.UTC(2300, 0, 1); d += 86_400_000) {
      const iso = new Date(d).toISOString();
      assert.equal(parseTimestamp(iso)?.getTime(), d, iso);
    }
  });
});

let t: TestApp;
let p: ProjectFixture;
let monitorId: string;
const base = () => `/v1/projects/${p.projectId}`;
const q = encodeURIComponent;
const ALL = { start: "2000-01-01T00:00:00Z", end: "2100-01-01T00:00:00Z" };

before(async () => {
  t = await startTestApp({
    RATE_LIMIT_EVENTS_PER_MINUTE: "100000",
    RATE_LIMIT_BATCHES_PER_MINUTE: "100000",
    RATE_LIMIT_METRICS_PER_MINUTE: "100000",
  });
  p = await project(t.rest);
  const hb = await t.rest.post(`${base()}/heartbeats/clock`, {}, { key: p.key });
  assert.equal(hb.status, 200, hb.text);
  monitorId = hb.body.data.monitor.id;
});
after(() => t.close());

type Route = {
  name: string;
  field: string;
  send: (text: string, i: number) => Promise<{ status: number; text: string; body: any }>;
};

/** Every route a client timestamp enters by. `field` is what a refusal names. */
const ROUTES: Route[] = [
  {
    name: "POST /v1/events timestamp",
    field: "timestamp",
    send: (ts) => t.rest.post("/v1/events", { type: "clock", timestamp: ts }, { key: p.key }),
  },
  {
    name: "GET .../events startDate",
    field: "startDate",
    send: (ts) => t.rest.get(`${base()}/events?startDate=${q(ts)}`, { key: p.key }),
  },
  {
    name: "GET .../events endDate",
    field: "endDate",
    send: (ts) => t.rest.get(`${base()}/events?endDate=${q(ts)}`, { key: p.key }),
  },
  {
    name: "analytics time.start",
    field: "time.start",
    send: (ts) =>
      t.rest.post(`${base()}/analytics/count`, { time: { start: ts, end: "9999-01-01T00:00:00Z" } }, { key: p.key }),
  },
  {
    name: "analytics time.end",
    field: "time.end",
    send: (ts) =>
      t.rest.post(`${base()}/analytics/count`, { time: { start: "0001-01-01T00:00:00Z", end: ts } }, { key: p.key }),
  },
  {
    name: "analytics filter value",
    field: "filters.value",
    send: (ts) =>
      t.rest.post(
        `${base()}/analytics/count`,
        { time: ALL, filters: { field: "timestamp", operator: "gte", value: ts } },
        { key: p.key },
      ),
  },
  {
    name: "heartbeats from",
    field: "from",
    send: (ts) => t.rest.get(`${base()}/monitors/${monitorId}/heartbeats?from=${q(ts)}`, { key: p.key }),
  },
  {
    name: "heartbeats to",
    field: "to",
    send: (ts) => t.rest.get(`${base()}/monitors/${monitorId}/heartbeats?to=${q(ts)}`, { key: p.key }),
  },
  {
    name: "monitor stats from",
    field: "from",
    // A window of one hour after the instant (at most 366 days are allowed).
    send: (ts) =>
      t.rest.get(
        `${base()}/monitors/${monitorId}/stats?from=${q(ts)}&to=${q(new Date((parseTimestamp(ts)?.getTime() ?? Date.UTC(2024, 0, 1)) + 3_600_000).toISOString())}`,
        { key: p.key },
      ),
  },
  {
    name: "POST .../metrics timestamp",
    field: "timestamp",
    send: (ts, i) =>
      t.rest.post(
        `${base()}/metrics`,
        { type: "measurement", name: `clock-${i}`, value: 1, timestamp: ts },
        { key: p.key },
      ),
  },
  {
    name: "metrics query time.start",
    field: "time.start",
    send: (ts) =>
      t.rest.post(
        `${base()}/metrics/query`,
        { name: "clock-0", time: { start: ts, end: "9999-01-01T00:00:00Z" } },
        { key: p.key },
      ),
  },
  {
    name: "metrics points time.end",
    field: "time.end",
    send: (ts) =>
      t.rest.post(
        `${base()}/metrics/points`,
        { name: "clock-0", time: { start: "2000-01-01T00:00:00Z", end: ts } },
        { key: p.key },
      ),
  },
];

describe("every route reads timestamps with the one parser", () => {
  it("accepts each accepted text on every route", async () => {
    for (const [i, [text]] of ACCEPTED.entries()) {
      for (const r of ROUTES) {
        const res = await r.send(text, i);
        assert.ok(
          res.status >= 200 && res.status < 300,
          `${r.name} ${JSON.stringify(text)}: ${res.status} ${res.text}`,
        );
      }
    }
  });

  it("refuses each refused text on every route with 400 naming the field", async () => {
    for (const text of REFUSED) {
      for (const r of ROUTES) {
        const res = await r.send(text, 0);
        assert.equal(res.status, 400, `${r.name} ${JSON.stringify(text)}: ${res.text}`);
        const e = errorBody(res);
        assert.ok(
          JSON.stringify(e.details ?? "").includes(r.field),
          `${r.name} ${JSON.stringify(text)} names ${r.field}: ${res.text}`,
        );
      }
    }
  });

  it("a batch refuses the item and keeps the others", async () => {
    const r = await t.rest.post(
      "/v1/events/batch",
      {
        events: [
          { type: "b", timestamp: "2024-05-06T10:00:00Z" },
          { type: "b", timestamp: "2024-05-06T10:00:00+0200" },
          { type: "b", timestamp: "2024-05-06t12:00:00+02:00" },
        ],
      },
      { key: p.key },
    );
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.data.accepted, 2);
    assert.deepEqual(
      r.body.data.errors.map((e: { index: number }) => e.index),
      [1],
    );
  });

  it("stores and returns the same UTC instant whichever route the text came by", async () => {
    for (const [i, [text, iso]] of ACCEPTED.entries()) {
      const ev = await t.rest.post("/v1/events", { type: `same-${i}`, timestamp: text }, { key: p.key });
      assert.equal(ev.body.data.timestamp, iso, text);
      // The metric recorded above with this text, read back through the same text as both bounds.
      const pts = await t.rest.post(
        `${base()}/metrics/points`,
        { name: `clock-${i}`, time: { start: text, end: text } },
        { key: p.key },
      );
      assert.deepEqual(
        pts.body.data.points.map((x: { timestamp: string }) => x.timestamp),
        [iso],
        `${text}: ${pts.text}`,
      );
      // Analytics reads the text as the same instant: an equality filter finds the event (stored
      // times have milliseconds, so a text with a finer fraction names another instant).
      if (parseTimestampParts(text)!.subMsNanos !== 0) continue;
      const count = await t.rest.post(
        `${base()}/analytics/count`,
        {
          time: ALL,
          filters: {
            and: [
              { field: "event", operator: "equals", value: `same-${i}` },
              { field: "timestamp", operator: "equals", value: text },
            ],
          },
        },
        { key: p.key },
      );
      assert.equal(count.body.data.count, 1, `${text}: ${count.text}`);
      const window = await t.rest.post(
        `${base()}/analytics/count`,
        { filters: { field: "event", operator: "equals", value: `same-${i}` }, time: { start: text, end: text } },
        { key: p.key },
      );
      assert.equal(window.body.data.count, 1, `${text}: ${window.text}`);
    }
  });
});
