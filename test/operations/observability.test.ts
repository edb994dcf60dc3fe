// What operators see: one structured log line per request and Prometheus metrics.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { parseConfig } from "../../src/config/index.js";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { metricTypes, promlint } from "../helpers/promlint.js";

/** `promtool check metrics` on `text`: its exit code and output, or undefined when promtool is not installed. */
function promtoolCheck(text: string): Promise<{ code: number | null; output: string } | undefined> {
  return new Promise((resolve) => {
    const child = spawn("promtool", ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", () => resolve(undefined)); // ENOENT: not installed
    child.on("close", (code) => resolve({ code, output }));
    child.stdin.on("error", () => undefined);
    child.stdin.end(text);
  });
}

const lines: any[] = [];
let t: TestApp;
let p: ProjectFixture;

before(async () => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split("\n")) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  t = await startTestApp({}, { log: pino({ level: "info" }, sink) });
  p = await project(t.rest);
});
after(() => t.close());

describe("logs and metrics", () => {
  it("logs each request with request id, project id, route, status and latency", async () => {
    const r = await t.rest.post(
      "/v1/events",
      { type: "signup" },
      { key: p.key, headers: { "x-request-id": "req-abc-123" } },
    );
    assert.equal(r.status, 202);
    assert.equal(r.headers.get("x-request-id"), "req-abc-123");
    await new Promise((res) => setTimeout(res, 50));
    const line = lines.find((l) => l.msg === "request" && l.requestId === "req-abc-123");
    assert.ok(line, "no request log line");
    assert.equal(line.projectId, p.projectId);
    assert.equal(line.route, "/v1/events");
    assert.equal(line.status, 202);
    assert.equal(line.protocol, "rest");
    assert.equal(typeof line.ms, "number");
    assert.ok(!JSON.stringify(lines).includes(p.key), "an API key reached the logs");
  });

  it("serves Prometheus metrics for requests, ingestion, schedulers and deliveries", async () => {
    await t.rest.post("/v1/events/batch", { events: [{ type: "a" }, { type: "b" }] }, { key: p.key });
    assert.ok(t.metricsUrl, "no metrics port");
    assert.notEqual(new URL(t.metricsUrl).port, String(t.port));
    const r = await fetch(`${t.metricsUrl}/metrics`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /text\/plain/);
    const text = await r.text();
    for (const name of [
      "vigil_http_requests_total",
      "vigil_http_request_duration_seconds_bucket",
      "vigil_ingest_queue_depth",
      "vigil_ingest_commit_events_bucket",
      "vigil_ingest_commit_duration_seconds_bucket",
      "vigil_scheduler_lag_seconds",
      "vigil_webhook_attempts_total",
      "vigil_process_resident_memory_bytes",
      // Registered by the features that record them (each feature owns its metrics): same names.
      "vigil_ingest_commits_total",
      "vigil_events_accepted_total",
      "vigil_incident_transitions_total",
      "vigil_analytics_block_queries_total",
      "vigil_rate_limited_total",
      "grpc_server_handled_total",
    ]) {
      assert.ok(text.includes(name), `missing ${name}`);
    }
    assert.match(text, /vigil_events_accepted_total \d+/);
    const accepted = Number(/vigil_events_accepted_total (\d+)/.exec(text)![1]);
    assert.ok(accepted >= 3, `accepted ${accepted}`);
    assert.match(text, /vigil_http_requests_total\{protocol="rest",route="\/v1\/events\/batch",status="202"\} 1/);
  });

  it("passes promtool check metrics: counters and only counters end in _total", async () => {
    // Some traffic first, so labelled families have series (labels are linted too).
    await t.rest.post("/v1/events", { type: "lint" }, { key: p.key });
    await t.rest.get(`/v1/projects/${p.projectId}/events`, { key: p.key });
    const text = await (await fetch(`${t.metricsUrl}/metrics`)).text();
    assert.deepEqual(promlint(text), []);
    const types = metricTypes(text);
    assert.ok(types.size > 20, `only ${types.size} families`);
    for (const [name, type] of types) assert.equal(name.endsWith("_total"), type === "counter", `${name} is a ${type}`);
    // The per-type gauges stay: their sum is what the dropped *_total gauges showed.
    assert.equal(types.get("vigil_nodejs_active_handles"), "gauge");
    // promtool itself too, where it is installed (go install github.com/prometheus/prometheus/cmd/promtool@latest).
    const promtool = await promtoolCheck(text);
    if (promtool !== undefined) assert.equal(promtool.code, 0, promtool.output);
  });

  it("does not serve /metrics on the API port (REST, any method), only on METRICS_PORT", async () => {
    for (const method of ["GET", "HEAD", "POST"]) {
      const r = await fetch(`${t.url}/metrics`, { method });
      assert.equal(r.status, 404, `${method} /metrics on the API port`);
      const text = await r.text();
      assert.ok(!text.includes("vigil_"), "metrics leaked on the API port");
    }
    const other = await fetch(`${t.metricsUrl}/v1/events`);
    assert.equal(other.status, 404, "the metrics port serves only /metrics");
    const head = await fetch(`${t.metricsUrl}/metrics`, { method: "HEAD" });
    assert.equal(head.status, 200);
  });

  it("binds METRICS_PORT to loopback by default, and METRICS_PORT=off serves no metrics", async () => {
    // Unset: the default port, not required (taken, a warning: test/operations/startup-failure.test.ts).
    assert.deepEqual(parseConfig({}).metrics, { host: "127.0.0.1", port: 9464, required: false });
    assert.deepEqual(parseConfig({ METRICS_PORT: "9464" }).metrics, { host: "127.0.0.1", port: 9464, required: true });
    assert.equal(parseConfig({ METRICS_PORT: "off" }).metrics, undefined);
    assert.throws(() => parseConfig({ METRICS_PORT: "70000" }), /METRICS_PORT/);
  });

  it("a worker-role node serves /metrics on METRICS_PORT too, not on its API port", async () => {
    const w = await startTestApp({ ROLE: "worker" });
    try {
      assert.equal((await fetch(`${w.url}/health`)).status, 200);
      const api = await fetch(`${w.url}/metrics`);
      assert.equal(api.status, 404);
      assert.ok(!(await api.text()).includes("vigil_"));
      const m = await fetch(`${w.metricsUrl}/metrics`);
      assert.equal(m.status, 200);
      assert.match(await m.text(), /vigil_process_resident_memory_bytes/);
    } finally {
      await w.close();
    }
  });
});
