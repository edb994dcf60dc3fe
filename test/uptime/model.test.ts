import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../../src/shared/time.js";
import { historyBuckets, windowFigures, type Timeline } from "../../src/uptime/figures.js";
import { MinHeap } from "../../src/uptime/heap.js";
import {
  applyHeartbeat,
  applyPause,
  applyResume,
  applySettings,
  deadlineOf,
  evaluateDeadline,
  needsWake,
  slugify,
  timeUp,
  type MonitorState,
} from "../../src/uptime/model.js";

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
    assert.deepEqual(evaluateDeadline(up(), 11_499), { overdue: false, nextCheckAt: 11_500 });
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
      assert.deepEqual(evaluateDeadline(s, 1e12), { overdue: false, nextCheckAt: null });
    }
  });
  it("unknown after a resume counts from the later of the last heartbeat and the resume", () => {
    assert.equal(deadlineOf(up({ status: "unknown", resumedAt: 20_000 })), 21_500);
    assert.equal(deadlineOf(up({ status: "unknown", resumedAt: 2_000 })), 11_500);
    assert.equal(deadlineOf(up({ status: "unknown", resumedAt: null })), null);
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
