// The SDK against a real Vigil with faults injected ("Shown working" in issue #17): a Vigil child
// process (its own port, this file's database) killed with SIGKILL while batches are in flight and
// restarted on the same port, behind a fault-injecting proxy (test/helpers/faults.ts: 429 with
// Retry-After, 500, connections dropped before forwarding and AFTER the server answered, so the
// server committed and the answer was lost, and requests held past the SDK's timeout, so that its
// retry may reach the server before the original). Thousands of tracked events and metric increments;
// afterwards, read from PostgreSQL directly: every event stored exactly once (the count, each
// data.seq once), the ingest_ids claims 1:1 with the stored events and with the client ids the SDK
// sent, and the increments summing exactly. Heartbeats (sent at once, up to 10 attempts) go through
// the same faults: whether or not one gave up, none is recorded twice.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { Vigil } from "../../sdk/src/index.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { freePort, startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { seeded, startFaultProxy, type Fault, type FaultProxy } from "../helpers/faults.js";
import { project } from "../helpers/fixtures.js";

const EVENTS = 3_000;
const INCREMENT_EVERY = 5; // one increment per 5 events: 600 increments
const KILLS = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let node: Node | undefined;
let proxy: FaultProxy | undefined;
let vigil: Vigil | undefined;
after(async () => {
  await vigil?.shutdown().catch(() => undefined);
  await proxy?.close();
  await node?.kill("SIGKILL");
});

/** Until `check` holds, polling every few ms (bounded). */
async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(1);
  }
}

describe("the SDK against a Vigil that crashes and a network that fails", () => {
  it("stores every tracked event and every increment exactly once across kill -9, restarts, 429, 500 and lost answers", async (ctx) => {
    const databaseUrl = await createTestDatabase();
    const port = await freePort();
    const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: "error", ...GENEROUS_LIMITS };
    node = await startNode(env, port);
    const p = await project(node.rest);

    // Faults on the SDK's writes only, from a seeded sequence (the same run to run): 32% of the
    // requests fail in one of six ways, the rest pass.
    const rnd = seeded(17);
    proxy = await startFaultProxy(node.url, ({ method }) => {
      if (method !== "POST") return "pass";
      const r = rnd();
      const faults: [number, Fault][] = [
        [0.04, "429"],
        [0.09, "500"],
        [0.15, "drop-before"],
        [0.25, "drop-after"],
        [0.3, "500-after"],
        [0.32, "delay"],
      ];
      return faults.find(([limit]) => r < limit)?.[1] ?? "pass";
    });
    proxy.retryAfter = "1";
    proxy.delayMs = 1200; // past the SDK's requestTimeoutMs: it retries while the original is held

    const errors: unknown[] = [];
    vigil = new Vigil({
      apiKey: p.key,
      apiUrl: proxy.url,
      flushAt: 50,
      flushIntervalMs: 20,
      maxQueueSize: 100_000,
      retry: { baseMs: 20, maxMs: 400 },
      requestTimeoutMs: 700,
      persist: false,
      onError: (err: unknown) => errors.push(err),
    });
    const v = vigil;

    // The producer: events with data.seq 0..EVENTS-1 and increments of 1 to 4, tracked 10 at a time
    // every 50 ms (about 15 s), so that batches flow all along; each restart's downtime leaves a
    // backlog that keeps batches in flight for the next kill.
    let expectedSum = 0;
    let increments = 0;
    const tracked: string[] = [];
    const producer = (async () => {
      for (let i = 0; i < EVENTS; i++) {
        tracked.push(v.track("fault", { seq: i }));
        if (i % INCREMENT_EVERY === 0) {
          const by = 1 + (i % 7) / 2; // 1, 1.5, ... 4: fractional increments sum exactly in float8 here
          v.increment("sdk.faults", by);
          expectedSum += by;
          increments++;
        }
        if (i % 10 === 9) await sleep(50);
      }
    })();

    // Heartbeats all along: each resolves (recorded) or gives up (recorded at most once; those sent
    // while Vigil restarts give up after their 10 attempts with this test's short backoff).
    const beats = { ok: [] as number[], gaveUp: [] as number[] };
    const beatErrors: string[] = [];
    let killsDone = false;
    const beating = (async () => {
      // until 5 after the last restart (those go through: the faults alone rarely beat 10 attempts)
      for (let k = 0, afterKills = 0; afterKills < 5; k++) {
        if (killsDone) afterKills++;
        await v.heartbeat("sdk-faults", { latencyMs: k, metadata: { seq: k }, expectedIntervalMs: 3_600_000 }).then(
          () => beats.ok.push(k),
          (err) => (beats.gaveUp.push(k), beatErrors.push(String(err))),
        );
        await sleep(200);
      }
    })();

    // The killer: SIGKILL while the proxy has a request forwarded to Vigil and not yet answered
    // (the middle of a batch), then a restart on the same port and database.
    let killedMidRequest = 0;
    for (let k = 0; k < KILLS; k++) {
      const stored = () => proxy!.log.filter((r) => r.upstreamStatus === 202 || r.upstreamStatus === 201).length;
      const before = stored();
      await until("batches reaching Vigil", () => stored() >= before + 3 && proxy!.inflight() > 0, 60_000);
      if (proxy.inflight() > 0) killedMidRequest++;
      await node.kill("SIGKILL");
      await sleep(200); // the SDK meets a refused port for a while
      node = await startNode(env, port);
    }
    killsDone = true;
    await producer;
    await beating;

    // Everything queued is sent (the faults go on meanwhile).
    const deadline = Date.now() + 120_000;
    while (v.stats.queued > 0 && Date.now() < deadline) await v.flush();

    // Heartbeats whose every first attempt is recorded by Vigil and its answer lost: each retry must
    // find the claim and record nothing.
    const firstSeen = new Set<string>();
    proxy.setPolicy(({ path, ids }) => {
      if (!path.includes("/heartbeats/") || ids.length !== 1 || firstSeen.has(ids[0])) return "pass";
      firstSeen.add(ids[0]);
      return "drop-after";
    });
    for (let k = 1000; k < 1005; k++) {
      await v.heartbeat("sdk-faults", { latencyMs: k, metadata: { seq: k } });
      beats.ok.push(k);
    }
    const repeatedBeats = proxy.log.filter(
      (r) => r.path.includes("/heartbeats/") && r.fault === "drop-after" && (r.upstreamStatus ?? 999) < 300,
    ).length;
    assert.ok(repeatedBeats >= 5, `${repeatedBeats} heartbeats recorded with their answer lost`);
    await v.shutdown();
    assert.equal(v.stats.queued, 0, `still queued after 120 s: ${JSON.stringify(v.stats)}`);
    assert.equal(v.stats.dropped, 0, JSON.stringify(v.stats));
    // Nothing queued was refused or given up (a heartbeat that gave up during a restart counts in
    // stats.rejected and is thrown to its caller, not reported to onError).
    assert.deepEqual(errors.map(String), [], "errors reported to onError");
    assert.equal(v.stats.rejected, beats.gaveUp.length, `rejected: ${JSON.stringify(v.stats)}`);
    assert.ok(
      beatErrors.every((e) => /gave up/.test(e)),
      `heartbeats failed otherwise than giving up: ${beatErrors.join("; ")}`,
    );
    assert.ok(v.stats.retries > 0, JSON.stringify(v.stats));

    // The faults really happened, and retries really reached the server with ids it had stored.
    const count = (f: Fault) => proxy!.log.filter((r) => r.fault === f).length;
    for (const f of ["429", "500", "drop-before", "drop-after", "500-after", "delay"] as Fault[])
      assert.ok(count(f) > 0, `no ${f} injected`);
    assert.ok(killedMidRequest >= 2, `only ${killedMidRequest} kills with a request in flight`);
    const lostAnswers = proxy.log.filter(
      (r) => (r.fault === "drop-after" || r.fault === "500-after") && r.upstreamStatus === 202,
    );
    assert.ok(lostAnswers.length > 0, "no batch was committed and its answer lost");
    const reached = new Map<string, number>();
    for (const r of proxy.log)
      if (r.upstreamStatus !== undefined && r.path.startsWith("/v1/events/batch"))
        for (const id of r.ids) reached.set(id, (reached.get(id) ?? 0) + 1);
    const resent = [...reached.values()].filter((n) => n > 1).length;
    assert.ok(resent > 0, "no event id reached the server twice: the dedupe was not exercised");
    const heartbeatAnswersLost = proxy.log.filter(
      (r) => r.path.includes("/heartbeats/") && r.fault !== "pass" && r.upstreamStatus !== undefined,
    ).length;
    ctx.diagnostic(
      `${proxy.log.length} requests; faults: ${["429", "500", "drop-before", "drop-after", "500-after", "delay"].map((f) => `${f} ${count(f as Fault)}`).join(", ")}; ` +
        `${killedMidRequest}/${KILLS} kills mid-request; ${lostAnswers.length} committed answers lost; ${resent} event ids stored then re-sent; heartbeats ${beats.ok.length} recorded, ${beats.gaveUp.length} given up, ${heartbeatAnswersLost} faulted after reaching Vigil; stats ${JSON.stringify(v.stats)}`,
    );
    // A 429's Retry-After was honoured: nothing was sent on that stream for a second.
    const throttled = proxy.log.find((r) => r.fault === "429" && r.path.startsWith("/v1/events/batch"));
    if (throttled) {
      const next = proxy.log.find((r) => r.at > throttled.at && r.path.startsWith("/v1/events/batch"));
      assert.ok(next && next.at - throttled.at >= 950, `sent again after ${next && next.at - throttled.at} ms`);
    }

    // PostgreSQL: each event once, each claim for exactly one stored event, every id the SDK sent claimed.
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const ev = await db.query<{ seq: number; n: number }>(
        "SELECT (data->>'seq')::int AS seq, count(*)::int AS n FROM events WHERE project_id = $1 AND type = 'fault' GROUP BY 1",
        [p.projectId],
      );
      const twice = ev.rows.filter((r) => r.n !== 1).map((r) => `${r.seq}×${r.n}`);
      assert.deepEqual(twice, [], `events stored more than once (seq×count): ${twice.slice(0, 20).join(", ")}`);
      const seqs = new Set(ev.rows.map((r) => r.seq));
      const missing = Array.from({ length: EVENTS }, (_, i) => i).filter((i) => !seqs.has(i));
      assert.deepEqual(missing.slice(0, 20), [], `${missing.length} events lost`);
      assert.equal(ev.rows.length, EVENTS);

      // ingest_ids: one claim per stored event, pointing at it; one per event id the SDK sent.
      const claims = await db.query<{ client_id: string; record_id: string | null; type: string | null }>(
        `SELECT i.client_id::text AS client_id, i.record_id, e.type
           FROM ingest_ids i LEFT JOIN events e ON e.project_id = i.project_id AND e.id::text = i.record_id
          WHERE i.project_id = $1 AND i.kind = 'event'`,
        [p.projectId],
      );
      assert.equal(claims.rows.length, EVENTS, "ingest_ids event claims");
      assert.deepEqual(
        claims.rows.filter((c) => c.type !== "fault").slice(0, 5),
        [],
        "claims that point at no stored event",
      );
      assert.equal(new Set(claims.rows.map((c) => c.record_id)).size, EVENTS, "two claims for one event");
      assert.equal(new Set(tracked).size, EVENTS, "track returned a distinct id per event");
      assert.deepEqual(
        claims.rows.map((c) => c.client_id).sort(),
        [...tracked].map((id) => id.toLowerCase()).sort(),
        "the claimed ids are not the ids track() returned",
      );

      // Increments: the counter's total and its points sum exactly; each increment once.
      const m = await db.query<{ total: number; points: number; sum: number }>(
        `SELECT m.total, count(mp.*)::int AS points, coalesce(sum(mp.v), 0)::float8 AS sum
           FROM metrics m LEFT JOIN metric_points mp ON mp.metric_id = m.id
          WHERE m.project_id = $1 AND m.name = 'sdk.faults' GROUP BY m.id, m.total`,
        [p.projectId],
      );
      assert.equal(m.rows.length, 1, "the counter exists");
      assert.equal(m.rows[0].points, increments, "increment points");
      assert.equal(m.rows[0].sum, expectedSum, "sum of the points");
      assert.equal(m.rows[0].total, expectedSum, "the counter's total");
      // ...and one claim per increment, each pointing at its own stored $increment event.
      const mc = await db.query<{ claims: number; events: number; distinct: number }>(
        `SELECT count(*)::int AS claims, count(e.id)::int AS events, count(DISTINCT e.id)::int AS distinct
           FROM ingest_ids i LEFT JOIN events e
             ON e.project_id = i.project_id AND e.id::text = i.record_id AND e.type = '$increment'
          WHERE i.project_id = $1 AND i.kind = 'metric'`,
        [p.projectId],
      );
      assert.deepEqual(
        mc.rows[0],
        { claims: increments, events: increments, distinct: increments },
        "ingest_ids metric claims ↔ $increment events",
      );

      // Heartbeats: none recorded twice; each that resolved recorded; one claim per recorded heartbeat.
      const hb = await db.query<{ seq: number; n: number }>(
        `SELECT (h.metadata->>'seq')::int AS seq, count(*)::int AS n
           FROM heartbeats h JOIN monitors m ON m.id = h.monitor_id
          WHERE m.project_id = $1 AND m.slug = 'sdk-faults' GROUP BY 1`,
        [p.projectId],
      );
      const beatsTwice = hb.rows.filter((r) => r.n !== 1).map((r) => `${r.seq}×${r.n}`);
      assert.deepEqual(beatsTwice, [], "heartbeats recorded more than once");
      const recorded = new Set(hb.rows.map((r) => r.seq));
      assert.deepEqual(
        beats.ok.filter((k) => !recorded.has(k)),
        [],
        "heartbeats answered but not recorded",
      );
      assert.ok(beats.ok.length >= 3, `only ${beats.ok.length} heartbeats went through`);
      const hc = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM ingest_ids WHERE project_id = $1 AND kind = 'heartbeat'",
        [p.projectId],
      );
      assert.equal(hc.rows[0].n, hb.rows.length, "ingest_ids heartbeat claims ↔ recorded heartbeats");
    } finally {
      await db.end();
    }
  });
});
