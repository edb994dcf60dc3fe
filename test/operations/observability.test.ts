// What operators see: one structured log line per request and Prometheus metrics.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";

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
    const r = await t.rest.post("/v1/events", { type: "signup" }, { key: p.key, headers: { "x-request-id": "req-abc-123" } });
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
    const r = await fetch(`${t.url}/metrics`);
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
    ]) {
      assert.ok(text.includes(name), `missing ${name}`);
    }
    assert.match(text, /vigil_events_accepted_total \d+/);
    const accepted = Number(/vigil_events_accepted_total (\d+)/.exec(text)![1]);
    assert.ok(accepted >= 3, `accepted ${accepted}`);
    assert.match(text, /vigil_http_requests_total\{protocol="rest",route="\/v1\/events\/batch",status="202"\} 1/);
  });
});
