import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../../src/shared/time.js";
import { historyBuckets, windowFigures, type Timeline } from "../../src/uptime/figures.js";
import { MinHeap } from "../../src/shared/heap.js";
import {
  applyHeartbeat,
  applyPause,
  applyResume,
  applyFailure,
  applyRunStart,
  applyRunTimeouts,
  applySettings,
  deadlineOf,
  dueAt,
  evaluateDeadline,
  pairRun,
  runIncidentDescription,
  runOutcome,
  needsWake,
  slugify,
  timeUp,
  type MonitorState,
} from "../../src/uptime/model.js";
import { parseSchedule, type Schedule } from "../../src/uptime/schedule.js";

// The pure decision functions shared by the heartbeat path and both deadline runners.

const up = (over: Partial<MonitorState> = {}): MonitorState => ({
  status: "up",
  expectedIntervalMs: 1000,
  gracePeriodMs: 500,
  lastHeartbeatAt: 10_000,
  firstHeartbeatAt: 5_000,
  resumedAt: null,
  upSince: 5_000,
  deadlineAt: 11_500,
  ...over,
});

describe("evaluateDeadline: is this monitor overdue, and since when", () => {
  it("up: deadline = last heartbeat + interval + grace; overdue from the deadline itself", () => {
    assert.equal(deadlineOf(up()), 11_500);
    assert.deepEqual(evaluateDeadline(up(), 11_499), { overdue: false, runTimeout: null, nextCheckAt: 11_500 });
    assert.deepEqual(evaluateDeadline(up(), 11_500), { overdue: true, since: 11_500 });
    assert.deepEqual(
      evaluateDeadline(up(), 99_999),
      { overdue: true, since: 11_500 },
      "acted on late (after a restart): still since the deadline",
    );
  });
  it("no deadline for down, paused, and never-heartbeated monitors", () => {
    for (const s of [
      up({ status: "down" }),
      up({ status: "paused" }),
      up({ status: "unknown", lastHeartbeatAt: null, firstHeartbeatAt: null, resumedAt: 1 }),
    ]) {
      assert.deepEqual(evaluateDeadline(s, 1e12), { overdue: false, runTimeout: null, nextCheckAt: null });
    }
  });
  it("unknown after a resume counts from the later of the last heartbeat and the resume", () => {
    assert.equal(deadlineOf(up({ status: "unknown", resumedAt: 20_000 })), 21_500);
    assert.equal(deadlineOf(up({ status: "unknown", resumedAt: 2_000 })), 11_500);
    assert.equal(deadlineOf(up({ status: "unknown", resumedAt: null })), null);
  });
});

describe("deadlineOf for a scheduled monitor: the first scheduled time after the last run, plus grace", () => {
  const sched = (cron: string, timezone: string): Schedule => {
    const r = parseSchedule({ cron, timezone });
    assert.ok(r.ok);
    return r.schedule;
  };
  const t = (s: string) => Date.parse(s);
  const GRACE = 5 * 60_000;
  // Daily at 02:30 Berlin time; 2026-03-29 skips 02:00-03:00 (spring), 2026-10-25 repeats it.
  const berlin = sched("30 2 * * *", "Europe/Berlin");
  const scheduled = (over: Partial<MonitorState>): MonitorState =>
    up({ expectedIntervalMs: 1000, gracePeriodMs: GRACE, schedule: berlin, ...over });

  it("counts from a success without a start (its arrival); expectedIntervalMs is not used", () => {
    const m = scheduled({ lastHeartbeatAt: t("2026-03-27T01:40:00Z") }); // 02:40 CET on the 27th
    assert.equal(deadlineOf(m), t("2026-03-28T01:30:00Z") + GRACE);
    assert.equal(deadlineOf({ ...m, expectedIntervalMs: 365 * 86_400_000 }), t("2026-03-28T01:30:00Z") + GRACE);
  });
  it("counts from the start of the last successful run when it has one", () => {
    // Started 02:30:02 CET, ended 03:10: the next run is the next day's 02:30 either way...
    const m = scheduled({ lastHeartbeatAt: t("2026-03-27T02:10:00Z"), lastSuccessStartAt: t("2026-03-27T01:30:02Z") });
    assert.equal(deadlineOf(m), t("2026-03-28T01:30:00Z") + GRACE);
    // ...but an hourly job whose run took 70 minutes is late for the run after its start.
    const hourly = sched("0 * * * *", "UTC");
    const long = scheduled({ schedule: hourly, lastHeartbeatAt: t("2026-03-27T11:10:00Z") });
    assert.equal(deadlineOf(long), t("2026-03-27T12:00:00Z") + GRACE, "a success without a start: its arrival");
    assert.equal(
      deadlineOf({ ...long, lastSuccessStartAt: t("2026-03-27T10:00:01Z") }),
      t("2026-03-27T11:00:00Z") + GRACE,
    );
  });
  it("DST: the skipped 02:30 is due at 03:00 CEST; the repeated one at its first occurrence", () => {
    assert.equal(
      deadlineOf(scheduled({ lastHeartbeatAt: t("2026-03-28T01:31:00Z") })),
      t("2026-03-29T01:00:00Z") + GRACE,
    );
    assert.equal(
      deadlineOf(scheduled({ lastHeartbeatAt: t("2026-10-24T00:31:00Z") })),
      t("2026-10-25T00:30:00Z") + GRACE,
    );
    // A success in the second pass of the repeated hour: the next run is the next day's.
    assert.equal(
      deadlineOf(scheduled({ lastHeartbeatAt: t("2026-10-25T01:31:00Z") })),
      t("2026-10-26T01:30:00Z") + GRACE,
    );
  });
  it("after a resume: from the later of the last run and the resume; none when down, paused or never run", () => {
    const m = scheduled({
      status: "unknown",
      lastHeartbeatAt: t("2026-03-20T01:31:00Z"),
      resumedAt: t("2026-03-25T12:00:00Z"),
    });
    assert.equal(deadlineOf(m), t("2026-03-26T01:30:00Z") + GRACE);
    assert.equal(deadlineOf({ ...m, resumedAt: t("2026-03-01T00:00:00Z") }), t("2026-03-21T01:30:00Z") + GRACE);
    assert.equal(deadlineOf({ ...m, resumedAt: null }), null);
    for (const status of ["down", "paused"] as const) assert.equal(deadlineOf({ ...m, status }), null);
    assert.equal(deadlineOf(scheduled({ status: "unknown", lastHeartbeatAt: null, resumedAt: 1 })), null);
  });
  it("heartbeats, resume and settings use the same deadline; a null schedule goes back to the interval", () => {
    const m = scheduled({ lastHeartbeatAt: t("2026-03-27T01:40:00Z"), deadlineAt: null });
    const hb = applyHeartbeat(m, { at: t("2026-03-28T01:31:00Z"), status: "up" });
    assert.deepEqual([hb.openIncidentAt, hb.next.deadlineAt], [null, t("2026-03-29T01:00:00Z") + GRACE]);
    const late = applyHeartbeat(m, { at: t("2026-03-28T01:40:00Z"), status: "up" });
    assert.deepEqual(
      [late.openIncidentAt, late.resolveIncidentAt],
      [t("2026-03-28T01:35:00Z"), t("2026-03-28T01:40:00Z")],
      "missed 02:30 + 5 min: down from the deadline",
    );
    assert.equal(applyResume(m, t("2026-04-01T12:00:00Z")).deadlineAt, t("2026-04-02T00:30:00Z") + GRACE);
    const cleared = applySettings(m, { schedule: null });
    assert.deepEqual([cleared.schedule, cleared.deadlineAt], [null, t("2026-03-27T01:40:00Z") + 1000 + GRACE]);
    const set = applySettings(up(), { schedule: sched("0 0 * * *", "UTC"), gracePeriodMs: 0 });
    assert.equal(set.deadlineAt, 86_400_000, "the first midnight after 1970-01-01T00:00:10Z");
    assert.equal(applySettings(m, { gracePeriodMs: 0 }).schedule, berlin, "kept when not named");
  });
});

describe("transitions", () => {
  it("heartbeats: unknown -> up, up -> up keeps upSince, down -> up resolves, down heartbeat opens", () => {
    const fresh: MonitorState = {
      ...up(),
      status: "unknown",
      lastHeartbeatAt: null,
      firstHeartbeatAt: null,
      upSince: null,
      deadlineAt: null,
    };
    const a = applyHeartbeat(fresh, { at: 1000, status: "up" });
    assert.deepEqual(
      [a.next.status, a.statusChanged, a.next.upSince, a.next.deadlineAt, a.next.firstHeartbeatAt],
      ["up", true, 1000, 2500, 1000],
    );
    const b = applyHeartbeat(a.next, { at: 2000, status: "up", expectedIntervalMs: 3000 });
    assert.deepEqual(
      [b.statusChanged, b.next.upSince, b.next.deadlineAt, b.openIncidentAt, b.resolveIncidentAt],
      [false, 1000, 5500, null, null],
    );
    const c = applyHeartbeat(b.next, { at: 2100, status: "down" });
    assert.deepEqual(
      [c.next.status, c.statusChanged, c.openIncidentAt, c.next.deadlineAt, c.next.upSince],
      ["down", true, 2100, null, null],
    );
    const d = applyHeartbeat(c.next, { at: 2200, status: "down" });
    assert.deepEqual([d.statusChanged, d.openIncidentAt], [false, null]);
    const e = applyHeartbeat(d.next, { at: 2300, status: "up" });
    assert.deepEqual([e.next.status, e.statusChanged, e.resolveIncidentAt, e.next.upSince], ["up", true, 2300, 2300]);
  });
  it("a heartbeat after an unnoticed deadline records the down period [deadline, heartbeat]", () => {
    const r = applyHeartbeat(up(), { at: 12_000, status: "up" });
    assert.deepEqual(
      [r.openIncidentAt, r.resolveIncidentAt, r.statusChanged, r.next.upSince],
      [11_500, 12_000, true, 12_000],
    );
    const d = applyHeartbeat(up(), { at: 12_000, status: "down" });
    assert.deepEqual([d.openIncidentAt, d.resolveIncidentAt, d.next.status], [11_500, null, "down"]);
  });
  it("paused: heartbeats are recorded but change no status; pause resolves; resume gives unknown", () => {
    const p = applyPause(up({ status: "down", deadlineAt: null }), 50_000);
    assert.deepEqual([p.next.status, p.next.deadlineAt, p.resolveIncidentAt], ["paused", null, 50_000]);
    assert.deepEqual(applyPause(up(), 11_499), {
      next: { ...up(), status: "paused", upSince: null, deadlineAt: null },
      openIncidentAt: null,
      resolveIncidentAt: null,
    });
    // Paused after a deadline no runner acted on: down from the deadline until the pause.
    const late = applyPause(up(), 50_000);
    assert.deepEqual([late.openIncidentAt, late.resolveIncidentAt, late.next.status], [11_500, 50_000, "paused"]);
    const h = applyHeartbeat(p.next, { at: 60_000, status: "down" });
    assert.deepEqual(
      [h.next.status, h.statusChanged, h.openIncidentAt, h.next.deadlineAt, h.next.lastHeartbeatAt],
      ["paused", false, null, null, 60_000],
    );
    const r = applyResume(h.next, 70_000);
    assert.deepEqual([r.status, r.deadlineAt], ["unknown", 71_500]);
  });
  it("settings move the deadline; wake only for new or earlier deadlines", () => {
    assert.equal(applySettings(up(), { gracePeriodMs: 0 }).deadlineAt, 11_000);
    assert.equal(applySettings(up({ status: "down", deadlineAt: null }), { gracePeriodMs: 0 }).deadlineAt, null);
    assert.deepEqual(
      [needsWake(null, 5), needsWake(10, 5), needsWake(5, 10), needsWake(5, null)],
      [true, true, false, false],
    );
  });
  it("timeUp and slugs", () => {
    assert.equal(timeUp(up(), 8_000), 3_000);
    assert.equal(timeUp(up({ status: "down" }), 8_000), 0);
    assert.deepEqual(
      [slugify("Nightly Job #1"), slugify("  Ünïcode  "), slugify("!!!")],
      ["nightly-job-1", "unicode", "monitor"],
    );
  });
});

describe("runs: pairing, timeouts and failure tolerance (issue #32)", () => {
  const run = (id: string, startedAt: number, runId: string | null = null) => ({ id, runId, startedAt });

  it("pairs an end with its runId, or without one with the latest start that has none", () => {
    const open = [run("a", 100, "x"), run("b", 200), run("c", 300), run("d", 400, "y")];
    assert.equal(pairRun(open, "x"), 0);
    assert.equal(pairRun(open, "y"), 3);
    assert.equal(pairRun(open, null), 2, "the latest start without a runId");
    assert.equal(pairRun(open, "z"), -1, "an unknown runId: an end without a start");
    assert.equal(pairRun([], null), -1);
  });

  it("a start moves neither the status nor the deadline's base; with maxRuntimeMs the due time is its timeout", () => {
    const m = up({ maxRuntimeMs: 300 });
    const s = applyRunStart(m, [], run("r", 10_100));
    assert.equal(s.status, "up");
    assert.equal(s.lastHeartbeatAt, 10_000);
    assert.equal(s.runningSince, 10_100);
    assert.equal(s.deadlineAt, 10_400, "start + maxRuntimeMs is before the deadline (11,500)");
    assert.equal(dueAt({ ...s, maxRuntimeMs: null }), 11_500, "no limit: the deadline alone");
    assert.deepEqual(evaluateDeadline(s, 10_399), { overdue: false, runTimeout: null, nextCheckAt: 10_400 });
    assert.deepEqual(evaluateDeadline(s, 10_400), { overdue: false, runTimeout: 10_400 });
    // The deadline comes first when it is earlier than the timeout.
    const late = applyRunStart(m, [], run("r", 11_400));
    assert.deepEqual(evaluateDeadline(late, 11_800), { overdue: true, since: 11_500 });
    assert.equal(dueAt({ ...s, status: "paused" }), null, "a paused monitor is not watched");
  });

  it("a run timed out is a failure at start + maxRuntimeMs, oldest first; the others keep running", () => {
    const m = up({ maxRuntimeMs: 300, runningSince: 10_100 });
    const open = [run("b", 10_200), run("a", 10_100), run("c", 10_900)];
    const r = applyRunTimeouts(m, open, 10_550);
    assert.deepEqual(
      r.timeouts.map((x) => [x.run.id, x.at, x.tookDown]),
      [
        ["a", 10_400, true],
        ["b", 10_500, false],
      ],
    );
    assert.equal(r.next.status, "down");
    assert.equal(r.next.consecutiveFailures, 2);
    assert.deepEqual(
      r.open.map((x) => x.id),
      ["c"],
    );
    assert.equal(r.next.runningSince, 10_900);
    assert.equal(r.next.deadlineAt, 11_200, "down: only c's timeout remains due");
    assert.equal(applyRunTimeouts({ ...m, maxRuntimeMs: null }, open, 99_999).timeouts.length, 0);
    assert.equal(applyRunTimeouts(m, open, 10_399).timeouts.length, 0);
  });

  it("failureTolerance: down at the (N+1)-th consecutive failure, a success resets the count", () => {
    let m = up({ failureTolerance: 2, consecutiveFailures: 0 });
    const a = applyFailure(m, 10_100);
    assert.equal(a.next.status, "up");
    assert.equal(a.openIncidentAt, null);
    const b = applyFailure(a.next, 10_200);
    assert.equal(b.next.status, "up");
    const c = applyFailure(b.next, 10_300);
    assert.equal(c.next.status, "down");
    assert.equal(c.openIncidentAt, 10_300, "the incident starts at the failure that took it down");
    // Through the heartbeat path: a down heartbeat is a failure; an up one resets.
    m = up({ failureTolerance: 1, consecutiveFailures: 0 });
    const h1 = applyHeartbeat(m, { at: 10_100, status: "down" });
    assert.equal(h1.next.status, "up");
    assert.equal(h1.openIncidentAt, null);
    assert.equal(h1.next.consecutiveFailures, 1);
    const ok = applyHeartbeat(h1.next, { at: 10_200, status: "up" });
    assert.equal(ok.next.consecutiveFailures, 0);
    const h2 = applyHeartbeat(ok.next, { at: 10_300, status: "down" });
    assert.equal(h2.next.status, "up", "the count restarted after the success");
    const h3 = applyHeartbeat(h2.next, { at: 10_400, status: "down" });
    assert.equal(h3.next.status, "down");
    assert.equal(h3.openIncidentAt, 10_400);
    // Default tolerance 0: the first failure takes it down (today's down heartbeat).
    assert.equal(applyHeartbeat(up(), { at: 10_100, status: "down" }).openIncidentAt, 10_100);
  });

  it("a missed deadline takes the monitor down whatever the tolerance", () => {
    const m = up({ failureTolerance: 5 });
    assert.deepEqual(evaluateDeadline(m, 11_500), { overdue: true, since: 11_500 });
  });

  it("a success counts a schedule from its run's start", () => {
    const schedule = { cron: "*/5 * * * *", timezone: "UTC" };
    const at = Date.parse("2026-03-01T10:06:00Z");
    const start = Date.parse("2026-03-01T10:04:00Z");
    const out = applyHeartbeat(up({ schedule, gracePeriodMs: 0 }), { at, status: "up", startedAt: start });
    assert.equal(out.next.lastSuccessStartAt, start);
    assert.equal(out.next.deadlineAt, Date.parse("2026-03-01T10:05:00Z"));
    const noStart = applyHeartbeat(up({ schedule, gracePeriodMs: 0 }), { at, status: "up" });
    assert.equal(noStart.next.deadlineAt, Date.parse("2026-03-01T10:10:00Z"), "without a start: from its arrival");
  });

  it("setting an interval clears the schedule, and a schedule given keeps the interval unused", () => {
    const schedule = { cron: "0 3 * * *", timezone: "Europe/Berlin" };
    const s = applySettings(up(), { schedule });
    assert.deepEqual(s.schedule, schedule);
    assert.equal(applySettings(s, { expectedIntervalMs: 5000 }).schedule, null);
    assert.deepEqual(applySettings(s, { gracePeriodMs: 5000 }).schedule, schedule);
  });

  it("outcomes and incident descriptions", () => {
    assert.equal(runOutcome({ kind: "exit", code: 0 }), "up");
    assert.equal(runOutcome({ kind: "exit", code: 2 }), "down");
    assert.equal(runOutcome({ kind: "fail" }), "down");
    assert.equal(runOutcome({ kind: "success" }), "up");
    assert.equal(
      runIncidentDescription({ id: "run_1", runId: "nightly-7" }, { kind: "failed", exitCode: 3 }),
      'Run "nightly-7" (run_1) failed with exit code 3.',
    );
    assert.equal(
      runIncidentDescription({ id: "run_1", runId: null }, { kind: "failed", exitCode: null }),
      "Run run_1 failed.",
    );
    assert.equal(
      runIncidentDescription({ id: "run_1", runId: null }, { kind: "timed_out", maxRuntimeMs: 5000 }),
      "Run run_1 timed out: still running 5000 ms after its start.",
    );
  });
});

describe("figures on a constructed timeline", () => {
  // Created at 0; first heartbeat at 1h; down 2h..2h30m; paused 5h..6h; open incident since 9h; now 10h.
  const tl: Timeline = {
    createdAt: 0,
    firstHeartbeatAt: HOUR,
    incidents: [
      { start: 2 * HOUR, end: 2.5 * HOUR },
      { start: 9 * HOUR, end: null },
    ],
    pauses: [{ start: 5 * HOUR, end: 6 * HOUR }],
  };
  const now = 10 * HOUR;
  it("window figures clip to the window and the monitor's life and leave out paused time", () => {
    const all = windowFigures(tl, -5 * HOUR, now, now);
    assert.deepEqual(all, { observedMs: 9 * HOUR, downtimeMs: 1.5 * HOUR, incidentCount: 2, uptimePercentage: 83.333 });
    const part = windowFigures(tl, 2.25 * HOUR, 4 * HOUR, now);
    assert.deepEqual(part, {
      observedMs: 1.75 * HOUR,
      downtimeMs: 0.25 * HOUR,
      incidentCount: 1,
      uptimePercentage: 85.714,
    });
    assert.deepEqual(windowFigures(tl, 3 * HOUR, 4 * HOUR, now).incidentCount, 0);
    // Nothing observed (a window after now), or no heartbeat before its end: no figure, not 100.
    assert.equal(windowFigures(tl, 20 * HOUR, 30 * HOUR, now).uptimePercentage, null);
    assert.equal(windowFigures(tl, 0, HOUR, now).uptimePercentage, null);
    assert.equal(windowFigures({ ...tl, firstHeartbeatAt: null }, 0, now, now).uptimePercentage, null);
  });
  it("hourly buckets: unknown before the first heartbeat, down with downtime, paused, up", () => {
    const b = historyBuckets(tl, HOUR, 12, now + 30 * 60_000);
    assert.equal(b.length, 12);
    assert.equal(b[11].end, now + 30 * 60_000, "the last bucket ends now");
    const byHour = (h: number) => b.find((x) => x.start === h * HOUR)!;
    assert.deepEqual([byHour(0).status, byHour(0).uptimePercentage], ["unknown", null]);
    assert.deepEqual([byHour(1).status, byHour(1).uptimePercentage], ["up", 100]);
    assert.deepEqual([byHour(2).status, byHour(2).downtimeMs, byHour(2).uptimePercentage], ["down", 30 * 60_000, 50]);
    assert.deepEqual([byHour(5).status, byHour(5).uptimePercentage], ["paused", null]);
    assert.deepEqual([byHour(9).status, byHour(9).downtimeMs], ["down", HOUR]);
    assert.deepEqual([byHour(10).status, byHour(10).downtimeMs], ["down", 30 * 60_000]);
    assert.equal(b[0].start, -1 * HOUR);
    assert.equal(b[0].status, "unknown", "before the monitor existed");
  });
  it("daily buckets are aligned to UTC days", () => {
    const b = historyBuckets(tl, DAY, 7, now);
    assert.equal(b.length, 7);
    assert.ok(b.every((x) => x.start % DAY === 0));
    assert.equal(b[6].status, "down");
  });
});

describe("min-heap", () => {
  it("pops in time order", () => {
    const h = new MinHeap();
    const xs = Array.from({ length: 500 }, (_, i) => ({ at: (i * 7919) % 503, id: String(i) }));
    for (const x of xs) h.push(x);
    const out: number[] = [];
    for (let e = h.pop(); e; e = h.pop()) out.push(e.at);
    assert.deepEqual(
      out,
      xs.map((x) => x.at).sort((a, b) => a - b),
    );
  });
});
