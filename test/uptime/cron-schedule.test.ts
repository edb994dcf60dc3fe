import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { nextRuns, parseSchedule } from "../../src/uptime/schedule.js";
import { useProject } from "../helpers/use.js";

// GET .../monitors/:monitorId/schedule on DST days (decisions.md "Cron jobs and ping keys"), through
// the API: the app's clock is injected (the test hook every app has) and set to the day of a change.
// The expected times are written out by hand and also checked against schedule.ts.

let now = Date.parse("2026-03-29T00:00:00Z");
const { t, p } = useProject({}, { clock: () => new Date(now) });

const base = () => `/v1/projects/${p.projectId}`;

async function nextOf(cron: string, timezone: string, count: number): Promise<string[]> {
  const c = await t.rest.post(
    `${base()}/monitors`,
    { name: `${cron} ${timezone}`, schedule: { cron, timezone } },
    { key: p.key },
  );
  assert.equal(c.status, 201, c.text);
  const r = await t.rest.get(`${base()}/monitors/${c.body.data.id}/schedule?count=${count}`, { key: p.key });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([r.body.data.cron, r.body.data.timezone], [cron, timezone]);
  const parsed = parseSchedule({ cron, timezone });
  assert.ok(parsed.ok);
  assert.deepEqual(
    r.body.data.next,
    nextRuns(parsed.schedule, now, count).map((x) => new Date(x).toISOString()),
    "the API answers schedule.ts's runs",
  );
  return r.body.data.next;
}

describe("GET .../schedule across DST changes", () => {
  it("Berlin, spring: a time in the skipped hour runs at the first instant after the gap", async () => {
    now = Date.parse("2026-03-28T23:00:00Z"); // 00:00 CET on 2026-03-29, the day clocks go 02:00 -> 03:00
    assert.deepEqual(await nextOf("30 2 * * *", "Europe/Berlin", 3), [
      "2026-03-29T01:00:00.000Z", // 02:30 does not exist: 03:00 CEST
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
      "2026-03-31T00:30:00.000Z",
    ]);
  });

  it("Berlin, autumn: a time in the repeated hour runs once, at its first occurrence", async () => {
    now = Date.parse("2026-10-24T22:00:00Z"); // 00:00 CEST on 2026-10-25, clocks go 03:00 -> 02:00
    assert.deepEqual(await nextOf("30 2 * * *", "Europe/Berlin", 2), [
      "2026-10-25T00:30:00.000Z", // 02:30 CEST, not again at 02:30 CET (01:30Z)
      "2026-10-26T01:30:00.000Z", // 02:30 CET
    ]);
  });

  it("New York, spring and autumn", async () => {
    now = Date.parse("2026-03-08T05:00:00Z"); // 00:00 EST on 2026-03-08, clocks go 02:00 -> 03:00
    assert.deepEqual(await nextOf("15 2 * * *", "America/New_York", 2), [
      "2026-03-08T07:00:00.000Z", // 02:15 does not exist: 03:00 EDT
      "2026-03-09T06:15:00.000Z", // 02:15 EDT
    ]);
    now = Date.parse("2026-11-01T04:00:00Z"); // 00:00 EDT on 2026-11-01, clocks go 02:00 -> 01:00
    assert.deepEqual(await nextOf("30 1 * * *", "America/New_York", 2), [
      "2026-11-01T05:30:00.000Z", // 01:30 EDT only
      "2026-11-02T06:30:00.000Z", // 01:30 EST
    ]);
  });
});
