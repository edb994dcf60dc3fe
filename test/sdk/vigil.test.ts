import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Vigil, VigilError } from "../../sdk/src/index.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { useProject } from "../helpers/use.js";

// The SDK against a real Vigil (REST on a real port, real PostgreSQL): what it sends is what the
// service stores, field by field, for every call of the API.

const { t, p } = useProject(GENEROUS_LIMITS);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function client(extra: Partial<ConstructorParameters<typeof Vigil>[0]> = {}) {
  const errors: VigilError[] = [];
  const vigil = new Vigil({
    apiKey: p.key,
    apiUrl: t.url,
    flushIntervalMs: 50,
    onError: (e) => errors.push(e),
    ...extra,
  });
  return { vigil, errors };
}

async function eventsOfType(type: string): Promise<any[]> {
  const r = await t.rest.get(`/v1/projects/self/events?type=${encodeURIComponent(type)}&limit=100`, { key: p.key });
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

describe("the SDK against a real Vigil", () => {
  it("track: every field arrives as given, with a client UUID per call and the call's time", async () => {
    const { vigil, errors } = client();
    const before = Date.now();
    const ids = [1, 2, 3].map((n) =>
      vigil.track(
        "sdk.signup",
        { n, plan: "pro" },
        { userId: "u-1", groupId: "g-1", source: "web", tags: { env: "prod" }, context: { locale: "fr" } },
      ),
    );
    const at = "2025-01-02T03:04:05.678Z";
    vigil.track("sdk.signup", { n: 4 }, { timestamp: new Date(at) });
    for (const id of ids) assert.match(id, UUID);
    assert.equal(new Set(ids).size, 3);
    await vigil.shutdown();
    assert.deepEqual(errors, []);
    const stored = await eventsOfType("sdk.signup");
    assert.equal(stored.length, 4);
    const byN = new Map(stored.map((e) => [e.data.n, e]));
    const e1 = byN.get(1);
    assert.deepEqual(e1.data, { n: 1, plan: "pro" });
    assert.equal(e1.userId, "u-1");
    assert.equal(e1.groupId, "g-1");
    assert.match(e1.sourceId, /^src_/);
    assert.deepEqual(e1.tags, { env: "prod" });
    assert.equal(e1.context.locale, "fr");
    assert.ok(Date.parse(e1.timestamp) >= before - 1 && Date.parse(e1.timestamp) <= Date.now());
    assert.equal(byN.get(4).timestamp, at);
    assert.deepEqual(vigil.stats, { queued: 0, sent: 4, dropped: 0, rejected: 0, retries: 0 });
  });

  it("page, identify, group and captureError store the reserved events; identify sets the user of later events", async () => {
    const { vigil, errors } = client();
    vigil.page({ path: "/pricing" });
    vigil.identify("u-42", { email: "a@example.com", plan: "team" });
    vigil.track("sdk.after-identify");
    vigil.group("acme", { name: "Acme", size: 12 });
    vigil.captureError(new TypeError("boom"), { route: "/x" });
    await vigil.flush();
    assert.deepEqual(errors, []);
    const [page] = await eventsOfType("$page");
    assert.equal(page.data.path, "/pricing");
    const [ident] = await eventsOfType("$identify");
    assert.equal(ident.userId, "u-42");
    assert.deepEqual(ident.data, { email: "a@example.com", plan: "team" });
    const [after] = await eventsOfType("sdk.after-identify");
    assert.equal(after.userId, "u-42");
    const [group] = await eventsOfType("$group");
    assert.equal(group.groupId, "acme");
    assert.equal(group.userId, "u-42");
    const [err] = await eventsOfType("$error");
    assert.equal(err.data.message, "boom");
    assert.equal(err.data.name, "TypeError");
    assert.match(err.data.stack, /TypeError: boom/);
    assert.equal(err.data.route, "/x");
    const user = await t.rest.get(`/v1/projects/self/users/u-42`, { key: p.key });
    assert.equal(user.status, 200, user.text);
    await vigil.shutdown();
  });

  it("measure, increment and decrement reach the metrics; the counter nets exactly", async () => {
    const { vigil, errors } = client();
    for (let i = 0; i < 30; i++) vigil.increment("sdk.jobs", 2);
    vigil.decrement("sdk.jobs", 5);
    vigil.measure("sdk.latency", 12.5, { unit: "ms", tags: { route: "/a" } });
    await vigil.shutdown();
    assert.deepEqual(errors, []);
    const cur = await t.rest.post(`/v1/projects/self/metrics/current`, { name: "sdk.jobs" }, { key: p.key });
    assert.equal(cur.status, 200, cur.text);
    assert.equal(cur.body.data.value, 55);
    const lat = await t.rest.post(`/v1/projects/self/metrics/current`, { name: "sdk.latency" }, { key: p.key });
    assert.equal(lat.body.data.value, 12.5);
    assert.equal(vigil.stats.sent, 32);
  });

  it("heartbeat: sent now, answers the monitor; a bad status is refused without a retry", async () => {
    const { vigil } = client();
    const r = await vigil.heartbeat("sdk-worker", { latencyMs: 41.5, metadata: { build: "abc" } });
    assert.equal(r.accepted, true);
    assert.equal(r.monitor.status, "up");
    await assert.rejects(vigil.heartbeat("sdk-worker", { status: "sideways" as "up" }), (e: unknown) => {
      assert.ok(e instanceof VigilError);
      assert.equal(e.code, "rejected");
      assert.equal(e.status, 400);
      return true;
    });
    assert.equal(vigil.stats.retries, 0);
    await vigil.shutdown();
  });

  it("job: start, then success or fail with the error as output, one run id per run; the job's outcome is fn's", async () => {
    const { vigil, errors } = client();
    assert.equal(await vigil.job("sdk-cron", () => 42), 42);
    const boom = new Error("disk full");
    await assert.rejects(
      vigil.job("sdk-cron", async () => {
        throw boom;
      }),
      (e: unknown) => e === boom,
    );
    assert.deepEqual(errors, []);
    const beat = await vigil.heartbeat("sdk-cron", { latencyMs: 1 });
    assert.equal(beat.monitor.status, "up", "a success after the failure");
    const runs = await t.rest.get(`/v1/projects/self/monitors/${beat.monitor.id}/runs`, { key: p.key });
    assert.equal(runs.status, 200, runs.text);
    // The plain heartbeat (no run id, no output, no schedule) is no run (docs/uptime.md).
    assert.equal(runs.body.data.length, 2, runs.text);
    const [failed, ok] = runs.body.data;
    assert.equal(failed.outcome, "failed");
    assert.match(failed.output, /disk full/);
    assert.equal(ok.outcome, "succeeded");
    for (const r of [failed, ok]) {
      assert.match(r.runId, UUID);
      assert.ok(r.startedAt && r.endedAt && r.durationMs >= 0, JSON.stringify(r));
    }
    assert.notEqual(failed.runId, ok.runId);
    await vigil.shutdown();
  });

  it("an item the server refuses in a batch is reported alone; the others are stored", async () => {
    const { vigil, errors } = client();
    vigil.track("sdk.mixed", { ok: 1 });
    const bad = vigil.track("$not-reserved", { ok: 0 });
    vigil.track("sdk.mixed", { ok: 2 });
    await vigil.shutdown();
    assert.equal((await eventsOfType("sdk.mixed")).length, 2);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, "rejected");
    assert.equal(errors[0].serverCode, "reserved_type");
    assert.deepEqual(errors[0].ids, [bad]);
    assert.equal(vigil.stats.rejected, 1);
    assert.equal(vigil.stats.sent, 2);
  });

  it("a revoked key: the batch is refused once (401), never retried, reported", async () => {
    const k = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "to revoke", environment: "production" },
      { cookie: p.owner.cookie },
    );
    await t.rest.del(`/v1/projects/${p.projectId}/api-keys/${k.body.data.id}`, { cookie: p.owner.cookie });
    const { vigil, errors } = client({ apiKey: k.body.data.secret });
    vigil.track("sdk.revoked");
    await vigil.shutdown();
    assert.equal(errors.length, 1);
    assert.equal(errors[0].status, 401);
    assert.equal(vigil.stats.retries, 0);
    assert.equal(vigil.stats.rejected, 1);
    assert.equal((await eventsOfType("sdk.revoked")).length, 0);
  });
});

describe("the SDK against a real Vigil: retries never double", () => {
  it("answers lost AFTER the server committed (events and increments): the retries store nothing new", async () => {
    // A fetch that lets every request reach Vigil and commit, then throws away the first two answers
    // of each route as a dropped connection would: the SDK retries the same ids.
    const lost = new Map<string, number>();
    const fetchLosingAnswers = async (url: string, init: RequestInit) => {
      const res = await fetch(url, init);
      const n = (lost.get(url) ?? 0) + 1;
      lost.set(url, n);
      if (n > 2) return res;
      await res.arrayBuffer(); // the server has answered: it committed
      throw new TypeError("fetch failed", { cause: new Error("ECONNRESET") });
    };
    const { vigil, errors } = client({ fetch: fetchLosingAnswers, retry: { baseMs: 5, maxMs: 20 }, flushAt: 40 });
    for (let i = 0; i < 100; i++) vigil.track("sdk.once", { i });
    for (let i = 0; i < 50; i++) vigil.increment("sdk.once.count", 3);
    await vigil.shutdown();
    assert.deepEqual(errors, []);
    assert.ok(vigil.stats.retries >= 4, `${vigil.stats.retries} retries`);
    const stored = await eventsOfType("sdk.once");
    assert.equal(stored.length, 100, "each event stored once");
    assert.deepEqual(
      stored.map((e) => e.data.i).sort((a, b) => a - b),
      [...Array(100).keys()],
    );
    const cur = await t.rest.post(`/v1/projects/self/metrics/current`, { name: "sdk.once.count" }, { key: p.key });
    assert.equal(cur.body.data.value, 150, "each increment counted once");

    const hb = await vigil2().heartbeat("sdk-once", { latencyMs: 5 });
    const beats = await t.rest.get(`/v1/projects/self/monitors/${hb.monitor.id}/heartbeats`, { key: p.key });
    assert.equal(beats.status, 200, beats.text);
    assert.equal(beats.body.data.length, 1, "a heartbeat whose answers were lost twice is recorded once");
    function vigil2() {
      return client({ fetch: fetchLosingAnswers, retry: { baseMs: 5, maxMs: 20 } }).vigil;
    }
  });

  it("gzip: a large batch gzipped is stored like a plain one", async () => {
    const encodings: (string | undefined)[] = [];
    const recording = (url: string, init: RequestInit) => {
      encodings.push((init.headers as Record<string, string>)["content-encoding"]);
      return fetch(url, init);
    };
    const { vigil, errors } = client({ gzip: true, flushAt: 500, fetch: recording });
    for (let i = 0; i < 500; i++) vigil.track("sdk.gzipped", { i, text: "é lorem ipsum ".repeat(8) });
    await vigil.shutdown();
    assert.deepEqual(errors, []);
    const r = await t.rest.post(
      `/v1/projects/self/analytics/count`,
      {
        filters: { field: "event", operator: "equals", value: "sdk.gzipped" },
        time: { start: "2020-01-01T00:00:00Z", end: "2100-01-01T00:00:00Z" },
      },
      { key: p.key },
    );
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.count, 500);
    const [one] = await eventsOfType("sdk.gzipped");
    assert.equal(one.data.text, "é lorem ipsum ".repeat(8));
    assert.deepEqual(encodings, ["gzip"], "one request, gzipped, accepted by the server");
  });

  it("a publishable key (vk_pub_) tracks events; other routes answer 403 and are not retried", async () => {
    const k = await t.rest.post(
      `/v1/projects/${p.projectId}/api-keys`,
      { name: "web", environment: "production", kind: "publishable" },
      { cookie: p.owner.cookie },
    );
    assert.equal(k.status, 201, k.text);
    assert.match(k.body.data.secret, /^vk_pub_/);
    const { vigil, errors } = client({ apiKey: k.body.data.secret });
    vigil.track("sdk.from-web", { ok: true });
    vigil.page({ path: "/" });
    await vigil.flush();
    assert.deepEqual(errors, []);
    assert.equal((await eventsOfType("sdk.from-web")).length, 1);
    await assert.rejects(vigil.heartbeat("web"), (e: unknown) => e instanceof VigilError && e.status === 403);
    assert.equal(vigil.stats.retries, 0);
    await vigil.shutdown();
  });
});
