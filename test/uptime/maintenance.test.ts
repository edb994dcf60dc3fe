import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, project, type ProjectFixture } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { historyBuckets } from "../../src/uptime/figures.js";
import { occurrenceAt, occurrencesBetween } from "../../src/uptime/maintenance-model.js";
import { deadlineOf } from "../../src/uptime/model.js";
import type { IncidentNotice } from "../../src/uptime/incidents.js";
import { recordNotices, waitFor } from "./util.js";

// Maintenance windows (decisions.md "Status communication"; docs/uptime.md "Maintenance windows"):
// CRUD and validation; a one-off window starting and ending on its own (hundreds of ms) with its
// monitors in maintenance (no deadline, a down heartbeat opens nothing), the deadline counted from
// the end, maintenance.started/completed once each with two nodes on one database, and the public
// page (JSON, HTML, badge, feed) during it; the recurring occurrences and the history buckets as pure
// functions. One app for the file, plus a second node on its database for the two-node case.

const HOUR = 3_600_000;
const GRACE = 1000;
const CAP = 50;
/** Bound of a wait (no speed is asserted): generous, for a loaded machine running Temporal. */
const WAIT_MS = 30_000;

let second: TestApp | undefined;
let seenA: IncidentNotice[] = [];
let seenB: IncidentNotice[] = [];
const { t, p } = useProject(
  { ...GENEROUS_LIMITS, STATUS_PAGE_REFRESH_MS: "50", MAX_MAINTENANCES_PER_PROJECT: String(CAP) },
  {},
  async () => {
    second = await startTestApp({ ...GENEROUS_LIMITS }, { databaseUrl: t.databaseUrl });
    seenA = recordNotices(t);
    seenB = recordNotices(second);
  },
);
after(() => second?.close());

const windows = (f: ProjectFixture = p) => `/v1/projects/${f.projectId}/maintenances`;

async function monitor(f: ProjectFixture, slug: string): Promise<string> {
  const r = await t.rest.post(
    `/v1/projects/${f.projectId}/heartbeats/${slug}`,
    { expectedIntervalMs: HOUR, gracePeriodMs: GRACE },
    { key: f.key },
  );
  assert.equal(r.status, 200, r.text);
  return r.body.data.monitor.id;
}

const getMonitor = async (id: string) =>
  (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${id}`, { key: p.key })).body.data;

const iso = (ms: number) => new Date(ms).toISOString();

describe("maintenance windows", { concurrency: true }, () => {
  it("CRUD: create, list, get, patch, delete; records carry status and the next occurrence", async () => {
    const m = await monitor(p, "crud-1");
    const start = Date.now() + 10 * HOUR;
    const cr = await t.rest.post(
      windows(),
      {
        title: "DB upgrade",
        description: "Postgres 17",
        monitorIds: [m],
        startsAt: iso(start),
        endsAt: iso(start + HOUR),
      },
      { key: p.key },
    );
    assert.equal(cr.status, 201, cr.text);
    const w = cr.body.data;
    assert.match(w.id, /^mnt_/);
    assert.equal(w.status, "scheduled");
    assert.equal(w.nextStartsAt, iso(start));
    assert.equal(w.nextEndsAt, iso(start + HOUR));
    assert.deepEqual(w.monitorIds, [m]);
    assert.equal(w.schedule, null);
    assert.equal((await t.rest.get(`${windows()}/${w.id}`, { key: p.key })).body.data.title, "DB upgrade");
    const list = await t.rest.get(windows(), { key: p.key });
    assert.ok(list.body.data.some((x: { id: string }) => x.id === w.id));
    const patched = await t.rest.patch(`${windows()}/${w.id}`, { title: "DB upgrade (v17)" }, { key: p.key });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.data.title, "DB upgrade (v17)");
    assert.equal(patched.body.data.nextStartsAt, iso(start));
    const rec = await t.rest.post(
      windows(),
      {
        title: "Nightly",
        monitorIds: [m],
        schedule: { cron: "0 3 * * *", timezone: "Europe/Berlin", durationMs: HOUR },
      },
      { key: p.key },
    );
    assert.equal(rec.status, 201, rec.text);
    assert.deepEqual(rec.body.data.schedule, { cron: "0 3 * * *", timezone: "Europe/Berlin", durationMs: HOUR });
    assert.equal(rec.body.data.status, "scheduled");
    assert.ok(Date.parse(rec.body.data.nextStartsAt) > Date.now());
    const del = await t.rest.del(`${windows()}/${w.id}`, { key: p.key });
    assert.equal(del.status, 204, del.text);
    assert.equal((await t.rest.get(`${windows()}/${w.id}`, { key: p.key })).status, 404);
  });

  it("validation: times, monitors, another tenant's monitor, the cron; a clear 4xx each", async () => {
    const m = await monitor(p, "valid-1");
    const other = await project(t.rest);
    const theirs = await monitor(other, "theirs");
    const s = Date.now() + HOUR;
    const cases: [Record<string, unknown>, number, string][] = [
      [{ title: "x", monitorIds: [m] }, 400, "startsAt"],
      [{ title: "x", monitorIds: [m], startsAt: iso(s) }, 400, "endsAt"],
      [{ title: "x", monitorIds: [m], startsAt: iso(s), endsAt: iso(s - 1) }, 400, "endsAt"],
      [
        {
          title: "x",
          monitorIds: [m],
          startsAt: iso(s),
          endsAt: iso(s + 1),
          schedule: { cron: "* * * * *", durationMs: 1000 },
        },
        400,
        "schedule",
      ],
      [{ title: "x", monitorIds: [m], schedule: { cron: "61 * * * *", durationMs: 60_000 } }, 400, "schedule.cron"],
      [{ title: "x", monitorIds: [], startsAt: iso(s), endsAt: iso(s + 1) }, 400, "monitorIds"],
      [{ title: "", monitorIds: [m], startsAt: iso(s), endsAt: iso(s + 1) }, 400, "title"],
      [{ title: "x", monitorIds: [m, theirs], startsAt: iso(s), endsAt: iso(s + 1) }, 404, "monitorIds[1]"],
    ];
    for (const [body, status, field] of cases) {
      const r = await t.rest.post(windows(), body, { key: p.key });
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
      const e = errorBody(r);
      assert.ok(
        ((e.details ?? []) as { field: string }[]).some((d: { field: string }) => d.field === field),
        `${JSON.stringify(body)} names ${field}: ${r.text}`,
      );
    }
    // Another tenant's window is not found.
    const mine = await t.rest.post(
      windows(),
      { title: "x", monitorIds: [m], startsAt: iso(s), endsAt: iso(s + 1000) },
      { key: p.key },
    );
    assert.equal(mine.status, 201, mine.text);
    assert.equal((await t.rest.get(`${windows(other)}/${mine.body.data.id}`, { key: other.key })).status, 404);
    assert.equal((await t.rest.del(`${windows(other)}/${mine.body.data.id}`, { key: other.key })).status, 404);
  });

  it("the per-project cap: one more window is a 409", async () => {
    const f = await project(t.rest);
    const m = await monitor(f, "cap-1");
    const s = Date.now() + HOUR;
    for (let i = 0; i < CAP; i++) {
      const r = await t.rest.post(
        windows(f),
        { title: `w${i}`, monitorIds: [m], startsAt: iso(s), endsAt: iso(s + 1000) },
        { key: f.key },
      );
      assert.equal(r.status, 201, r.text);
    }
    const over = await t.rest.post(
      windows(f),
      { title: "one more", monitorIds: [m], startsAt: iso(s), endsAt: iso(s + 1000) },
      { key: f.key },
    );
    assert.equal(over.status, 409, over.text);
    assert.equal(errorBody(over).code, "conflict");
  });

  it("a one-off window starts and ends on its own, once each on two nodes; the deadline counts from its end", async () => {
    const a = await monitor(p, "win-a");
    const start = Date.now() + 1000;
    const end = start + 1000;
    const cr = await t.rest.post(
      windows(),
      {
        title: "Failover drill",
        description: "Switching regions",
        monitorIds: [a],
        startsAt: iso(start),
        endsAt: iso(end),
      },
      { key: p.key },
    );
    assert.equal(cr.status, 201, cr.text);
    assert.equal(cr.body.data.status, "scheduled");
    const id = cr.body.data.id;
    const mine = (n: IncidentNotice) => JSON.stringify(n.payload).includes(id);
    const seen = (type: string) => async () => [...seenA, ...seenB].some((n) => mine(n) && n.type === type);
    await waitFor(seen("maintenance.started"), WAIT_MS, "started");
    await waitFor(seen("maintenance.completed"), WAIT_MS, "completed");
    // Once each, whichever node applied it.
    const notices = [...seenA, ...seenB].filter(mine);
    assert.deepEqual(notices.map((n) => n.type).sort(), ["maintenance.completed", "maintenance.started"]);
    const started = notices.find((n) => n.type === "maintenance.started")!;
    assert.equal(started.at.toISOString(), iso(start));
    assert.deepEqual(started.payload.monitors, [{ id: a, name: "win-a", slug: "win-a" }]);
    // Out of maintenance, the deadline counted from the window's end; nothing opened. (The notice is
    // recorded inside the transition's transaction: its commit may come a moment later.)
    const m = await waitFor(
      async () => {
        const x = await getMonitor(a);
        return x.inMaintenance ? undefined : x;
      },
      WAIT_MS,
      "the monitor out of maintenance",
    );
    assert.equal(m.status, "up");
    assert.equal(m.deadlineAt, iso(end + HOUR + GRACE));
    assert.equal((await t.rest.get(`${windows()}/${id}`, { key: p.key })).body.data.status, "completed");
    const periods = await t.app.deps.db.query(
      "SELECT started_at, ended_at FROM monitor_maintenances WHERE maintenance_id = $1",
      [id],
    );
    assert.equal(periods.rowCount, 1);
    assert.equal(periods.rows[0].started_at.toISOString(), iso(start));
    assert.equal(periods.rows[0].ended_at.toISOString(), iso(end));
    // Who applied it: the maintenance timer (embedded), or Temporal's deadline scan, with no timer
    // of its own on any node (docs/uptime.md "How windows start and end").
    const tasks = await Promise.all(
      [t.url, second!.url].map(async (u) => Object.keys((await (await fetch(`${u}/health`)).json()).background)),
    );
    for (const names of tasks)
      assert.equal(names.includes("maintenance re-scan"), process.env.VIGIL_TEST_TEMPORAL !== "1", names.join());
  });

  it("in a window: no deadline, a down heartbeat opens nothing, the page shows it, a paused monitor stays paused; deleting it ends it", async () => {
    const a = await monitor(p, "in-a");
    const b = await monitor(p, "in-b");
    const paused = await monitor(p, "in-paused");
    const pr = await t.rest.post(`/v1/projects/${p.projectId}/monitors/${paused}/pause`, {}, { key: p.key });
    assert.equal(pr.status, 200, pr.text);
    const pg = await t.rest.post(
      `/v1/projects/${p.projectId}/pages`,
      {
        slug: "maint-page",
        title: "Maint",
        published: true,
        monitors: [{ monitorId: a, name: "API" }, { monitorId: b }],
      },
      { cookie: p.owner.cookie },
    );
    assert.equal(pg.status, 201, pg.text);
    const now = Date.now();
    const later = now + 2 * HOUR;
    const up = await t.rest.post(
      windows(),
      { title: "Next week", monitorIds: [b], startsAt: iso(later), endsAt: iso(later + HOUR) },
      { key: p.key },
    );
    assert.equal(up.status, 201, up.text);
    const cr = await t.rest.post(
      windows(),
      {
        title: "Failover",
        description: "Switching regions",
        monitorIds: [a, paused],
        startsAt: iso(now - 1000),
        endsAt: iso(now + HOUR),
      },
      { key: p.key },
    );
    assert.equal(cr.status, 201, cr.text);
    assert.equal(cr.body.data.status, "in_progress", "a window already begun starts at its creation");
    const during = await getMonitor(a);
    assert.equal(during.inMaintenance, true);
    assert.equal(during.deadlineAt, null);
    assert.equal(during.status, "up");
    assert.equal((await getMonitor(b)).inMaintenance, false, "a monitor the window does not name");
    assert.equal((await getMonitor(paused)).status, "paused");
    // A down heartbeat is recorded and changes nothing.
    const down = await t.rest.post(`/v1/projects/${p.projectId}/heartbeats/in-a`, { status: "down" }, { key: p.key });
    assert.equal(down.status, 200, down.text);
    assert.equal(down.body.data.monitor.status, "up");
    assert.equal(down.body.data.monitor.inMaintenance, true);
    assert.equal(down.body.data.statusChanged, false);
    assert.equal(down.body.data.monitor.deadlineAt, null);
    const hbs = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${a}/heartbeats`, { key: p.key });
    assert.ok(
      hbs.body.data.some((h: { status: string }) => h.status === "down"),
      "the heartbeat is recorded",
    );
    const incs = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${a}/incidents`, { key: p.key });
    assert.deepEqual(incs.body.data, [], "no incident opened");

    // The page agrees: JSON, HTML, badge and feed.
    const page = await waitFor(
      async () => {
        const r = await t.rest.get("/v1/status/maint-page");
        return r.body.data.maintenances.active.length ? r.body.data : undefined;
      },
      WAIT_MS,
      "page with the active window",
    );
    assert.equal(page.monitors[0].status, "maintenance");
    assert.equal(page.monitors[1].status, "up");
    assert.equal(page.status, "operational", "a monitor in maintenance counts neither up nor down");
    assert.deepEqual(page.maintenances.active, [
      {
        title: "Failover",
        description: "Switching regions",
        startsAt: iso(now - 1000),
        endsAt: iso(now + HOUR),
        monitors: ["API"],
      },
    ]);
    assert.deepEqual(page.maintenances.upcoming, [
      { title: "Next week", description: null, startsAt: iso(later), endsAt: iso(later + HOUR), monitors: ["in-b"] },
    ]);
    const [html, badge, feed] = await Promise.all([
      t.rest.get("/status/maint-page"),
      t.rest.get("/status/maint-page/badge.svg?monitor=in-a"),
      t.rest.get("/status/maint-page/feed.atom"),
    ]);
    assert.match(html.text, /<h2 id="maintenance">Maintenance<\/h2>/);
    assert.match(html.text, /<h3 id="maintenance-active">In progress<\/h3>\n<article>\n<h3>Failover<\/h3>/);
    assert.match(html.text, /<h3 id="maintenance-upcoming">Upcoming<\/h3>\n<article>\n<h3>Next week<\/h3>/);
    assert.match(html.text, /Under maintenance/);
    assert.ok(!html.text.includes("<script"), "no JavaScript");
    assert.match(badge.text, /API: maintenance/);
    assert.match(feed.text, /\[Maintenance, in progress\] Failover/);
    assert.match(feed.text, /\[Maintenance\] Next week/);

    // Deleted while in progress: it ends now; the deadline counts from now; the paused one stays paused.
    const del = await t.rest.del(`${windows()}/${cr.body.data.id}`, { key: p.key });
    assert.equal(del.status, 204, del.text);
    const after = await getMonitor(a);
    assert.equal(after.inMaintenance, false);
    assert.ok(Date.parse(after.deadlineAt) >= now + HOUR, "counted from the end (now)");
    const p2 = await getMonitor(paused);
    assert.equal(p2.status, "paused");
    assert.equal(p2.deadlineAt, null);
  });

  it("a cron run that fails or exits non-zero in a window is recorded and opens nothing", async () => {
    const s = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/backup-job/start`,
      { runId: "r1", schedule: { cron: "0 3 * * *", timezone: "Europe/Berlin" }, gracePeriodMs: GRACE },
      { key: p.key },
    );
    assert.equal(s.status, 200, s.text);
    const id = s.body.data.monitor.id;
    const before = s.body.data.monitor.status; // unknown: no run has succeeded yet
    const cr = await t.rest.post(
      windows(),
      { title: "DB upgrade", monitorIds: [id], startsAt: iso(Date.now() - 1000), endsAt: iso(Date.now() + HOUR) },
      { key: p.key },
    );
    assert.equal(cr.status, 201, cr.text);
    const f = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/backup-job/fail`,
      { runId: "r1", output: "disk full" },
      { key: p.key },
    );
    assert.equal(f.status, 200, f.text);
    assert.equal(f.body.data.monitor.status, before);
    assert.equal(f.body.data.statusChanged, false);
    const s2 = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/backup-job/start`,
      { runId: "r2" },
      { key: p.key },
    );
    assert.equal(s2.status, 200, s2.text);
    const e = await t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/backup-job/exit/3`,
      { runId: "r2" },
      { key: p.key },
    );
    assert.equal(e.status, 200, e.text);
    assert.equal(e.body.data.monitor.status, before);
    const runs = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/runs`, { key: p.key });
    assert.deepEqual(
      runs.body.data.map((r: { runId: string; outcome: string; exitCode: number | null }) => [
        r.runId,
        r.outcome,
        r.exitCode,
      ]),
      [
        ["r2", "failed", 3],
        ["r1", "failed", null],
      ],
      "both runs recorded, failed",
    );
    const incs = await t.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/incidents`, { key: p.key });
    assert.deepEqual(incs.body.data, [], "no incident opened");
  });

  it("an alert firing in a window opens no incident there; still firing after it, it opens one started at the window's end", async () => {
    // Evaluations every 10 s (the least cadence); the window ends 2 s after the one that fires in it.
    const EVERY = 10_000;
    const cr = await t.rest.post(
      `/v1/projects/${p.projectId}/alerts`,
      {
        name: "Latency in maintenance",
        query: { source: "metric", name: "maint.latency", aggregation: "max" },
        condition: { operator: "gt", value: 1000 },
        windowMs: EVERY,
        everyMs: EVERY,
      },
      { key: p.key },
    );
    assert.equal(cr.status, 201, cr.text);
    const alert = cr.body.data;
    const point = async (value: number) => {
      const r = await t.rest.post(
        `/v1/projects/${p.projectId}/metrics`,
        { type: "measurement", name: "maint.latency", value, timestamp: iso(Date.now()) },
        { key: p.key },
      );
      assert.equal(r.status, 201, r.text);
    };
    // The first due time at least 2 s away: the window and a point in its evaluation's window come before it.
    const grid = (ms: number) => alert.evaluationOffsetMs + Math.ceil((ms - alert.evaluationOffsetMs) / EVERY) * EVERY;
    const fires = grid(Date.now() + 2_000);
    const windowEnd = fires + 2_000;
    const w = await t.rest.post(
      windows(),
      { title: "Load test", monitorIds: [alert.monitorId], startsAt: iso(Date.now() - 1000), endsAt: iso(windowEnd) },
      { key: p.key },
    );
    assert.equal(w.status, 201, w.text);
    // In the firing evaluation's window (its last 10 s), stamped now.
    await new Promise((r) => setTimeout(r, Math.max(0, fires - 1500 - Date.now())));
    await point(5000);
    const get = async () =>
      (await t.rest.get(`/v1/projects/${p.projectId}/alerts/${alert.id}`, { key: p.key })).body.data;
    const firing = await waitFor(
      async () => {
        const x = await get();
        return x.state === "firing" ? x : undefined;
      },
      WAIT_MS,
      "the alert firing in the window",
    );
    assert.equal(firing.lastEvaluatedAt, iso(fires));
    const incidents = async () =>
      (await t.rest.get(`/v1/projects/${p.projectId}/monitors/${alert.monitorId}/incidents`, { key: p.key })).body.data;
    assert.deepEqual(await incidents(), [], "none in the window");
    assert.equal((await getMonitor(alert.monitorId)).inMaintenance, true);
    // Still over the threshold in the next evaluation's window, after the window's end.
    await point(4000);
    const opened = await waitFor(
      async () => {
        const list = await incidents();
        return list.length ? list : undefined;
      },
      WAIT_MS,
      "the incident after the window",
    );
    assert.equal(opened.length, 1);
    assert.equal(opened[0].startedAt, iso(windowEnd), "started at the window's end");
    assert.equal(opened[0].endedAt, null);
    const after = await get();
    assert.equal(after.state, "firing");
    assert.equal(after.lastEvaluatedAt, iso(fires + EVERY));
    assert.equal((await getMonitor(alert.monitorId)).inMaintenance, false);
    // Gone, so that no alert keeps Temporal's deadline scan polling (the reconciler test below).
    const del = await t.rest.del(`/v1/projects/${p.projectId}/alerts/${alert.id}`, { key: p.key });
    assert.equal(del.status, 204, del.text);
  });

  it("recurring occurrences follow the cron rules (DST included); history buckets show maintenance", () => {
    const sched = { cron: "30 2 * * *", timezone: "Europe/Berlin", durationMs: HOUR };
    const w = { startsAt: null, endsAt: null, schedule: sched };
    // 2026-03-29: 02:30 Berlin does not exist (clocks jump 02:00 -> 03:00): it runs at 03:00 CEST = 01:00Z.
    const o = occurrenceAt(w, Date.parse("2026-03-28T12:00:00Z"));
    assert.deepEqual(o, { start: Date.parse("2026-03-29T01:00:00Z"), end: Date.parse("2026-03-29T02:00:00Z") });
    // In progress at a time inside it.
    assert.deepEqual(occurrenceAt(w, Date.parse("2026-03-29T01:30:00Z")), o);
    // 2026-10-25: 02:30 happens twice; the window runs once, at the first (00:30Z).
    const list = occurrencesBetween(w, Date.parse("2026-10-24T12:00:00Z"), Date.parse("2026-10-27T00:00:00Z"), 10);
    assert.deepEqual(
      list.map((x) => iso(x.start)),
      ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"],
    );
    // One-off: none once ended.
    const one = { startsAt: 1000, endsAt: 2000, schedule: null };
    assert.deepEqual(occurrenceAt(one, 1500), { start: 1000, end: 2000 });
    assert.equal(occurrenceAt(one, 2000), null);
    // In maintenance: no deadline; after it, the deadline counts from its end.
    const m = {
      status: "up" as const,
      expectedIntervalMs: 100,
      gracePeriodMs: 10,
      lastHeartbeatAt: 0,
      resumedAt: null,
    };
    assert.equal(deadlineOf({ ...m, inMaintenance: true }), null);
    assert.equal(deadlineOf({ ...m, maintenanceEndedAt: 5000 }), 5110);
    // History: a bucket wholly covered is `maintenance` (no uptime figure), an incident inside it is no downtime.
    const H = 3600_000;
    const tl = {
      createdAt: 0,
      firstHeartbeatAt: 0,
      incidents: [{ start: 2 * H, end: 3 * H }],
      pauses: [],
      maintenances: [{ start: H, end: 3 * H }],
    };
    const b = historyBuckets(tl, H, 4, 4 * H - 1);
    assert.deepEqual(
      b.map((x) => [x.status, x.uptimePercentage, x.downtimeMs]),
      [
        ["up", 100, 0],
        ["maintenance", null, 0],
        ["maintenance", null, 0],
        ["up", 100, 0],
      ],
    );
  });
});

// After the others (whose windows and alert wake Temporal's deadline scan): with none of them left
// to wake it, only a worker's reconciler can apply a window the scan never heard of.
describe("maintenance windows: the Temporal reconciler", () => {
  it(
    "Temporal: a window whose due time the scan never heard of is applied by a worker's reconciler",
    { skip: process.env.VIGIL_TEST_TEMPORAL !== "1" && "Temporal runner only (npm test's pass 2)" },
    async () => {
      // A third node, reconciling every 300 ms, on the same database and scan.
      const node = await startTestApp(
        { ...GENEROUS_LIMITS, TEMPORAL_RECONCILE_MS: "300" },
        { databaseUrl: t.databaseUrl },
      );
      try {
        const a = await monitor(p, "missed-win");
        const later = Date.now() + HOUR;
        const cr = await t.rest.post(
          windows(),
          { title: "Heard of late", monitorIds: [a], startsAt: iso(later), endsAt: iso(later + HOUR) },
          { key: p.key },
        );
        assert.equal(cr.status, 201, cr.text);
        // The scans the monitor's and the window's wakes caused are over; then the window is moved
        // to now behind every node's back (no signal): the scan sleeps on the old due time.
        await new Promise((r) => setTimeout(r, 1500));
        const start = Date.now() - 1000;
        await t.app.deps.db.query("UPDATE maintenances SET starts_at = $2, occ_start = $2, due_at = $2 WHERE id = $1", [
          cr.body.data.id,
          new Date(start),
        ]);
        const m = await waitFor(
          async () => {
            const x = await getMonitor(a);
            return x.inMaintenance ? x : undefined;
          },
          WAIT_MS,
          "the window applied by the reconciler",
        );
        assert.equal(m.deadlineAt, null);
        const periods = await t.app.deps.db.query(
          "SELECT started_at FROM monitor_maintenances WHERE maintenance_id = $1",
          [cr.body.data.id],
        );
        assert.equal(periods.rows[0]?.started_at.toISOString(), iso(start), "started at its due time");
      } finally {
        await node.close();
      }
    },
  );
});
