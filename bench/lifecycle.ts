// `npm run bench lifecycle`: the data lifecycle routes of issue #19 against a spawned Vigil (the
// `npm start` command line) on an embedded PostgreSQL, all in one run:
//   export   POST /v1/projects/:id/events/export (NDJSON) of a SMALL and a LARGE project: events/s
//            and the server's peak RSS during each (sampled from /proc every 50 ms); flat memory
//            means the two peaks are about equal.
//   user-export  GET /v1/projects/:id/users/:userId/export (NDJSON) of a user holding
//            USER_EXPORT_EVENTS events of about 9 KB each (issue #29's case): the server's RSS before
//            and its peak during one export, then during four at once; flat memory means the peaks
//            stay near the RSS before, whatever the person's size.
//   delete   DELETE /v1/projects/:id/users/:userId of a user holding USER_EVENTS events of the
//            LARGE project, then GET .../jobs/:jobId polled until it succeeds: the time it took.
//   ingest   POST /v1/events/batch throughput (closed loop, CONCURRENCY clients) into a fresh
//            project, first alone, then while a retention pass trims RETENTION_EVENTS expired events
//            of another project (PATCH retentionDays; RETENTION_INTERVAL_MS=1000).
//
// Sizes (environment): BENCH_LIFECYCLE_SMALL (default 1,000,000), BENCH_LIFECYCLE_LARGE
// (10,000,000), BENCH_LIFECYCLE_USER_EVENTS (100,000, part of LARGE), BENCH_LIFECYCLE_USER_EXPORT_EVENTS
// (10,000, a project of its own), BENCH_LIFECYCLE_RETENTION_EVENTS
// (2,000,000), BENCH_LIFECYCLE_NEIGHBOUR_EVENTS (200,000: a project without retention sharing the
// expiring project's weeks, so the pass trims rows rather than dropping partitions), BENCH_LIFECYCLE_INGEST_S (20, the longest ingest window), BENCH_LIFECYCLE_CONCURRENCY
// (4), BENCH_LIFECYCLE_ONLY (comma-separated phases: export,user-export,delete,ingest), BENCH_LIFECYCLE_PASS_WAIT_S
// (1800, how long to wait for the retention pass). Events are bulk-loaded
// with SQL (bench/_events-load.ts) with the service's rollup/slot backfill; the deleted user's
// event_user_hours rows (its access path) are built with the same SQL as migration 1005.
// Writes the "Data lifecycle" section of docs/benchmarks.md (with the sizes run) unless
// BENCH_LIFECYCLE_NO_WRITE=1.
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { parseConfig } from "../src/config/index.js";
import { startEmbeddedPostgres } from "../src/storage/embedded.js";
import { createPool, type Db } from "../src/storage/db.js";
import { GENEROUS_LIMITS } from "../test/helpers/app.js";
import { finishBackfill, loadGenerated } from "./_events-load.js";
import { freePort, post, spawnVigil, waitHealthy, writeBenchSection } from "./_shared.js";

const num = (name: string, d: number) => Number(process.env[name] ?? d);
const SMALL = num("BENCH_LIFECYCLE_SMALL", 1_000_000);
const LARGE = num("BENCH_LIFECYCLE_LARGE", 10_000_000);
const USER_EVENTS = num("BENCH_LIFECYCLE_USER_EVENTS", 100_000);
const USER_EXPORT_EVENTS = num("BENCH_LIFECYCLE_USER_EXPORT_EVENTS", 10_000);
const RETENTION_EVENTS = num("BENCH_LIFECYCLE_RETENTION_EVENTS", 2_000_000);
/** Events of a project without retention in the expiring project's weeks: no week can be dropped whole. */
const NEIGHBOUR_EVENTS = num("BENCH_LIFECYCLE_NEIGHBOUR_EVENTS", 200_000);
/** The retention settings the spawned Vigil runs with (it inherits this environment). */
const { retention } = parseConfig({
  RETENTION_BATCH_ROWS: process.env.RETENTION_BATCH_ROWS,
  RETENTION_DUTY_CYCLE: process.env.RETENTION_DUTY_CYCLE,
});
const INGEST_S = num("BENCH_LIFECYCLE_INGEST_S", 20);
const CONCURRENCY = num("BENCH_LIFECYCLE_CONCURRENCY", 4);
/** How long to wait for the retention pass to finish (after the ingest window) before giving up. */
const PASS_WAIT_S = num("BENCH_LIFECYCLE_PASS_WAIT_S", 1800);
const ONLY = (process.env.BENCH_LIFECYCLE_ONLY ?? "export,user-export,delete,ingest").split(",");
const FULL =
  SMALL === 1_000_000 &&
  LARGE === 10_000_000 &&
  USER_EVENTS === 100_000 &&
  RETENTION_EVENTS === 2_000_000 &&
  ["export", "delete", "ingest"].every((p) => ONLY.includes(p));
const DAY = 86_400_000;
const DELETED_USER = "bench-delete-me";
const EXPORTED_USER = "bench-export-me";
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

/** One event per row number g over [$2, $2 + $3 ms); every `every`-th row belongs to DELETED_USER. */
const gen = (every: number) => `
  WITH s AS (
    SELECT g, $2::timestamptz + ((g * 7919 % 1000003) / 1000003.0 * $3::float8) * interval '1 millisecond' AS ts
    FROM generate_series($4::bigint, $5::bigint) AS g
  )
  SELECT $1::text AS project_id, ts,
         (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid AS id,
         (ARRAY['view','view','click','signup','purchase'])[1 + (g % 5)::int] AS type,
         CASE WHEN ${every} > 0 AND g % ${every} = 0 THEN '${DELETED_USER}' ELSE 'user_' || (g % 20000) END AS user_id,
         jsonb_build_object('plan', (ARRAY['free','pro','team'])[1 + (g % 3)::int], 'path', '/p/' || (g % 200), 'amount', (g % 997) / 10.0) AS data,
         jsonb_build_object('ip', '10.0.' || (g % 250) || '.' || (g % 200), 'userAgent', 'Mozilla/5.0 bench') AS context,
         '{"env":"production"}'::jsonb AS tags
  FROM s`;

/** Events of EXPORTED_USER alone, each with about 9 KB of data (issue #29: 10,000 such made 93.5 MB). */
const genUser = `
  WITH s AS (
    SELECT g, $2::timestamptz + ((g * 7919 % 1000003) / 1000003.0 * $3::float8) * interval '1 millisecond' AS ts
    FROM generate_series($4::bigint, $5::bigint) AS g
  )
  SELECT $1::text AS project_id, ts,
         (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid AS id,
         'visit'::text AS type, '${EXPORTED_USER}'::text AS user_id,
         jsonb_build_object('n', g, 'note', repeat(md5(g::text), 280)) AS data,
         '{}'::jsonb AS context, '{}'::jsonb AS tags
  FROM s`;

/** A user's access path (event_user_hours), built from the loaded events with migration 1005's SQL. */
async function userHours(db: Db, projectId: string, userId: string): Promise<void> {
  await db.query(
    `INSERT INTO event_user_hours (project_id, user_id, hour, minutes)
     SELECT project_id, user_id, to_timestamp(h * 3600), bit_or(1::bigint << m)
     FROM (SELECT project_id, user_id, floor(extract(epoch FROM ts) / 3600)::bigint AS h,
                  (floor(extract(epoch FROM ts) / 60)::bigint % 60)::int AS m
           FROM events WHERE project_id = $1 AND user_id = $2) x
     GROUP BY project_id, user_id, h ON CONFLICT DO NOTHING`,
    [projectId, userId],
  );
}

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : 0;
}

/** Samples the process's RSS every 50 ms while `fn` runs; the peak in MB. */
async function peakRss<T>(pid: number, fn: () => Promise<T>): Promise<{ value: T; peakMb: number; startMb: number }> {
  const startMb = rssKb(pid) / 1024;
  let peak = startMb;
  const timer = setInterval(() => (peak = Math.max(peak, rssKb(pid) / 1024)), 50);
  try {
    const value = await fn();
    return { value, peakMb: Math.max(peak, rssKb(pid) / 1024), startMb };
  } finally {
    clearInterval(timer);
  }
}

class Api {
  constructor(
    readonly base: string,
    public cookie = "",
  ) {}
  async req(method: string, p: string, body?: unknown, key?: string): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = {};
    if (key) headers.authorization = `Bearer ${key}`;
    else if (this.cookie) headers.cookie = this.cookie;
    if (body !== undefined || (!key && method !== "GET" && method !== "DELETE"))
      headers["content-type"] = "application/json";
    const r = await fetch(this.base + p, {
      method,
      headers,
      body:
        body !== undefined ? JSON.stringify(body) : !key && method !== "GET" && method !== "DELETE" ? "{}" : undefined,
    });
    const text = await r.text();
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    if (method === "POST" && p === "/v1/auth/signup") this.cookie = (r.headers.getSetCookie()[0] ?? "").split(";")[0];
    return { status: r.status, body: parsed };
  }
  async project(name: string): Promise<{ id: string; key: string }> {
    const p = await this.req("POST", "/v1/projects", { name, platform: "node" });
    if (p.status !== 201) throw new Error(`create project: ${p.status} ${JSON.stringify(p.body)}`);
    const k = await this.req("POST", `/v1/projects/${p.body.data.id}/api-keys`, { name, environment: "production" });
    if (k.status !== 201) throw new Error(`create key: ${k.status} ${JSON.stringify(k.body)}`);
    return { id: p.body.data.id, key: k.body.data.secret };
  }
}

/** Streams an NDJSON export; the lines and bytes received and the seconds it took. */
async function exportAll(
  base: string,
  p: { id: string; key: string },
  time: { start: string; end: string },
): Promise<{ lines: number; bytes: number; s: number }> {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/projects/${p.id}/events/export`, {
    method: "POST",
    headers: { authorization: `Bearer ${p.key}`, "content-type": "application/json" },
    body: JSON.stringify({ time, format: "ndjson" }),
  });
  if (r.status !== 200 || !r.body) throw new Error(`export: ${r.status} ${await r.text()}`);
  let lines = 0;
  let bytes = 0;
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) lines++;
  }
  return { lines, bytes, s: (performance.now() - t0) / 1000 };
}

/** Streams a user export (NDJSON); the lines and bytes received. */
async function exportUser(
  base: string,
  p: { id: string; key: string },
  userId: string,
): Promise<{ lines: number; bytes: number }> {
  const r = await fetch(`${base}/v1/projects/${p.id}/users/${userId}/export`, {
    headers: { authorization: `Bearer ${p.key}` },
  });
  if (r.status !== 200 || !r.body) throw new Error(`user export: ${r.status} ${await r.text()}`);
  let lines = 0;
  let bytes = 0;
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) lines++;
  }
  return { lines, bytes };
}

/** Closed-loop ingest of batches of 200 events by CONCURRENCY clients until `stop()` or `maxS`. */
async function ingest(
  port: number,
  key: string,
  maxS: number,
  stop: () => boolean = () => false,
): Promise<{ events: number; s: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const t0 = performance.now();
  let events = 0;
  let seq = 0;
  const loop = async () => {
    while ((performance.now() - t0) / 1000 < maxS && !stop()) {
      const ts = new Date().toISOString();
      const batch = Array.from({ length: 200 }, () => {
        seq++;
        return {
          type: ["view", "click", "signup"][seq % 3],
          timestamp: ts,
          userId: `live-${seq % 500}`,
          data: { n: seq },
        };
      });
      const r = await post(agent, port, "/v1/events/batch", JSON.stringify({ events: batch }), key);
      if (r.status !== 202) throw new Error(`events/batch: ${r.status} ${r.text.slice(0, 200)}`);
      events += batch.length;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  agent.destroy();
  return { events, s: (performance.now() - t0) / 1000 };
}

async function load(
  db: Db,
  projectId: string,
  events: number,
  start: number,
  spanMs: number,
  every = 0,
  sql = gen(every),
) {
  process.stdout.write(`loading ${fmt(events)} events`);
  const t0 = performance.now();
  await loadGenerated(db, projectId, sql, { events, start, spanMs });
  await finishBackfill(db, projectId, { start, end: start + spanMs });
  console.log(` ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

async function main(): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "vigil-bench-lifecycle-"));
  const pgh = await startEmbeddedPostgres(dir, pino({ level: "warn" }));
  const db = createPool(pgh.url, 4);
  db.on("error", () => undefined);
  let vigil: ChildProcess | undefined;
  const out: string[] = [];
  const problems = Object.assign([] as string[], {
    push(...xs: string[]): number {
      for (const x of xs) console.error(`problem: ${x}`);
      return Array.prototype.push.apply(this, xs);
    },
  });
  try {
    const port = await freePort();
    vigil = spawnVigil({
      databaseUrl: pgh.url,
      port,
      dataDir: path.join(dir, "vigil"),
      env: {
        ANALYTICS_SLOT_INTERVAL_MS: "0",
        ANALYTICS_BLOCK_INTERVAL_MS: "0",
        RETENTION_INTERVAL_MS: "1000",
        ...GENEROUS_LIMITS,
      },
    });
    await waitHealthy(port, vigil);
    const pid = vigil.pid!;
    const base = `http://127.0.0.1:${port}`;
    const api = new Api(base);
    const s = await api.req("POST", "/v1/auth/signup", {
      email: `bench-${Date.now()}@example.com`,
      password: "bench password 1",
    });
    if (s.status !== 201) throw new Error(`signup: ${s.status}`);

    const now = Date.now();
    const start = now - 90 * DAY;
    const span = 80 * DAY;
    const time = { start: new Date(start - DAY).toISOString(), end: new Date(now + DAY).toISOString() };
    const small = await api.project("small");
    const large = await api.project("large");
    const every = Math.max(1, Math.floor(LARGE / USER_EVENTS));
    if (ONLY.includes("export")) await load(db, small.id, SMALL, start, span);
    if (ONLY.includes("export") || ONLY.includes("delete")) await load(db, large.id, LARGE, start, span, every);
    const userEvents = Number(
      (
        await db.query("SELECT count(*) AS n FROM events WHERE project_id = $1 AND user_id = $2", [
          large.id,
          DELETED_USER,
        ])
      ).rows[0].n,
    );
    await db.query("VACUUM ANALYZE events");
    console.log(`loaded; machine load average ${os.loadavg()[0].toFixed(1)}`);

    // ---- export ----
    if (ONLY.includes("export")) {
      const rows: string[] = [];
      for (const [label, p, n] of [
        ["small", small, SMALL],
        ["large", large, LARGE],
      ] as const) {
        try {
          const r = await peakRss(pid, () => exportAll(base, p, time));
          if (r.value.lines !== n) problems.push(`export ${label}: ${r.value.lines} lines, expected ${n}`);
          console.log(
            `export ${label}: ${fmt(r.value.lines)} events in ${r.value.s.toFixed(1)} s, peak RSS ${r.peakMb.toFixed(0)} MB`,
          );
          rows.push(
            `| ${fmt(n)} | ${fmt(r.value.lines)} | ${(r.value.bytes / 1048576).toFixed(0)} MB | ${r.value.s.toFixed(1)} s | **${fmt(r.value.lines / r.value.s)}** | ${r.startMb.toFixed(0)} MB | **${r.peakMb.toFixed(0)} MB** |`,
          );
        } catch (err) {
          problems.push(`export ${label}: ${(err as Error).message}`);
        }
      }
      out.push(
        "### Export (NDJSON, `POST /v1/projects/:id/events/export`)",
        "",
        "The whole range of a project, streamed to a client that reads as fast as it can; the server's RSS sampled every 50 ms (`/proc/<pid>/status` VmRSS).",
        "",
        "| Project's events | Lines received | Bytes | Time | Events/s | Server RSS before | Server peak RSS |",
        "|---|---|---|---|---|---|---|",
        ...rows,
        "",
      );
    }

    // ---- one person's export ----
    if (ONLY.includes("user-export")) {
      try {
        const person = await api.project("person");
        await load(db, person.id, USER_EXPORT_EVENTS, start, span, 0, genUser);
        await userHours(db, person.id, EXPORTED_USER);
        const id = await api.req("POST", `/v1/projects/${person.id}/identify`, { externalId: EXPORTED_USER });
        if (id.status !== 200) throw new Error(`identify: ${id.status} ${JSON.stringify(id.body)}`);
        const rows: string[] = [];
        for (const n of [1, 4]) {
          const t0 = performance.now();
          const r = await peakRss(pid, () =>
            Promise.all(Array.from({ length: n }, () => exportUser(base, person, EXPORTED_USER))),
          );
          const took = (performance.now() - t0) / 1000;
          for (const x of r.value)
            if (x.lines !== USER_EXPORT_EVENTS + 1)
              problems.push(`user export: ${x.lines} lines, expected ${USER_EXPORT_EVENTS + 1}`);
          const mb = r.value[0].bytes / 1048576;
          console.log(
            `user export x${n}: ${mb.toFixed(1)} MB each in ${took.toFixed(1)} s, RSS ${r.startMb.toFixed(0)} -> peak ${r.peakMb.toFixed(0)} MB`,
          );
          rows.push(
            `| ${n} | ${fmt(r.value[0].lines)} | ${mb.toFixed(1)} MB | ${took.toFixed(1)} s | ${r.startMb.toFixed(0)} MB | **${r.peakMb.toFixed(0)} MB** | **+${(r.peakMb - r.startMb).toFixed(0)} MB** |`,
          );
        }
        out.push(
          "### One person's export (NDJSON, `GET /v1/projects/:id/users/:userId/export`)",
          "",
          `A user with ${fmt(USER_EXPORT_EVENTS)} events of about 9 KB each (issue #29's case: built in memory, one such answer was 93.5 MB and +180 MB of RSS, four at once took the process from 640 MB to 1.41 GB). Exports read as fast as the client can, one, then four at once; the server's RSS sampled every 50 ms.`,
          "",
          "| Exports at once | Lines each | Bytes each | Time | Server RSS before | Server peak RSS | Peak − before |",
          "|---|---|---|---|---|---|---|",
          ...rows,
          "",
        );
      } catch (err) {
        problems.push(`user export: ${(err as Error).message}`);
      }
    }

    // ---- delete a user ----
    if (ONLY.includes("delete")) {
      try {
        // The user's access path (event_user_hours, migration 1005's SQL) and record (identify).
        await userHours(db, large.id, DELETED_USER);
        const id = await api.req("POST", `/v1/projects/${large.id}/identify`, { externalId: DELETED_USER });
        if (id.status !== 200) throw new Error(`identify: ${id.status} ${JSON.stringify(id.body)}`);
        const t0 = performance.now();
        const d = await api.req("DELETE", `/v1/projects/${large.id}/users/${DELETED_USER}`);
        if (d.status !== 202) throw new Error(`DELETE user: ${d.status} ${JSON.stringify(d.body)}`);
        const jobId = d.body.data.jobId;
        let status = d.body.data.status;
        let job: any;
        while (status !== "succeeded" && status !== "failed") {
          await new Promise((r) => setTimeout(r, 200));
          job = await api.req("GET", `/v1/projects/${large.id}/jobs/${jobId}`);
          if (job.status !== 200) throw new Error(`GET job: ${job.status} ${JSON.stringify(job.body)}`);
          status = job.body.data.status;
          if ((performance.now() - t0) / 1000 > 3600) throw new Error("the job did not end within an hour");
        }
        const took = (performance.now() - t0) / 1000;
        const left = Number(
          (
            await db.query("SELECT count(*) AS n FROM events WHERE project_id = $1 AND user_id = $2", [
              large.id,
              DELETED_USER,
            ])
          ).rows[0].n,
        );
        if (status !== "succeeded" || left !== 0) problems.push(`delete user: job ${status}, ${left} events left`);
        console.log(`delete user: ${fmt(userEvents)} events, job ${status} in ${took.toFixed(1)} s`);
        out.push(
          "### Deleting a user (`DELETE /v1/projects/:id/users/:userId`, then `GET .../jobs/:jobId` every 200 ms)",
          "",
          `A user with ${fmt(userEvents)} events (spread over 80 days) in a project of ${fmt(LARGE)} events: the job **${status}** in **${took.toFixed(1)} s** from the DELETE to the first poll that saw it end (${fmt(userEvents / took)} events/s); ${left} of the user's events left afterwards (checked with SQL).`,
          "",
        );
      } catch (err) {
        problems.push(`delete user: ${(err as Error).message}`);
      }
    }

    // ---- ingest with and without a retention pass ----
    if (ONLY.includes("ingest")) {
      try {
        const live = await api.project("live");
        const old = await api.project("expiring");
        // Every event 30 to 60 days old: all expire with retentionDays 7. A neighbour without
        // retention has events in the same weeks, so the pass must trim rows (the harder path).
        await load(db, old.id, RETENTION_EVENTS, now - 60 * DAY, 30 * DAY);
        const neighbour = await api.project("kept");
        await load(db, neighbour.id, NEIGHBOUR_EVENTS, now - 60 * DAY, 30 * DAY);
        const alone = await ingest(port, live.key, INGEST_S);
        console.log(`ingest alone: ${fmt(alone.events / alone.s)} events/s`);
        const cutoff = new Date(now - 8 * DAY);
        const expiredLeft = async () =>
          (await db.query("SELECT 1 FROM events WHERE project_id = $1 AND ts < $2 LIMIT 1", [old.id, cutoff]))
            .rowCount !== 0;
        const patch = await api.req("PATCH", `/v1/projects/${old.id}`, { retentionDays: 7 });
        if (patch.status !== 200) throw new Error(`PATCH retentionDays: ${patch.status} ${JSON.stringify(patch.body)}`);
        const t0 = performance.now();
        let doneAt: number | undefined;
        const watch = (async () => {
          while (doneAt === undefined && (performance.now() - t0) / 1000 < Math.max(INGEST_S, PASS_WAIT_S)) {
            if (!(await expiredLeft())) doneAt = (performance.now() - t0) / 1000;
            else await new Promise((r) => setTimeout(r, 250));
          }
        })();
        const during = await ingest(port, live.key, INGEST_S, () => doneAt !== undefined);
        await watch;
        // The same load alone once more: the machine is shared, so "alone" is bracketed on both sides.
        const aloneAfter = await ingest(port, live.key, INGEST_S);
        console.log(`ingest alone, after: ${fmt(aloneAfter.events / aloneAfter.s)} events/s`);
        const aloneRate = (alone.events + aloneAfter.events) / (alone.s + aloneAfter.s);
        if (doneAt === undefined) problems.push(`retention: expired events remain ${PASS_WAIT_S} s after the PATCH`);
        console.log(
          `ingest during retention: ${fmt(during.events / during.s)} events/s over ${during.s.toFixed(1)} s; pass done after ${doneAt?.toFixed(1)} s`,
        );
        out.push(
          "### Ingest throughput while a retention pass runs",
          "",
          `Closed loop: ${CONCURRENCY} clients each posting \`POST /v1/events/batch\` of 200 events (current timestamps) into one project, as fast as answered. First alone for ${INGEST_S} s; then \`PATCH\` another project to \`retentionDays: 7\` while it holds ${fmt(RETENTION_EVENTS)} events 30 to 60 days old, in weeks shared with ${fmt(NEIGHBOUR_EVENTS)} events of a project without retention (so no week is dropped whole: the pass deletes rows in batches of RETENTION_BATCH_ROWS=${retention.batchRows}, RETENTION_DUTY_CYCLE=${retention.dutyCycle}${process.env.RETENTION_DUTY_CYCLE ? "" : " (the default)"}, RETENTION_INTERVAL_MS=1000), and the same load until the pass had removed every expired event (checked every 250 ms with SQL) or ${INGEST_S} s; then alone again for ${INGEST_S} s.`,
          "",
          "| | Window | Events ingested | Events/s |",
          "|---|---|---|---|",
          `| alone, before | ${alone.s.toFixed(1)} s | ${fmt(alone.events)} | **${fmt(alone.events / alone.s)}** |`,
          `| during the retention pass | ${during.s.toFixed(1)} s | ${fmt(during.events)} | **${fmt(during.events / during.s)}** (${((100 * during.events) / during.s / aloneRate).toFixed(0)}% of the two alone windows together) |`,
          `| alone, after | ${aloneAfter.s.toFixed(1)} s | ${fmt(aloneAfter.events)} | **${fmt(aloneAfter.events / aloneAfter.s)}** |`,
          "",
          doneAt === undefined
            ? `The pass had not removed every expired event ${INGEST_S} s after the PATCH, nor within the ${PASS_WAIT_S} s the bench waited (BENCH_LIFECYCLE_PASS_WAIT_S).`
            : `The pass removed the ${fmt(RETENTION_EVENTS)} expired events ${doneAt.toFixed(1)} s after the PATCH${doneAt > during.s ? " (after the ingest window ended)" : ""}.`,
          "",
        );
      } catch (err) {
        problems.push(`ingest/retention: ${(err as Error).message}`);
      }
    }

    const sizes = Object.entries(process.env)
      .filter(([k]) => k.startsWith("BENCH_LIFECYCLE_") && k !== "BENCH_LIFECYCLE_NO_WRITE")
      .map(([k, v]) => `${k}=${v}`)
      .sort()
      .join(" ");
    const body = [
      `Run ${new Date().toISOString().slice(0, 10)}: \`${sizes ? `${sizes} ` : ""}npm run bench lifecycle\`${FULL ? " (the full sizes of the issue)" : " — **a reduced run**, not the issue's sizes (1M / 10M events, a user with 100,000 events)"}.`,
      `Phases run: ${ONLY.join(", ")}. One spawned Vigil (\`npm start\`'s command line, ROLE=all) on an embedded PostgreSQL; events bulk-loaded with SQL (bench/_events-load.ts) with the service's rollup and slot backfill.`,
      `Machine: 2 cores, shared with other work (1-minute load average ${os.loadavg()[0].toFixed(1)} at the end).`,
      "",
      ...out,
      ...(problems.length ? ["Problems in this run:", "", ...problems.map((x) => `* ${x}`), ""] : []),
    ].join("\n");
    console.log(`\n${body}`);
    if (process.env.BENCH_LIFECYCLE_NO_WRITE !== "1")
      await writeBenchSection("Data lifecycle (`npm run bench lifecycle`)", body);
    return problems.length ? 1 : 0;
  } finally {
    vigil?.kill("SIGTERM");
    if (vigil && vigil.exitCode === null) await new Promise((r) => vigil!.once("exit", r));
    await db.end().catch(() => undefined);
    await pgh.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
