// The pure decisions of the public status pages (src/status/model.ts), directly: the overall status
// table, days from history buckets, which incidents a page lists and under what title, sections.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  dayOf,
  displayName,
  incidentTitle,
  INCIDENT_WINDOW_MS,
  MAX_INCIDENTS,
  overallStatus,
  PAGE_DAYS,
  pageIncidents,
  pageView,
  sections,
  uptime24h,
  type IncidentFacts,
} from "../../src/status/model.js";
import { historyBuckets, windowFigures, type Timeline } from "../../src/uptime/figures.js";
import type { MonitorStatus } from "../../src/uptime/model.js";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../../src/shared/time.js";

const NOW = new Date("2026-11-20T12:00:00.000Z");
const at = (iso: string) => new Date(iso);

describe("overall status", () => {
  const table: [MonitorStatus[], string][] = [
    [[], "unknown"],
    [["paused"], "unknown"],
    [["unknown"], "unknown"],
    [["unknown", "paused"], "unknown"],
    [["up"], "operational"],
    [["up", "unknown"], "operational"],
    [["up", "paused"], "operational"],
    [["down"], "down"],
    [["down", "down"], "down"],
    [["down", "paused"], "down"],
    [["down", "unknown"], "down"],
    [["up", "down"], "degraded"],
    [["up", "down", "unknown", "paused"], "degraded"],
    [["down", "up", "up"], "degraded"],
  ];
  for (const [statuses, expected] of table)
    it(`[${statuses.join(", ")}] → ${expected}`, () => assert.equal(overallStatus(statuses), expected));
});

describe("days", () => {
  it("a bucket's UTC date, status, percentage (null kept) and downtime", () => {
    const start = Date.parse("2026-11-19T00:00:00Z");
    assert.deepEqual(
      dayOf({ start, end: start + DAY_MS, status: "down", uptimePercentage: 99.306, downtimeMs: 600_000 }),
      { date: "2026-11-19", status: "down", uptimePercentage: 99.306, downtimeMs: 600_000 },
    );
    assert.deepEqual(dayOf({ start, end: start + DAY_MS, status: "unknown", uptimePercentage: null, downtimeMs: 0 }), {
      date: "2026-11-19",
      status: "unknown",
      uptimePercentage: null,
      downtimeMs: 0,
    });
  });

  it("24 h uptime is null without a heartbeat ever, or with nothing observed", () => {
    const f = { observedMs: HOUR_MS, downtimeMs: 0, incidentCount: 0, uptimePercentage: 100 };
    assert.equal(uptime24h(f, true), 100);
    assert.equal(uptime24h(f, false), null);
    assert.equal(uptime24h({ ...f, observedMs: 0 }, true), null);
    assert.equal(uptime24h({ ...f, uptimePercentage: 97.5 }, true), 97.5);
  });
});

describe("names and titles", () => {
  it("the page's name for a monitor wins over the monitor's own unless empty", () => {
    assert.equal(displayName("Checkout", "svc-checkout-prod"), "Checkout");
    assert.equal(displayName(null, "svc-checkout-prod"), "svc-checkout-prod");
    assert.equal(displayName("", "svc-checkout-prod"), "svc-checkout-prod");
  });

  it("an incident without a title is '<display name> is down', once resolved '<display name> was down'", () => {
    assert.equal(incidentTitle("Database failover", "API"), "Database failover");
    assert.equal(incidentTitle(null, "API"), "API is down");
    assert.equal(incidentTitle("", "API"), "API is down");
    assert.equal(incidentTitle(null, "API", true), "API was down");
    assert.equal(incidentTitle("Database failover", "API", true), "Database failover");
  });
});

describe("incidents a page lists", () => {
  const names = new Map([
    ["mon_a", "API"],
    ["mon_b", "Website"],
  ]);
  const inc = (over: Partial<IncidentFacts>): IncidentFacts => ({
    monitorId: "mon_a",
    startedAt: at("2026-11-20T10:00:00Z"),
    endedAt: at("2026-11-20T10:30:00Z"),
    title: null,
    description: null,
    updates: [],
    ...over,
  });

  it("open ones whatever their age, resolved ones started in the last 14 days; newest first", () => {
    const since = NOW.getTime() - INCIDENT_WINDOW_MS;
    const list = pageIncidents(
      [
        inc({ title: "old resolved", startedAt: new Date(since - 1), endedAt: new Date(since + HOUR_MS) }),
        inc({ title: "edge resolved", startedAt: new Date(since), endedAt: new Date(since + HOUR_MS) }),
        inc({ title: "old but open", monitorId: "mon_b", startedAt: new Date(since - 30 * DAY_MS), endedAt: null }),
        inc({ title: "recent", startedAt: at("2026-11-19T00:00:00Z") }),
        inc({ title: "not on the page", monitorId: "mon_x" }),
      ],
      names,
      NOW,
    );
    assert.deepEqual(
      list.map((i) => [i.title, i.status]),
      [
        ["recent", "resolved"],
        ["edge resolved", "resolved"],
        ["old but open", "open"],
      ],
    );
  });

  it("untitled incidents take the monitor's display name; empty descriptions are null; updates oldest first", () => {
    const [i] = pageIncidents(
      [
        inc({
          monitorId: "mon_b",
          endedAt: null,
          description: "",
          updates: [
            { at: at("2026-11-20T11:00:00Z"), message: "second" },
            { at: at("2026-11-20T10:05:00Z"), message: "first" },
          ],
        }),
      ],
      names,
      NOW,
    );
    assert.equal(i.title, "Website is down");
    assert.equal(i.status, "open");
    assert.equal(i.description, null);
    assert.equal(i.endedAt, null);
    assert.deepEqual(
      i.updates.map((u) => u.message),
      ["first", "second"],
    );
  });

  it(`at most ${MAX_INCIDENTS}, the newest`, () => {
    const many = Array.from({ length: MAX_INCIDENTS + 20 }, (_, k) =>
      inc({ title: `#${k}`, startedAt: new Date(NOW.getTime() - (k + 1) * MINUTE_MS) }),
    );
    const list = pageIncidents(many, names, NOW);
    assert.equal(list.length, MAX_INCIDENTS);
    assert.equal(list[0].title, "#0");
    assert.equal(list.at(-1)!.title, `#${MAX_INCIDENTS - 1}`);
  });
});

describe("a whole page", () => {
  // A monitor created 10 days ago, first heartbeat an hour later, 10 minutes down 2 days ago.
  const created = NOW.getTime() - 10 * DAY_MS;
  const downAt = Date.parse("2026-11-18T08:00:00Z");
  const tl: Timeline = {
    createdAt: created,
    firstHeartbeatAt: created + HOUR_MS,
    incidents: [{ start: downAt, end: downAt + 10 * MINUTE_MS }],
    pauses: [],
  };
  const buckets = historyBuckets(tl, DAY_MS, PAGE_DAYS, NOW.getTime());
  const last24h = windowFigures(tl, NOW.getTime() - DAY_MS, NOW.getTime(), NOW.getTime());
  const monitor = {
    id: "mon_secret_id",
    slug: "svc-1",
    name: "svc-internal-name",
    pageName: "API",
    section: "Core",
    status: "up" as const,
    hadHeartbeat: true,
    buckets,
    last24h,
  };

  it("90 days, oldest first, the last one today; the downtime on its day; overall from the monitors", () => {
    const v = pageView({ title: "Acme", description: "" }, [monitor], [], NOW);
    assert.equal(v.status, "operational");
    assert.equal(v.description, null);
    const [m] = v.monitors;
    assert.equal(m.name, "API");
    assert.equal(m.section, "Core");
    assert.equal(m.uptimePercentage24h, 100);
    assert.equal(m.days.length, 90);
    assert.equal(m.days.at(-1)!.date, "2026-11-20");
    assert.equal(m.days[0].date, "2026-08-23");
    for (let k = 1; k < m.days.length; k++) assert.ok(m.days[k - 1].date < m.days[k].date);
    const down = m.days.find((d) => d.date === "2026-11-18")!;
    assert.equal(down.status, "down");
    assert.equal(down.downtimeMs, 10 * MINUTE_MS);
    assert.equal(down.uptimePercentage, 99.306);
    assert.equal(m.days.find((d) => d.date === "2026-11-01")!.status, "unknown", "before the monitor existed");
    assert.equal(m.days.find((d) => d.date === "2026-11-19")!.status, "up");
  });

  it("carries no id: the monitor's id appears nowhere in the view", () => {
    const v = pageView(
      { title: "Acme", description: null },
      [{ ...monitor, status: "down" }],
      [{ monitorId: "mon_secret_id", startedAt: NOW, endedAt: null, title: null, description: null, updates: [] }],
      NOW,
    );
    assert.equal(v.status, "down");
    assert.equal(v.incidents[0].title, "API is down");
    const resolved = pageView(
      { title: "Acme", description: null },
      [monitor],
      [{ monitorId: "mon_secret_id", startedAt: NOW, endedAt: NOW, title: null, description: null, updates: [] }],
      NOW,
    );
    assert.equal(resolved.incidents[0].title, "API was down");
    assert.ok(!JSON.stringify(v).includes("mon_secret_id"));
  });
});

describe("sections", () => {
  it("groups in display order, a section where its first monitor is", () => {
    const g = sections([
      { n: 1, section: null },
      { n: 2, section: "Core" },
      { n: 3, section: "Edge" },
      { n: 4, section: "Core" },
      { n: 5, section: null },
    ]);
    assert.deepEqual(
      g.map((x) => [x.section, x.monitors.map((m) => m.n)]),
      [
        [null, [1, 5]],
        ["Core", [2, 4]],
        ["Edge", [3]],
      ],
    );
  });
});
