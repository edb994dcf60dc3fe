import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import { errorBody } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";
import { Receiver } from "../webhooks/receiver.js";
import { recordNotices, waitFor } from "./util.js";

// Cron jobs over the real port (issue #32, decisions.md "Cron jobs and ping keys"): schedules on
// monitors, run signals paired into runs, maxRuntimeMs, failureTolerance, incidents naming the run.
// Real timers; with `npm test -- --temporal` the same file runs with Temporal as the runner. The
// clock is the system's plus an offset the first test moves forward once (to just before a minute
// boundary, so an every-minute schedule's deadline comes within seconds).

let offsetMs = 0;
let notices: ReturnType<typeof recordNotices>;
let rx: Receiver;
const { t, p } = useProject(
  // A local webhook receiver, and status pages rebuilt every 50 ms (the status-page test below).
  { WEBHOOK_ALLOW_PRIVATE: "true", STATUS_PAGE_REFRESH_MS: "50" },
  { clock: () => new Date(Date.now() + offsetMs) },
  async () => {
    notices = recordNotices(t);
    rx = await Receiver.start();
  },
);
// Registered after the app's hooks: the receiver closes once the app has.
after(() => rx?.close());

const base = () => `/v1/projects/${p.projectId}`;
const post = (path: string, body: unknown = {}) => t.rest.post(`${base()}${path}`, body, { key: p.key });
const get = (path: string) => t.rest.get(`${base()}${path}`, { key: p.key });
const status = async (id: string) => (await get(`/monitors/${id}/status`)).body.data.status;
const runs = async (id: string) => (await get(`/monitors/${id}/runs`)).body.data;
const incidents = async (id: string) => (await get(`/monitors/${id}/incidents`)).body.data;

// First in the file: the clock moves forward while no other monitor has a timer armed (a timer set
// before a clock step waits for the re-scan, as in production after a step of the wall clock).
describe("a schedule's deadline", () => {
  it("a scheduled monitor goes down at the first scheduled time after its last success plus grace, in either runner", async () => {
    // Move the clock to 2.5 s before a minute boundary B: an every-minute schedule's deadline is B + grace.
    const now = Date.now();
    const b = Math.ceil((now + offsetMs) / 60_000) * 60_000 + 60_000;
    offsetMs = b - 2500 - now;
    const hb = await post("/heartbeats/every-minute", { schedule: { cron: "* * * * *" }, gracePeriodMs: 500 });
    assert.equal(hb.status, 200, hb.text);
    const m = hb.body.data.monitor;
    assert.equal(m.status, "up");
    assert.equal(m.deadlineAt, new Date(b + 500).toISOString());
    // 30 s: in Temporal mode (pass 2) this first test also waits for the node's workers to start.
    await waitFor(async () => (await status(m.id)) === "down", 30_000, "the missed schedule");
    const [inc] = await incidents(m.id);
    assert.equal(inc.startedAt, new Date(b + 500).toISOString(), "the incident starts at the deadline itself");
    assert.equal(inc.description, null);
  });
});

describe("run signals and the run list", () => {
  it("start then exit/0 is one run with its duration, exit code and the tail of its output", async () => {
    const s = await post("/heartbeats/report/start", { runId: "r1", output: "starting" });
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.data.accepted, true);
    assert.equal(s.body.data.statusChanged, true, "the start created the monitor");
    assert.equal(s.body.data.monitor.status, "unknown", "a start alone changes no status");
    const id = s.body.data.monitor.id;
    assert.deepEqual(
      (await runs(id)).map((r: any) => [r.runId, r.outcome, r.endedAt, r.durationMs, r.output]),
      [["r1", "running", null, null, "starting"]],
    );

    const big = "é".repeat(6000) + "END"; // 12,003 bytes of UTF-8
    const e = await post("/heartbeats/report/exit/0", { runId: "r1", output: big, latencyMs: 5 });
    assert.equal(e.status, 200, e.text);
    assert.equal(e.body.data.monitor.status, "up");
    assert.equal(e.body.data.statusChanged, true);
    const [run] = await runs(id);
    assert.equal(run.outcome, "succeeded");
    assert.equal(run.exitCode, 0);
    assert.equal(run.runId, "r1");
    assert.match(run.id, /^run_/);
    assert.equal(run.durationMs, Date.parse(run.endedAt) - Date.parse(run.startedAt));
    assert.ok(run.output.endsWith("END"));
    assert.ok(Buffer.byteLength(run.output) <= 10_000, "the last 10,000 bytes are kept");
    assert.ok(Buffer.byteLength(run.output) >= 9_998, "cut only at a character's boundary");
    assert.ok(!run.output.startsWith("\uFFFD"));

    // The duration is a metric point, where alerts can watch it.
    const point = await waitFor(
      async () => {
        const r = await t.rest.post(
          `${base()}/metrics/points`,
          {
            name: "vigil.run.duration_ms",
            time: {
              start: new Date(Date.now() + offsetMs - 60_000).toISOString(),
              end: new Date(Date.now() + offsetMs + 60_000).toISOString(),
            },
          },
          { key: p.key },
        );
        return r.status === 200 && r.body.data.points.find((x: any) => x.tags.monitor === "report");
      },
      10_000,
      "the run's duration as a metric point",
    );
    assert.equal(point.value, run.durationMs);
    assert.deepEqual(point.tags, { monitor: "report", outcome: "succeeded" });
  });

  it("concurrent start and success pairs by runId from many clients make exactly their runs (the fast path's group commit)", async () => {
    // A scheduled monitor this node knows (its first pair), then 30 clients at once, each a start then
    // an exit/0 with its own runId: starts and ends of different runs share statements, some a run's both.
    const first = await post("/heartbeats/many/start", { runId: "m-0", schedule: { cron: "0 * * * *" } });
    assert.equal(first.status, 200, first.text);
    assert.equal((await post("/heartbeats/many/exit/0", { runId: "m-0" })).status, 200);
    const id = first.body.data.monitor.id;
    const n = 30;
    const answers = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const s = await post("/heartbeats/many/start", { runId: `m-${i + 1}`, output: `out ${i + 1}` });
        const e = await post("/heartbeats/many/exit/0", { runId: `m-${i + 1}` });
        return [s.status, e.status, e.body.data?.monitor.status];
      }),
    );
    assert.deepEqual(
      answers,
      Array.from({ length: n }, () => [200, 200, "up"]),
    );
    const list = (await get(`/monitors/${id}/runs?limit=100`)).body.data;
    assert.deepEqual(
      list.map((r: any) => r.runId).sort(),
      Array.from({ length: n + 1 }, (_, i) => `m-${i}`).sort(),
      "one run per runId",
    );
    for (const r of list) {
      assert.equal(r.outcome, "succeeded", r.runId);
      assert.equal(r.exitCode, 0, r.runId);
      assert.ok(r.startedAt !== null && r.durationMs !== null && r.durationMs >= 0, r.runId);
      if (r.runId !== "m-0") assert.equal(r.output, `out ${r.runId.slice(2)}`, "the start's output kept");
    }
    assert.equal((await get(`/monitors/${id}`)).body.data.status, "up");
    assert.deepEqual(await incidents(id), []);
    // Every run's duration is one metric point.
    await waitFor(
      async () => {
        const r = await t.rest.post(
          `${base()}/metrics/points`,
          {
            name: "vigil.run.duration_ms",
            time: {
              start: new Date(Date.now() + offsetMs - 60_000).toISOString(),
              end: new Date(Date.now() + offsetMs + 60_000).toISOString(),
            },
          },
          { key: p.key },
        );
        return r.status === 200 && r.body.data.points.filter((x: any) => x.tags.monitor === "many").length === n + 1;
      },
      10_000,
      "a duration point per run",
    );
  });

  it("pairs by order without a runId (the latest start), and an end without a start has no duration", async () => {
    const m = await post("/monitors", { name: "Import", slug: "import", expectedIntervalMs: 3_600_000 });
    assert.equal(m.status, 201, m.text);
    const id = m.body.data.id;
    await post("/heartbeats/import/start");
    await post("/heartbeats/import/start");
    const ok = await post("/heartbeats/import"); // the plain heartbeat is a success
    assert.equal(ok.status, 200, ok.text);
    const list = await runs(id);
    assert.deepEqual(
      list.map((r: any) => r.outcome),
      ["succeeded", "running"],
      "newest first: the second start ended by the heartbeat, the first still running",
    );
    assert.ok(Date.parse(list[0].startedAt) >= Date.parse(list[1].startedAt));
    // An end that pairs with nothing is a run of its own, never started.
    const f = await post("/heartbeats/import/fail", { runId: "nope" });
    assert.equal(f.status, 200, f.text);
    const [lone] = await runs(id);
    assert.deepEqual(
      [lone.runId, lone.outcome, lone.startedAt, lone.durationMs, lone.exitCode],
      ["nope", "failed", null, null, null],
    );
    // A signal's client id: a repeat records nothing (as the heartbeat's).
    const cid = "0b6c7c1e-4f1a-4c55-9a3e-1f7f4d2b9a10";
    const first = await post("/heartbeats/import/start", { id: cid, runId: "once" });
    const again = await post("/heartbeats/import/start", { id: cid, runId: "once" });
    assert.equal(first.status, 200, first.text);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.data.statusChanged, false);
    assert.equal((await runs(id)).filter((r: any) => r.runId === "once").length, 1);
    await post("/heartbeats/import/exit/0", { runId: "once" });
    // Pages: limit and cursor, newest first, no repeats.
    const all = (await runs(id)).map((r: any) => r.id);
    assert.equal(all.length, 4);
    const p1 = await get(`/monitors/${id}/runs?limit=3`);
    assert.equal(p1.body.data.length, 3);
    assert.equal(p1.body.pagination.hasMore, true);
    const p2 = await get(`/monitors/${id}/runs?limit=3&cursor=${p1.body.pagination.nextCursor}`);
    assert.deepEqual(
      [...p1.body.data, ...p2.body.data].map((r: any) => r.id),
      all,
    );
    assert.deepEqual(all.slice(1, 4), [lone.id, ...list.map((r: any) => r.id)]);
    assert.equal(p2.body.pagination.hasMore, false);
    const bad = await get(`/monitors/${id}/runs?cursor=garbage`);
    assert.equal(bad.status, 400);
  });

  it("failureTolerance: down at the (N+1)-th failed run in a row, a success resets; the incident names the run and exit code", async () => {
    const m = await post("/monitors", {
      name: "Backup",
      slug: "backup",
      expectedIntervalMs: 3_600_000,
      failureTolerance: 1,
    });
    assert.equal(m.status, 201, m.text);
    assert.equal(m.body.data.failureTolerance, 1);
    const id = m.body.data.id;
    assert.equal((await post("/heartbeats/backup/exit/0")).body.data.monitor.status, "up");
    assert.equal((await post("/heartbeats/backup/exit/3")).body.data.monitor.status, "up", "1 failure tolerated");
    assert.equal((await post("/heartbeats/backup/exit/0")).body.data.monitor.status, "up", "the count resets");
    assert.equal((await post("/heartbeats/backup/fail")).body.data.monitor.status, "up");
    await post("/heartbeats/backup/start", { runId: "b2" });
    const down = await post("/heartbeats/backup/exit/4", { runId: "b2", output: "disk full" });
    assert.equal(down.body.data.monitor.status, "down");
    assert.equal(down.body.data.statusChanged, true);
    const [inc] = await incidents(id);
    assert.equal(inc.status, "open");
    assert.equal(inc.startedAt, down.body.data.monitor.lastHeartbeatAt, "the incident starts at the failure");
    const [run] = await runs(id);
    assert.equal(inc.description, `Run "b2" (${run.id}) failed with exit code 4.`);
    assert.deepEqual([run.outcome, run.exitCode, run.output], ["failed", 4, "disk full"]);
    // The webhook payload (the incident listeners) carries the same description.
    const n = notices.filter((x) => (x.payload as any).monitor.id === id);
    assert.deepEqual(
      n.map((x) => [x.type, (x.payload as any).incident.description]),
      [["incident.started", inc.description]],
    );
    // A success recovers it.
    assert.equal((await post("/heartbeats/backup/exit/0")).body.data.monitor.status, "up");
  });

  it("maxRuntimeMs: a run that does not end is timed_out at start + maxRuntimeMs, once, in either runner", async () => {
    const m = await post("/monitors", {
      name: "Hang",
      slug: "hang",
      expectedIntervalMs: 3_600_000,
      maxRuntimeMs: 1000,
    });
    assert.equal(m.status, 201, m.text);
    assert.equal(m.body.data.maxRuntimeMs, 1000);
    const id = m.body.data.id;
    await post("/heartbeats/hang/exit/0");
    const s = await post("/heartbeats/hang/start", { runId: "h1" });
    const [started] = await runs(id);
    const due = Date.parse(started.startedAt) + 1000;
    assert.equal(
      s.body.data.monitor.deadlineAt,
      new Date(due).toISOString(),
      "the timeout is the monitor's next due time",
    );
    // 15 s: in Temporal mode (pass 2) the node's workers may still be starting.
    await waitFor(async () => (await status(id)) === "down", 15_000, "the hung run taking the monitor down");
    const [inc] = await incidents(id);
    assert.equal(inc.startedAt, new Date(due).toISOString(), "the incident starts at start + maxRuntimeMs");
    assert.equal(inc.description, `Run "h1" (${started.id}) timed out: still running 1000 ms after its start.`);
    const [run] = await runs(id);
    assert.deepEqual([run.outcome, run.endedAt, run.durationMs], ["timed_out", new Date(due).toISOString(), 1000]);
    assert.equal((await incidents(id)).length, 1);
    assert.equal(
      notices.filter((x) => (x.payload as any).monitor.id === id && x.type === "incident.started").length,
      1,
    );
    // A late end pairs with nothing still running: a run of its own, and a success that recovers.
    const late = await post("/heartbeats/hang/exit/0", { runId: "h1" });
    assert.equal(late.body.data.monitor.status, "up");
    assert.equal((await runs(id))[0].startedAt, null);
  });
});

describe("status pages and webhooks", () => {
  it("a cron monitor's incidents from a failed run (exit code) and a hung run (maxRuntimeMs) show on its status page (JSON, HTML, feed) and reach a webhook, naming the run", async () => {
    const url = rx.on("/cron-incidents", () => ({ status: 200 }));
    const hook = await t.rest.post(
      `${base()}/webhooks`,
      { name: "cron", url, events: ["incident.started"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(hook.status, 201, hook.text);
    const etl = await post("/monitors", {
      name: "Nightly ETL",
      slug: "etl",
      schedule: { cron: "0 3 * * *", timezone: "Europe/Berlin" },
    });
    const stuck = await post("/monitors", {
      name: "Stuck sync",
      slug: "stuck-sync",
      schedule: { cron: "*/5 * * * *" },
      maxRuntimeMs: 1000,
    });
    assert.equal(etl.status, 201, etl.text);
    assert.equal(stuck.status, 201, stuck.text);
    const page = await t.rest.post(
      `${base()}/pages`,
      {
        slug: "cron-jobs",
        title: "Cron jobs",
        published: true,
        monitors: [{ monitorId: etl.body.data.id }, { monitorId: stuck.body.data.id }],
      },
      { cookie: p.owner.cookie },
    );
    assert.equal(page.status, 201, page.text);

    await post("/heartbeats/etl/start", { runId: "etl-42" });
    assert.equal((await post("/heartbeats/etl/exit/3", { runId: "etl-42" })).body.data.monitor.status, "down");
    const [etlRun] = await runs(etl.body.data.id);
    await post("/heartbeats/stuck-sync/start", { runId: "sync-7" });
    const [stuckRun] = await runs(stuck.body.data.id);
    await waitFor(async () => (await status(stuck.body.data.id)) === "down", 15_000, "the hung run timing out");
    const failed = `Run "etl-42" (${etlRun.id}) failed with exit code 3.`;
    const hung = `Run "sync-7" (${stuckRun.id}) timed out: still running 1000 ms after its start.`;

    // The page's JSON: both monitors down, both incidents with their descriptions.
    const json = await waitFor(
      async () => {
        const r = await t.rest.get("/v1/status/cron-jobs");
        return r.status === 200 && r.body.data.incidents.length === 2 ? r.body.data : undefined;
      },
      5000,
      "the page listing both incidents",
    );
    assert.deepEqual(
      json.monitors.map((m: any) => [m.name, m.status]),
      [
        ["Nightly ETL", "down"],
        ["Stuck sync", "down"],
      ],
    );
    assert.deepEqual(json.incidents.map((i: any) => i.description).sort(), [failed, hung].sort());
    // The HTML page and the Atom feed name the runs and the exit code too.
    const html = await t.rest.get("/status/cron-jobs");
    assert.equal(html.status, 200);
    const feed = await t.rest.get("/status/cron-jobs/feed.atom");
    assert.equal(feed.status, 200);
    for (const [what, text] of [
      ["html", html.text],
      ["feed", feed.text],
    ]) {
      assert.ok(text.includes(etlRun.id) && text.includes("failed with exit code 3."), `${what}: the failed run`);
      assert.ok(
        text.includes(stuckRun.id) && text.includes("still running 1000 ms after its start."),
        `${what}: the hung run`,
      );
    }

    // The webhook receiver got one incident.started per monitor, each naming its run.
    const got = await waitFor(
      async () => (rx.at("/cron-incidents").length >= 2 ? rx.at("/cron-incidents") : undefined),
      10_000,
      "two webhook deliveries",
    );
    const bodies = got.map((r) => JSON.parse(r.raw));
    assert.deepEqual(bodies.map((b) => [b.type, b.data.monitor.slug, b.data.incident.description]).sort(), [
      ["incident.started", "etl", failed],
      ["incident.started", "stuck-sync", hung],
    ]);
  });
});

describe("schedules", () => {
  it("create, PATCH and the heartbeat body take a schedule; an interval clears it; GET .../schedule", async () => {
    const c = await post("/monitors", { name: "Nightly", schedule: { cron: "0 3 * * *", timezone: "europe/berlin" } });
    assert.equal(c.status, 201, c.text);
    assert.deepEqual(c.body.data.schedule, { cron: "0 3 * * *", timezone: "Europe/Berlin" });
    const id = c.body.data.id;
    const sch = await get(`/monitors/${id}/schedule?count=3`);
    assert.equal(sch.status, 200, sch.text);
    assert.equal(sch.body.data.next.length, 3);
    assert.equal(sch.body.data.cron, "0 3 * * *");
    for (const at of sch.body.data.next) assert.match(at, /T0[12]:00:00\.000Z$/, "03:00 Berlin is 01:00 or 02:00 UTC");
    assert.equal((await get(`/monitors/${id}/schedule`)).body.data.next.length, 5, "default 5");

    const patched = await t.rest.patch(`${base()}/monitors/${id}`, { expectedIntervalMs: 60_000 }, { key: p.key });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.data.schedule, null, "setting an interval clears the schedule");
    const none = await get(`/monitors/${id}/schedule`);
    assert.equal(none.status, 404);
    assert.equal(errorBody(none).code, "not_found");
    const back = await t.rest.patch(`${base()}/monitors/${id}`, { schedule: { cron: "*/5 * * * *" } }, { key: p.key });
    assert.deepEqual(back.body.data.schedule, { cron: "*/5 * * * *", timezone: "UTC" });

    const hb = await post("/heartbeats/weekly", { schedule: { cron: "0 9 * * mon", timezone: "America/New_York" } });
    assert.equal(hb.status, 200, hb.text);
    assert.deepEqual(hb.body.data.monitor.schedule, { cron: "0 9 * * mon", timezone: "America/New_York" });
    const deadline = Date.parse(hb.body.data.monitor.deadlineAt);
    const next = (await get(`/monitors/${hb.body.data.monitor.id}/schedule?count=1`)).body.data.next[0];
    assert.equal(
      deadline,
      Date.parse(next) + 30_000,
      "the next Monday 09:00 New York after the success, plus the grace",
    );
    const cleared = await post("/heartbeats/weekly", { expectedIntervalMs: 3_600_000 });
    assert.equal(cleared.body.data.monitor.schedule, null);
  });

  it("refuses an invalid cron, zone, count, exit code, or a schedule with an interval (400 naming the field)", async () => {
    const cases: [string, unknown, string][] = [
      ["/monitors", { name: "x", schedule: { cron: "0 3 * *" } }, "schedule.cron"],
      ["/monitors", { name: "x", schedule: { cron: "61 * * * *" } }, "schedule.cron"],
      ["/monitors", { name: "x", schedule: { cron: "0 3 * * *", timezone: "Mars/Olympus" } }, "schedule.timezone"],
      ["/monitors", { name: "x", schedule: { cron: "0 3 * * *" }, expectedIntervalMs: 60_000 }, "schedule"],
      ["/monitors", { name: "x", maxRuntimeMs: 10 }, "maxRuntimeMs"],
      ["/monitors", { name: "x", failureTolerance: -1 }, "failureTolerance"],
      ["/heartbeats/x", { schedule: { cron: "@daily" } }, "schedule.cron"],
      ["/heartbeats/x/start", { schedule: { cron: "* * * * *", timezone: "+01:00" } }, "schedule.timezone"],
      ["/heartbeats/x/exit/256", {}, "code"],
      ["/heartbeats/x/start", { status: "down" }, "status"],
    ];
    for (const [path, body, field] of cases) {
      const r = await post(path, body);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
      assert.equal(errorBody(r).code, "validation_failed");
      assert.ok(
        (errorBody(r).details as { field: string }[]).some((d) => d.field === field),
        `${path} ${JSON.stringify(body)} names ${field}: ${r.text}`,
      );
    }
    const m = await post("/monitors", { name: "Count", schedule: { cron: "* * * * *" } });
    for (const count of [0, 101]) {
      const r = await get(`/monitors/${m.body.data.id}/schedule?count=${count}`);
      assert.equal(r.status, 400, r.text);
      assert.equal((errorBody(r).details as { field: string }[])[0].field, "count");
    }
    for (const code of ["abc", "1.5", "-1"]) {
      const r = await post(`/heartbeats/x/exit/${code}`);
      assert.equal(r.status, 400, `exit/${code}: ${r.text}`);
      assert.equal(errorBody(r).code, "validation_failed");
    }
    assert.equal((await get(`/monitors/mon_nope/schedule`)).status, 404);
    assert.equal((await get(`/monitors/mon_nope/runs`)).status, 404);
  });
});

describe("gRPC", () => {
  it("run signals, the run list and the schedule through a real gRPC client", async () => {
    const c = createClient(UptimeService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${p.key}` };
    const s = await c.startRun(
      {
        projectId: "self",
        monitorSlug: "grpc-cron",
        runId: "g1",
        schedule: { cron: "30 2 * * *", timezone: "Europe/Berlin" },
      },
      { headers },
    );
    assert.equal(s.data?.accepted, true);
    const id = s.data!.monitor!.id;
    assert.equal(s.data?.monitor?.schedule?.timezone, "Europe/Berlin");
    const e = await c.exitRun({ projectId: "self", monitorSlug: "grpc-cron", code: 0, runId: "g1" }, { headers });
    assert.equal(e.data?.monitor?.status, "up");
    const f = await c.failRun({ projectId: "self", monitorSlug: "grpc-cron", output: "boom" }, { headers });
    assert.equal(f.data?.monitor?.status, "down");
    const list = await c.listRuns({ projectId: "self", monitorId: id }, { headers });
    assert.deepEqual(
      list.data.map((r) => [r.outcome, r.runId, r.exitCode, r.output]),
      [
        ["failed", undefined, undefined, "boom"],
        ["succeeded", "g1", 0, undefined],
      ],
    );
    assert.equal(typeof list.data[1].durationMs, "bigint");
    const sch = await c.getMonitorSchedule({ projectId: "self", monitorId: id, count: 2 }, { headers });
    assert.equal(sch.data?.next.length, 2);
    await assert.rejects(
      c.exitRun({ projectId: "self", monitorSlug: "grpc-cron", code: -1 }, { headers }),
      (err: unknown) => err instanceof ConnectError && err.code === Code.InvalidArgument,
    );
  });
});
