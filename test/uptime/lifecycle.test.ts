import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { recordNotices, sleep, waitFor } from "./util.js";
import { useProject } from "../helpers/use.js";

// The monitor lifecycle over the real port with real timers (intervals under a second).

let notices: ReturnType<typeof recordNotices>;
const { t, p } = useProject({}, {}, async () => {
  notices = recordNotices(t);
});

const base = () => `/v1/projects/${p.projectId}`;
const status = async (id: string) =>
  (await t.rest.get(`${base()}/monitors/${id}/status`, { key: p.key })).body.data.status;

describe("monitor lifecycle", () => {
  it("unknown -> up -> down at the deadline -> up, with incident timestamps and one notice each", async () => {
    const c = await t.rest.post(
      `${base()}/monitors`,
      { name: "Nightly Job", expectedIntervalMs: 600, gracePeriodMs: 400 },
      { key: p.key },
    );
    assert.equal(c.status, 201, c.text);
    const m = c.body.data;
    assert.equal(m.status, "unknown");
    assert.equal(m.slug, "nightly-job");
    assert.equal(m.timeUp, 0);
    assert.equal(m.deadlineAt, null);

    const hb = await t.rest.post(`${base()}/heartbeats/nightly-job`, { latencyMs: 12 }, { key: p.key });
    assert.equal(hb.status, 200, hb.text);
    assert.equal(hb.body.data.accepted, true);
    assert.equal(hb.body.data.statusChanged, true);
    assert.equal(hb.body.data.monitor.id, m.id);
    assert.equal(hb.body.data.monitor.status, "up");
    const last = Date.parse(hb.body.data.monitor.lastHeartbeatAt);
    const deadline = last + 1000; // room for the second heartbeat on a loaded machine (pass 2 runs two files at once)
    assert.equal(hb.body.data.monitor.deadlineAt, new Date(deadline).toISOString());

    // A second heartbeat moves the deadline; no status change.
    const hb2 = await t.rest.post(`${base()}/heartbeats/nightly-job`, {}, { key: p.key });
    assert.equal(hb2.body.data.statusChanged, false);
    const deadline2 = Date.parse(hb2.body.data.monitor.lastHeartbeatAt) + 1000;

    // 15 s: in Temporal mode (pass 2) this first test also waits for the node's workers to start.
    await waitFor(async () => (await status(m.id)) === "down", 15_000, "monitor down");
    const inc = (await t.rest.get(`${base()}/monitors/${m.id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc.length, 1);
    assert.equal(inc[0].status, "open");
    assert.equal(inc[0].startedAt, new Date(deadline2).toISOString(), "the incident starts at the deadline itself");
    assert.equal(inc[0].endedAt, null);
    assert.equal(inc[0].durationMs, null);
    const list = (await t.rest.get(`${base()}/monitors`, { key: p.key })).body.data;
    assert.equal(list.find((x: any) => x.id === m.id).timeUp, 0);

    await sleep(50);
    const back = await t.rest.post(`${base()}/heartbeats/nightly-job`, {}, { key: p.key });
    assert.equal(back.body.data.statusChanged, true);
    assert.equal(back.body.data.monitor.status, "up");
    const endedAt = back.body.data.monitor.lastHeartbeatAt;
    const resolved = (await t.rest.get(`${base()}/monitors/${m.id}/incidents`, { key: p.key })).body.data[0];
    assert.equal(resolved.status, "resolved");
    assert.equal(resolved.endedAt, endedAt);
    assert.equal(resolved.durationMs, Date.parse(endedAt) - deadline2);

    const mine = notices.filter((n) => (n.payload as any).monitor.id === m.id);
    assert.deepEqual(
      mine.map((n) => n.type),
      ["incident.started", "incident.recovered"],
    );
    assert.deepEqual(
      mine.map((n) => n.dedupeKey),
      [`${resolved.id}:started`, `${resolved.id}:recovered`],
    );
    assert.equal((mine[0].payload as any).incident.startedAt, resolved.startedAt);
    assert.equal(mine[0].projectId, p.projectId);

    // timeUp counts from the recovery.
    await sleep(30);
    const g = (await t.rest.get(`${base()}/monitors/${m.id}`, { key: p.key })).body.data;
    assert.ok(g.timeUp >= 30 && g.timeUp < 60_000, `timeUp ${g.timeUp}`);
    await t.rest.post(`${base()}/monitors/${m.id}/pause`, {}, { key: p.key });
  });

  it("a down heartbeat takes the monitor down at once and opens an incident at that heartbeat", async () => {
    const up = await t.rest.post(
      `${base()}/heartbeats/db-backup`,
      { expectedIntervalMs: 60_000, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.equal(up.body.data.statusChanged, true);
    assert.equal(up.body.data.monitor.type, "heartbeat");
    assert.equal(up.body.data.monitor.name, "db-backup");
    assert.equal(up.body.data.monitor.expectedIntervalMs, 60_000);
    const down = await t.rest.post(
      `${base()}/heartbeats/db-backup`,
      { status: "down", latencyMs: 900, metadata: { error: "disk full" } },
      { key: p.key },
    );
    assert.equal(down.status, 200, down.text);
    assert.equal(down.body.data.statusChanged, true);
    assert.equal(down.body.data.monitor.status, "down");
    assert.equal(down.body.data.monitor.deadlineAt, null);
    const id = down.body.data.monitor.id;
    const inc = (await t.rest.get(`${base()}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc.length, 1);
    assert.equal(inc[0].startedAt, down.body.data.monitor.lastHeartbeatAt);
    // Another down heartbeat: still one incident.
    const again = await t.rest.post(`${base()}/heartbeats/db-backup`, { status: "down" }, { key: p.key });
    assert.equal(again.body.data.statusChanged, false);
    assert.equal((await t.rest.get(`${base()}/monitors/${id}/incidents`, { key: p.key })).body.data.length, 1);
    const hbs = (await t.rest.get(`${base()}/monitors/${id}/heartbeats`, { key: p.key })).body.data;
    assert.equal(hbs.length, 3);
    assert.deepEqual(hbs[1], {
      id: hbs[1].id,
      at: hbs[1].at,
      metadata: { error: "disk full" },
      status: "down",
      latencyMs: 900,
    });
    assert.equal(
      notices.filter((n) => (n.payload as any).monitor.id === id && n.type === "incident.started").length,
      1,
    );
  });

  it("pause resolves the open incident without a notice; heartbeats while paused change nothing; resume gives unknown and re-arms", async () => {
    await t.rest.post(`${base()}/heartbeats/worker-1`, { expectedIntervalMs: 300, gracePeriodMs: 100 }, { key: p.key });
    const down = await t.rest.post(`${base()}/heartbeats/worker-1`, { status: "down" }, { key: p.key });
    const id = down.body.data.monitor.id;
    const pause = await t.rest.post(`${base()}/monitors/${id}/pause`, {}, { key: p.key });
    assert.equal(pause.status, 200, pause.text);
    assert.equal(pause.body.data.status, "paused");
    assert.equal(pause.body.data.deadlineAt, null);
    const inc = (await t.rest.get(`${base()}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc[0].status, "resolved");
    assert.equal(inc[0].endedAt, pause.body.data.updatedAt);
    assert.equal(
      notices.filter((n) => (n.payload as any).monitor.id === id && n.type === "incident.recovered").length,
      0,
      "no recovery notice on pause",
    );

    const hb = await t.rest.post(`${base()}/heartbeats/worker-1`, {}, { key: p.key });
    assert.equal(hb.body.data.statusChanged, false);
    assert.equal(hb.body.data.monitor.status, "paused");
    assert.equal(hb.body.data.monitor.deadlineAt, null);
    await sleep(500); // well past interval + grace: no deadline applies while paused
    assert.equal(await status(id), "paused");
    assert.equal(
      (await t.rest.post(`${base()}/monitors/${id}/pause`, {}, { key: p.key })).body.data.status,
      "paused",
      "pause is idempotent",
    );

    const resume = await t.rest.post(`${base()}/monitors/${id}/resume`, {}, { key: p.key });
    assert.equal(resume.body.data.status, "unknown");
    const deadline =
      Math.max(Date.parse(resume.body.data.lastHeartbeatAt), Date.parse(resume.body.data.updatedAt)) + 400;
    assert.equal(resume.body.data.deadlineAt, new Date(deadline).toISOString());
    await waitFor(async () => (await status(id)) === "down", 15_000, "resumed monitor down");
    const after = (await t.rest.get(`${base()}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(after.length, 2);
    assert.equal(after[0].startedAt, new Date(deadline).toISOString());

    // A monitor that never had a heartbeat stays unknown after a resume.
    const fresh = (
      await t.rest.post(
        `${base()}/monitors`,
        { name: "Never", expectedIntervalMs: 100, gracePeriodMs: 0 },
        { key: p.key },
      )
    ).body.data;
    await t.rest.post(`${base()}/monitors/${fresh.id}/pause`, {}, { key: p.key });
    const r2 = await t.rest.post(`${base()}/monitors/${fresh.id}/resume`, {}, { key: p.key });
    assert.equal(r2.body.data.deadlineAt, null);
    await sleep(300);
    assert.equal(await status(fresh.id), "unknown");
  });

  it("patch changes only present fields and moves the deadline; delete removes the monitor and its data", async () => {
    const hb = await t.rest.post(
      `${base()}/heartbeats/patch-me`,
      { expectedIntervalMs: 60_000, gracePeriodMs: 60_000 },
      { key: p.key },
    );
    const id = hb.body.data.monitor.id;
    const last = Date.parse(hb.body.data.monitor.lastHeartbeatAt);
    const r = await t.rest.patch(`${base()}/monitors/${id}`, { name: "Patched" }, { key: p.key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      [r.body.data.name, r.body.data.slug, r.body.data.expectedIntervalMs, r.body.data.gracePeriodMs],
      ["Patched", "patch-me", 60_000, 60_000],
    );
    // Shortening the interval brings the deadline forward: the monitor goes down at the new deadline.
    const s = await t.rest.patch(
      `${base()}/monitors/${id}`,
      { expectedIntervalMs: 200, gracePeriodMs: 0 },
      { key: p.key },
    );
    assert.equal(s.body.data.name, "Patched");
    assert.equal(s.body.data.deadlineAt, new Date(last + 200).toISOString());
    await waitFor(async () => (await status(id)) === "down", 5000, "down after patch");
    const inc = (await t.rest.get(`${base()}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc[0].startedAt, new Date(last + 200).toISOString());

    const d = await t.rest.del(`${base()}/monitors/${id}`, { key: p.key });
    assert.equal(d.status, 204);
    assert.equal(d.text, "");
    assert.equal((await t.rest.get(`${base()}/monitors/${id}`, { key: p.key })).status, 404);
    assert.equal((await t.rest.del(`${base()}/monitors/${id}`, { key: p.key })).status, 404);
    const left = await t.app.deps.db.query(
      "SELECT (SELECT count(*) FROM heartbeats WHERE monitor_id = $1) + (SELECT count(*) FROM incidents WHERE monitor_id = $1) + (SELECT count(*) FROM heartbeat_rollups WHERE monitor_id = $1) AS n",
      [id],
    );
    assert.equal(left.rows[0].n, 0);
  });

  it("a late heartbeat after an unnoticed deadline records the missed period", async () => {
    // The timer is slower than this heartbeat only in races; the outcome is the same either way.
    const hb = await t.rest.post(
      `${base()}/heartbeats/late`,
      { expectedIntervalMs: 100, gracePeriodMs: 0 },
      { key: p.key },
    );
    const id = hb.body.data.monitor.id;
    const deadline = Date.parse(hb.body.data.monitor.lastHeartbeatAt) + 100;
    await waitFor(async () => (await status(id)) === "down", 5000, "down");
    await t.rest.post(`${base()}/heartbeats/late`, {}, { key: p.key });
    const inc = (await t.rest.get(`${base()}/monitors/${id}/incidents`, { key: p.key })).body.data;
    assert.equal(inc.length, 1);
    assert.equal(inc[0].startedAt, new Date(deadline).toISOString());
    assert.equal(inc[0].status, "resolved");
    await t.rest.post(`${base()}/monitors/${id}/pause`, {}, { key: p.key });
  });
});
