import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino, { type Logger } from "pino";
import { parseConfig } from "../../src/config/index.js";
import { buildApp, type App } from "../../src/server/app.js";
import type { EventsFeature } from "../../src/events/service.js";
import type { Clock } from "../../src/shared/clock.js";
import type { UptimeFeature } from "../../src/uptime/service.js";
import { createTestDatabase } from "./db.js";
import { RestClient } from "./rest.js";
import { temporalPassEnv } from "./temporal.js";
// Any file with an in-process Vigil: an uncaught exception fails it (see ./uncaught.ts).
import "./uncaught.js";

export interface TestApp {
  app: App;
  url: string;
  port: number;
  databaseUrl: string;
  rest: RestClient;
  /** http://127.0.0.1:<METRICS_PORT> (a random port unless the test sets one); undefined when off. */
  metricsUrl?: string;
  close(): Promise<void>;
}

/** The app's events feature: its ingestor, its ingest pipeline (tests may add steps) and its projector (`derived`). */
export function eventsOf(app: App): EventsFeature {
  return app.features.find((f) => f.name === "events") as EventsFeature;
}

/** The app's uptime feature (tests may add incident listeners). */
export function uptimeOf(app: App): UptimeFeature {
  return app.features.find((f) => f.name === "uptime") as UptimeFeature;
}

/** A metric of the app's /metrics registry by its exposed name (each feature registers its own). */
export function metricOf(app: App, name: string) {
  const m = app.deps.telemetry.registry.getSingleMetric(name);
  if (!m) throw new Error(`no metric ${name} on the registry`);
  return m;
}

/** A real Vigil listening on 127.0.0.1:<random port>, on a fresh database. */
export async function startTestApp(
  env: Record<string, string> = {},
  opts: { clock?: Clock; databaseUrl?: string; log?: Logger } = {},
): Promise<TestApp> {
  const databaseUrl = opts.databaseUrl ?? (await createTestDatabase());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "vigil-test-"));
  const config = parseConfig({
    DATABASE_URL: databaseUrl,
    PORT: "0",
    DATA_DIR: dataDir,
    SESSION_SECRET: "test-session-secret-0123456789abcdef",
    LOG_LEVEL: process.env.VIGIL_TEST_LOG ?? "silent",
    PG_POOL_SIZE: "5",
    METRICS_PORT: "0",
    // The dashboard build of this test run (test/run.ts), when it made one.
    ...(process.env.VIGIL_TEST_DASHBOARD_DIR ? { DASHBOARD_DIR: process.env.VIGIL_TEST_DASHBOARD_DIR } : {}),
    ...temporalPassEnv(), // npm test's Temporal pass: TEMPORAL_ADDRESS of the shared dev server
    ...env,
  });
  const app = await buildApp(config, { clock: opts.clock, log: opts.log ?? pino({ level: config.logLevel }) });
  const port = await app.listen(0);
  const url = `http://127.0.0.1:${port}`;
  const metricsUrl = app.metricsPort === undefined ? undefined : `http://127.0.0.1:${app.metricsPort}`;
  return { app, url, port, databaseUrl, rest: new RestClient(url), metricsUrl, close: () => app.close() };
}

/** Rate limits high enough that a test's thousands of requests test the routes, not the limiter. */
export const GENEROUS_LIMITS: Record<string, string> = {
  RATE_LIMIT_EVENTS_PER_MINUTE: "1000000",
  RATE_LIMIT_BATCHES_PER_MINUTE: "1000000",
  RATE_LIMIT_METRICS_PER_MINUTE: "1000000",
  RATE_LIMIT_METRIC_BATCHES_PER_MINUTE: "1000000",
  RATE_LIMIT_HEARTBEATS_PER_MINUTE: "1000000",
  RATE_LIMIT_IDENTIFY_PER_MINUTE: "1000000",
  RATE_LIMIT_WEBHOOK_SENDS_PER_MINUTE: "1000000",
  RATE_LIMIT_WRITES_PER_MINUTE: "1000000",
  RATE_LIMIT_SIGNUPS_PER_MINUTE: "1000000",
  RATE_LIMIT_STATUS_READS_PER_MINUTE: "1000000",
};
