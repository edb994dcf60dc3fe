import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, describe, it } from "node:test";
import { eventsOf } from "../helpers/app.js";
import { project } from "../helpers/fixtures.js";
import { ingest as ingestAll, pageAllEvents } from "../helpers/events.js";
import { minuteRanges, userHoursDelta } from "../../src/events/user-hours.js";
import type { StoredEvent } from "../../src/events/pipeline.js";
import { useProject } from "../helpers/use.js";

// The userId path of the event list reads event_user_hours (a derived record) and then each hour
// through the primary key. Its pages must equal the unfiltered list restricted to the user.

const { t, p } = useProject();

const ingest = (events: object[]) => ingestAll(t.rest, p.key, events);

const pageAll = (query: string, limit: number) => pageAllEvents(t.rest, p.key, query, limit);

const base = Date.parse("2024-06-30T12:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString();

describe("listing events by userId (event_user_hours)", () => {
  before(async () => {
    const events: object[] = [];
    // walker: 300 hours with events (beyond the 4 + 16 + 64 + 256 hour steps), ties on one timestamp,
    // hour edges (:00:00.000 and :59:59.999), and other users' events in the same hours.
    for (let i = 0; i < 300; i++) {
      // consecutive hours first (a skipped hour would lose events), then every third hour
      const hour = base - (i < 150 ? i : 150 + (i - 150) * 3) * 3_600_000;
      events.push({ type: i % 2 ? "odd" : "even", userId: "walker", timestamp: iso(hour) });
      // (hour 255 is the last of the first 256 hours a listing reads at once)
      if (i % 7 === 0 || i === 255)
        events.push(
          { type: "tie", userId: "walker", timestamp: iso(hour) },
          { type: "tie", userId: "walker", timestamp: iso(hour) },
        );
      if (i % 5 === 0) events.push({ type: "edge", userId: "walker", timestamp: iso(hour + 3_599_999) });
      // other minutes of the hour: :29:59.999, :30:00.000, and a run of three minutes
      if (i % 3 === 0)
        for (const off of [1_799_999, 1_800_000, 600_000, 660_000, 720_000])
          events.push({ type: "minutes", userId: "walker", timestamp: iso(hour + off) });
      events.push(
        { type: "other", userId: `u${i % 4}`, timestamp: iso(hour + 60_000) },
        { type: "anon", timestamp: iso(hour + 120_000) },
      );
    }
    events.push({ type: "odd", userId: "walker\u0000?".replace("\u0000", "'; --"), timestamp: iso(base) });
    await ingest(events);
  });

  it("pages through every event of the user exactly once, in (timestamp, id) order, at several page sizes", async () => {
    const all = await pageAll("", 100);
    const truth = all.filter((e) => e.userId === "walker").map((e) => e.id);
    assert.equal(truth.length, 300 + 2 * 44 + 60 + 5 * 100);
    for (const limit of [1, 7, 50, 100]) {
      const got = (await pageAll("&userId=walker", limit)).map((e) => e.id);
      assert.deepEqual(got, truth, `limit ${limit}`);
    }
  });

  it("combines with type, startDate and endDate (inclusive, mid-hour bounds)", async () => {
    const start = iso(base - 200 * 3_600_000 + 1_800_000);
    const end = iso(base - 20 * 3_600_000 - 1);
    const all = await pageAll(`&startDate=${start}&endDate=${end}`, 100);
    const truth = all.filter((e) => e.userId === "walker" && e.type === "tie").map((e) => e.id);
    assert.ok(truth.length > 0);
    assert.deepEqual(
      (await pageAll(`&userId=walker&type=tie&startDate=${start}&endDate=${end}`, 3)).map((e) => e.id),
      truth,
    );
    // A rare type over all 300 hours: one page must read past the first 256 hours.
    const ties = (await pageAll("", 100)).filter((e) => e.userId === "walker" && e.type === "tie").map((e) => e.id);
    assert.deepEqual(
      (await pageAll("&userId=walker&type=tie", 100)).map((e) => e.id),
      ties,
    );
    const edge = await pageAll(
      `&userId=walker&startDate=${iso(base + 3_599_999)}&endDate=${iso(base + 3_599_999)}`,
      10,
    );
    assert.deepEqual(
      edge.map((e) => e.type),
      ["edge"],
    );
  });

  it("finds hostile and unknown user ids safely", async () => {
    const hostile = await pageAll(`&userId=${encodeURIComponent("walker'; --?")}`, 10);
    assert.deepEqual(
      hostile.map((e) => e.type),
      ["odd"],
    );
    assert.deepEqual(await pageAll("&userId=nobody", 10), []);
  });

  it("sees events acknowledged just before the read, with the projector stopped (the read settles)", async () => {
    const q = await project(t.rest);
    await eventsOf(t.app).derived.stop();
    try {
      const r = await t.rest.post(
        "/v1/events/batch",
        {
          events: [
            { type: "fresh", userId: "new-user" },
            { type: "fresh", userId: "new-user", timestamp: "2024-01-01T00:00:00Z" },
          ],
        },
        { key: q.key },
      );
      assert.equal(r.status, 202, r.text);
      const list = await t.rest.get("/v1/projects/self/events?userId=new-user", { key: q.key });
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.data.length, 2);
    } finally {
      eventsOf(t.app).derived.start();
    }
  });

  it("the migration's backfill of existing events yields the same rows as the projection", async () => {
    const db = t.app.deps.db;
    await eventsOf(t.app).derived.settle(p.projectId);
    const rows = async () =>
      (
        await db.query(
          "SELECT user_id, hour, minutes::text FROM event_user_hours WHERE project_id = $1 ORDER BY 1, 2",
          [p.projectId],
        )
      ).rows;
    const projected = await rows();
    assert.equal(projected.filter((r) => r.user_id === "walker").length, 300);
    assert.ok(
      projected.some((r) => BigInt(r.minutes) === (1n | (1n << 59n) | (1n << 29n) | (1n << 30n) | (7n << 10n))),
      "minutes 0, 10-12, 29, 30 and 59",
    );
    const sql = /INSERT INTO event_user_hours[\s\S]*?;/.exec(
      readFileSync(new URL("../../src/storage/migrations/1005_event_user_hours.sql", import.meta.url), "utf8"),
    )![0];
    await db.query("DELETE FROM event_user_hours WHERE project_id = $1", [p.projectId]);
    await db.query(sql.replace("WHERE user_id IS NOT NULL", "WHERE user_id IS NOT NULL AND project_id = $1"), [
      p.projectId,
    ]);
    assert.deepEqual(await rows(), projected);
  });

  it("derives one row per user and UTC hour with the minutes marked (pure delta)", () => {
    const at = (userId: string | null, isoTs: string) => ({ userId, timestamp: new Date(isoTs) }) as StoredEvent;
    assert.deepEqual(
      userHoursDelta([
        at("a", "2024-01-01T10:00:00Z"),
        at("a", "2024-01-01T10:59:59.999Z"),
        at("a", "2024-01-01T10:29:59Z"),
        at("a", "2024-01-01T11:00:00Z"),
        at("b", "2024-01-01T10:30:00+05:00"),
        at(null, "2024-01-01T10:00:00Z"),
      ]),
      [
        ["a", Date.parse("2024-01-01T10:00:00Z"), 1 | (1 << 29), 1 << 29],
        ["a", Date.parse("2024-01-01T11:00:00Z"), 1, 0],
        ["b", Date.parse("2024-01-01T05:00:00Z"), 0, 1],
      ],
    );
    assert.equal(userHoursDelta([at(null, "2024-01-01T10:00:00Z")]), null);
  });

  it("turns a minute bitmap into merged ranges, newest first (pure)", () => {
    const h = Date.parse("2024-01-01T10:00:00Z");
    const m = (n: number) => h + n * 60_000;
    assert.deepEqual(minuteRanges(h, 0n), []);
    assert.deepEqual(minuteRanges(h, (1n << 60n) - 1n), [[m(0), m(60)]]);
    assert.deepEqual(minuteRanges(h, 1n | (1n << 59n) | (7n << 10n)), [
      [m(59), m(60)],
      [m(10), m(13)],
      [m(0), m(1)],
    ]);
  });
});
