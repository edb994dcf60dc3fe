import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { UptimeFeature } from "../../src/uptime/service.js";
import { waitFor } from "./util.js";
import { useProject } from "../helpers/use.js";

// Stats and history on a constructed timeline, with an injected clock, checked by hand:
//   T0      monitor created (interval 1 h, grace 0)
//   T0+1h   heartbeat, latency 100     -> up
//   T0+1h30 heartbeat, latency 200     (deadline T0+2h30)
//   T0+3h   the scheduler re-scans     -> down, incident from T0+2h30
//   T0+4h   heartbeat, latency 300     -> up, incident [2h30, 4h] = 90 min
//   T0+5h   pause (1 ms before the deadline); T0+6h resume       -> unknown, deadline T0+7h
//   T0+6h30 down heartbeat (no latency)-> down, incident from 6h30 (open)
//   now     T0+8h15
// Default stats window (24 h) clipped to the monitor's life: 8h15 - 1h paused = 435 min observed;
// downtime 90 + 105 = 195 min; uptime 240/435 = 55.172 %; 2 incidents; 4 heartbeats (3 up, 1 down);
// latency avg 200, min 100, max 300.

const H = 3_600_000;
const M = 60_000;
const T0 = Date.parse("2024-03-10T00:00:00.000Z");
let now = T0;
let id: string;
const at = (ms: number) => new Date(T0 + ms).toISOString();

const { t, p } = useProject({ UPTIME_RAW_RETENTION_DAYS: "1" }, { clock: () => new Date(now) }, async () => {
  const path = `/v1/projects/${p.projectId}`;
  const hb = (body: object) => t.rest.post(`${path}/heartbeats/timeline`, body, { key: p.key });
  id = (
    await t.rest.post(`${path}/monitors`, { name: "Timeline", expectedIntervalMs: H, gracePeriodMs: 0 }, { key: p.key })
  ).body.data.id;
  now = T0 + H;
  await hb({ latencyMs: 100 });
  now = T0 + 90 * M;
  await hb({ latencyMs: 200 });
  now = T0 + 3 * H;
  const uptime = t.app.features.find((f) => f.name === "uptime") as UptimeFeature;
  await uptime.runner.sweep(); // the embedded re-scan, or Temporal's reconciler pass
  await waitFor(
    async () => (await t.rest.get(`${path}/monitors/${id}/status`, { key: p.key })).body.data.status === "down",
    5000,
    "down",
  );
  now = T0 + 4 * H;
  await hb({ latencyMs: 300 });
  // 1 ms before the deadline (T0+5h): at the deadline itself the monitor is honestly overdue, and
  // whether a timer (armed at most rescanMs earlier) or the pause acts first would be a race.
  now = T0 + 5 * H - 1;
  await t.rest.post(`${path}/monitors/${id}/pause`, {}, { key: p.key });
  now = T0 + 6 * H;
  await t.rest.post(`${path}/monitors/${id}/resume`, {}, { key: p.key });
  now = T0 + 390 * M;
  await hb({ status: "down" });
  now = T0 + 495 * M;
});

const get = (q: string) => t.rest.get(`/v1/projects/${p.projectId}/monitors/${id}/${q}`, { key: p.key });

describe("stats and history on a constructed timeline", () => {
  it("incidents carry the deadline and the recovery", async () => {
    const inc = (await get("incidents")).body.data;
    assert.deepEqual(
      inc.map((i: any) => [i.startedAt, i.endedAt, i.durationMs, i.status]),
      [
        [at(390 * M), null, null, "open"],
        [at(150 * M), at(4 * H), 90 * M, "resolved"],
      ],
    );
  });

  it("default stats: the last 24 hours, clipped to the monitor's life, paused time left out", async () => {
    const r = await get("stats");
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, {
      uptimePercentage: 55.172,
      downtimeMs: 195 * M,
      incidentCount: 2,
      currentStatus: "down",
      lastHeartbeat: at(390 * M),
      totalHeartbeats: 4,
      successfulHeartbeats: 3,
      failedHeartbeats: 1,
      avgLatencyMs: 200,
      minLatencyMs: 100,
      maxLatencyMs: 300,
      from: new Date(now - 24 * H).toISOString(),
      to: new Date(now).toISOString(),
    });
  });

  it("period and from/to windows", async () => {
    // Last 2 h: [6h15, 8h15]: downtime 105 min of 120, 1 incident, 1 (down) heartbeat, no latency.
    const r = (await get("stats?period=2h")).body.data;
    assert.deepEqual(
      [
        r.uptimePercentage,
        r.downtimeMs,
        r.incidentCount,
        r.totalHeartbeats,
        r.failedHeartbeats,
        r.avgLatencyMs,
        r.minLatencyMs,
        r.maxLatencyMs,
      ],
      [12.5, 105 * M, 1, 1, 1, null, null, null],
    );
    // [2h, 5h30]: observed 3h (5h..5h30 paused); downtime 90 min -> 50 %.
    const w = (await get(`stats?from=${at(2 * H)}&to=${encodeURIComponent("2024-03-10T06:30:00+01:00")}`)).body.data;
    assert.deepEqual(
      [w.uptimePercentage, w.downtimeMs, w.incidentCount, w.totalHeartbeats, w.avgLatencyMs],
      [50, 90 * M, 1, 1, 300],
    );
    const d = (await get("stats?period=7d")).body.data;
    assert.equal(d.uptimePercentage, 55.172);
  });

  it("hourly history (24h) and daily history (default 90d) in the bucket shape", async () => {
    const h = (await get("history?window=24h")).body.data;
    assert.equal(h.window, "24h");
    assert.equal(h.buckets.length, 24);
    const b = (hour: number) => h.buckets.find((x: any) => x.start === at(hour * H));
    assert.deepEqual(h.buckets[0], {
      start: at(-15 * H),
      end: at(-14 * H),
      status: "unknown",
      uptimePercentage: null,
      downtimeMs: 0,
    });
    assert.deepEqual([b(0).status, b(1).status, b(1).uptimePercentage], ["unknown", "up", 100]);
    assert.deepEqual([b(2).status, b(2).downtimeMs, b(2).uptimePercentage], ["down", 30 * M, 50]);
    assert.deepEqual([b(3).status, b(3).uptimePercentage], ["down", 0]);
    assert.deepEqual([b(4).status, b(5).status, b(5).uptimePercentage], ["up", "paused", null]);
    assert.deepEqual([b(6).status, b(6).downtimeMs, b(7).uptimePercentage], ["down", 30 * M, 0]);
    assert.deepEqual(h.buckets[23], {
      start: at(8 * H),
      end: at(495 * M),
      status: "down",
      uptimePercentage: 0,
      downtimeMs: 15 * M,
    });

    const d = (await get("history")).body.data;
    assert.equal(d.window, "90d");
    assert.equal(d.buckets.length, 90);
    assert.deepEqual(d.buckets[89], {
      start: at(0),
      end: at(495 * M),
      status: "down",
      uptimePercentage: 55.172,
      downtimeMs: 195 * M,
    });
    assert.equal(d.buckets[88].status, "unknown");
    assert.equal((await get("history?window=7d")).body.data.buckets.length, 7);
  });

  it("heartbeat list with from/to, newest first", async () => {
    const r = (await get(`heartbeats?from=${at(75 * M)}&to=${at(5 * H)}`)).body.data;
    assert.deepEqual(
      r.map((x: any) => [x.at, x.latencyMs]),
      [
        [at(4 * H), 300],
        [at(90 * M), 200],
      ],
    );
    assert.equal((await get("heartbeats")).body.data.length, 4);
  });

  it("overview: status, slug, latest heartbeat and uptime over 24 h", async () => {
    const o = (await t.rest.get(`/v1/projects/${p.projectId}/monitors/overview`, { key: p.key })).body.data;
    assert.deepEqual(o, [
      {
        id,
        name: "Timeline",
        slug: "timeline",
        type: "heartbeat",
        status: "down",
        lastHeartbeatAt: at(390 * M),
        uptimePercentage24h: 55.172,
      },
    ]);
  });

  it("older windows read the hourly rollups once raw heartbeats are past their retention", async () => {
    now = T0 + 3 * 24 * H;
    // What the hourly pruning job does to raw rows older than the retention (1 day here).
    await t.app.deps.db.query("DELETE FROM heartbeats WHERE monitor_id = $1", [id]);
    const r = (await get(`stats?from=${at(0)}&to=${at(495 * M)}`)).body.data;
    assert.deepEqual(
      [r.totalHeartbeats, r.successfulHeartbeats, r.failedHeartbeats, r.avgLatencyMs, r.minLatencyMs, r.maxLatencyMs],
      [4, 3, 1, 200, 100, 300],
    );
    assert.equal(r.downtimeMs, 195 * M);
  });
});
