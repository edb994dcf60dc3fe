import path from "node:path";
import { z } from "zod";

// The only module that reads process.env. Everything else receives a typed Config.

const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");

const optionalUrl = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(z.string().url().optional());

/** METRICS_PORT when unset: the OpenTelemetry Prometheus exporter's default port. */
export const DEFAULT_METRICS_PORT = 9464;

/** PAGERDUTY_EVENTS_URL when unset: PagerDuty's Events API v2 endpoint. */
export const DEFAULT_PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com/v2/enqueue";

/** SMTP_URL: smtp:// (STARTTLS when offered) or smtps:// (TLS from the start), optional user:pass@. */
const smtpUrl = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(
    z
      .string()
      .refine((v) => {
        try {
          const u = new URL(v);
          return (u.protocol === "smtp:" || u.protocol === "smtps:") && u.hostname !== "";
        } catch {
          return false;
        }
      }, "must be smtp://[user:pass@]host[:port] or smtps://[user:pass@]host[:port]")
      .optional(),
  );

const intFrom = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);

export const envSchema = z.object({
  PORT: intFrom(3000),
  HOST: z.string().default("127.0.0.1"),
  GRPC_PORT: z.coerce.number().int().min(0).optional(),
  DATA_DIR: z.string().default("./data"),
  // The dashboard's build (web/, `npm run build:web`); unset: web/dist of this installation.
  DASHBOARD_DIR: z.string().optional(),
  // Empty (compose's `${SESSION_SECRET:-}`) means unset: generated once in DATA_DIR.
  SESSION_SECRET: z
    .string()
    .optional()
    .transform((v) => (v ? v : undefined))
    .pipe(z.string().min(16).optional()),
  DATABASE_URL: optionalUrl.optional(),
  REDIS_URL: optionalUrl.optional(),
  TEMPORAL_ADDRESS: z
    .string()
    .optional()
    .transform((v) => (v ? v : undefined)),
  TEMPORAL_NAMESPACE: z.string().default("default"),
  // Temporal mode (src/temporal/; docs/temporal.md). The task queue defaults to one derived from the
  // database's identity, so two deployments on one cluster never run each other's work.
  TEMPORAL_TASK_QUEUE: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/)
    .optional(),
  TEMPORAL_TLS: bool.default(false),
  TEMPORAL_TLS_CERT_FILE: z.string().optional(),
  TEMPORAL_TLS_KEY_FILE: z.string().optional(),
  TEMPORAL_TLS_CA_FILE: z.string().optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().optional(),
  TEMPORAL_API_KEY: z.string().optional(),
  TEMPORAL_RECONCILE_MS: intFrom(30_000, 100),
  TEMPORAL_MIN_DEADLINE_MS: intFrom(1_000, 0),
  TEMPORAL_IDLE_CHECK_MS: intFrom(3_600_000, 1_000),
  TEMPORAL_SCAN_GAP_MS: intFrom(250, 10),
  TEMPORAL_WAKE_RATE: intFrom(30, 1),
  // Default: half the pool (a check holds a connection; more at once only queue on the pool).
  TEMPORAL_UPTIME_CONCURRENCY: z.coerce.number().int().min(1).optional(),
  TEMPORAL_WEBHOOK_CONCURRENCY: intFrom(100, 1),
  TEMPORAL_SHUTDOWN_GRACE_MS: intFrom(10_000, 0),
  // Where a worker keeps its built workflow bundle (src/temporal/bundle-cache.ts); default DATA_DIR/temporal-bundles.
  TEMPORAL_BUNDLE_DIR: z.string().min(1).optional(),
  // How often every node asks the Temporal frontend whether it answers (src/temporal/probe.ts; /health).
  TEMPORAL_PROBE_MS: intFrom(5_000, 100),
  ROLE: z.enum(["all", "api", "worker"]).default("all"),
  SIGNUP: z.enum(["open", "closed"]).default("open"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  RATE_LIMIT_EVENTS_PER_MINUTE: intFrom(1000, 1),
  RATE_LIMIT_BATCHES_PER_MINUTE: intFrom(100, 1),
  // Limits of the other write routes (src/shared/ratelimit.ts; docs/operations.md).
  RATE_LIMIT_METRICS_PER_MINUTE: intFrom(1000, 1),
  RATE_LIMIT_METRIC_BATCHES_PER_MINUTE: intFrom(100, 1),
  RATE_LIMIT_HEARTBEATS_PER_MINUTE: intFrom(10_000, 1),
  RATE_LIMIT_IDENTIFY_PER_MINUTE: intFrom(600, 1),
  RATE_LIMIT_WEBHOOK_SENDS_PER_MINUTE: intFrom(60, 1),
  RATE_LIMIT_WRITES_PER_MINUTE: intFrom(300, 1),
  RATE_LIMIT_SIGNUPS_PER_MINUTE: intFrom(30, 1),
  RATE_LIMIT_STATUS_READS_PER_MINUTE: intFrom(600, 1),
  // Public status pages (src/status/; docs/pages.md): a page is computed at most once per this many ms per node.
  STATUS_PAGE_REFRESH_MS: intFrom(5_000, 50),
  // Status page subscribers (src/subscribers/; docs/pages.md "Subscribers"): subscription requests
  // per client address per minute and per target address per hour, and confirmed or pending
  // subscribers per page (409 beyond, answered as the 202 to the public).
  RATE_LIMIT_SUBSCRIBES_PER_MINUTE: intFrom(10, 1),
  RATE_LIMIT_SUBSCRIBES_PER_EMAIL_PER_HOUR: intFrom(3, 1),
  MAX_SUBSCRIBERS_PER_PAGE: intFrom(10_000, 1),
  LOGIN_MAX_FAILURES_PER_ACCOUNT: intFrom(10, 1),
  LOGIN_MAX_FAILURES_PER_ADDRESS: intFrom(50, 1),
  LOGIN_WINDOW_SECONDS: intFrom(900, 1),
  MAX_MONITORS_PER_PROJECT: intFrom(1000, 1),
  // Open manual incidents per project (src/uptime/manual.ts; docs/uptime.md): 409 beyond.
  MAX_OPEN_INCIDENTS_PER_PROJECT: intFrom(50, 1),
  // Maintenance windows per project (src/uptime/maintenance.ts; docs/uptime.md): 409 beyond.
  MAX_MAINTENANCES_PER_PROJECT: intFrom(100, 1),
  // Alerts per project (src/alerts/; docs/alerts.md): 409 beyond. Each also holds a monitor's place.
  MAX_ALERTS_PER_PROJECT: intFrom(100, 1),
  // Alert evaluations running at once per node, embedded scheduler and Temporal deadline scan alike
  // (src/alerts/scheduler.ts, temporal.ts). Default: 4 x the pool size (most of a run waits for its
  // sample's batch, alerts/batch.ts; a connection is held only for a statement or the short writing
  // transaction, more wait in the pool's queue).
  ALERT_EVALUATION_CONCURRENCY: z.coerce.number().int().min(1).optional(),
  // Records per project (src/shared/project-cap.ts; docs/security.md "Records"): 409 beyond.
  MAX_WEBHOOKS_PER_PROJECT: intFrom(50, 1),
  MAX_API_KEYS_PER_PROJECT: intFrom(100, 1),
  MAX_MEMBERS_PER_PROJECT: intFrom(100, 1),
  MAX_BODY_BYTES: intFrom(10 * 1024 * 1024, 1024),
  INGEST_FLUSH_MS: intFrom(2, 0),
  INGEST_MAX_BATCH: intFrom(2000, 1),
  INGEST_MAX_IN_FLIGHT: intFrom(2, 1),
  // Request-body bytes of the ingestion routes held at once (read, inflated, parsed), per caller and
  // per node (shared/inflight.ts); each raised to MAX_BODY_BYTES if set below it.
  INGEST_INFLIGHT_BYTES_PER_KEY: intFrom(32 * 1024 * 1024, 1024),
  INGEST_INFLIGHT_BYTES: intFrom(256 * 1024 * 1024, 1024),
  DERIVED_DELAY_MS: intFrom(1000, 0),
  WEBHOOK_BACKOFF_BASE_MS: intFrom(10_000, 1),
  WEBHOOK_MAX_ATTEMPTS: intFrom(8, 1),
  WEBHOOK_TIMEOUT_MS: intFrom(10_000, 1),
  WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  // A webhook whose deliveries have all failed this long is disabled (src/webhooks/failing.ts); a
  // fraction of a day is allowed (tests).
  WEBHOOK_DISABLE_AFTER_DAYS: z.coerce.number().positive().max(3650).default(5),
  // Notification channels (src/webhooks/targets/; docs/webhooks.md): email through SMTP_URL from
  // MAIL_FROM, PagerDuty's endpoint, and the public address used for links in messages.
  SMTP_URL: smtpUrl.optional(),
  MAIL_FROM: z
    .string()
    .trim()
    .regex(/^(?:[^<>\r\n]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/, "an address, or Name <address>")
    .default("Vigil <vigil@localhost>"),
  PAGERDUTY_EVENTS_URL: z.string().trim().url().default(DEFAULT_PAGERDUTY_EVENTS_URL),
  PUBLIC_URL: optionalUrl.optional(),
  PG_POOL_SIZE: intFrom(10, 1),
  UPTIME_RAW_RETENTION_DAYS: intFrom(7, 1),
  // Runs of cron jobs kept per monitor (the newest; running runs are never pruned): docs/uptime.md "Runs".
  UPTIME_MAX_RUNS_PER_MONITOR: intFrom(1000, 1),
  // Data retention (src/lifecycle/retention.ts; docs/lifecycle.md): the default days kept (unset: forever),
  // the most a project may set (also caps the default), and how often the enforcement pass runs.
  RETENTION_DAYS: z.coerce.number().int().min(1).optional(),
  RETENTION_MAX_DAYS: intFrom(3650, 1),
  RETENTION_INTERVAL_MS: intFrom(3_600_000, 50),
  RETENTION_BATCH_ROWS: intFrom(5_000, 1),
  // The share of wall time the pass's delete batches may take (it rests the rest), so that a large
  // trim leaves ingest its throughput: docs/benchmarks.md "Data lifecycle".
  RETENTION_DUTY_CYCLE: z.coerce.number().gt(0).max(1).default(0.15),
  ANALYTICS_FAST_PATHS: bool.default(true),
  ANALYTICS_SLOT_INTERVAL_MS: intFrom(60_000, 0),
  ANALYTICS_SLOT_SAMPLE: intFrom(20_000, 100),
  ANALYTICS_BLOCK_INTERVAL_MS: intFrom(30_000, 0),
  ANALYTICS_BLOCK_SEAL_MS: intFrom(120_000, 0),
  ANALYTICS_BLOCK_CACHE_MB: intFrom(256, 0),
  // Connections (src/server/listen.ts); 0 turns a timeout or the cap off.
  HTTP_HEADERS_TIMEOUT_MS: intFrom(10_000, 0),
  HTTP_REQUEST_TIMEOUT_MS: intFrom(60_000, 0),
  HTTP_KEEPALIVE_TIMEOUT_MS: intFrom(65_000, 0),
  HTTP_SNIFF_TIMEOUT_MS: intFrom(10_000, 0),
  HTTP2_IDLE_TIMEOUT_MS: intFrom(60_000, 0),
  HTTP_MAX_CONNECTIONS: intFrom(4096, 0),
  // HTTP/2 SETTINGS the server advertises and enforces (src/server/listen.ts): streams open at once
  // on one session, and the size of one request's header list (RFC 9113 6.5.2: names, values, 32 each).
  HTTP2_MAX_CONCURRENT_STREAMS: intFrom(100, 1),
  HTTP2_MAX_HEADER_LIST_BYTES: intFrom(65_536, 1024),
  // What one HTTP/2 session may hold in nghttp2's buffers before it is refused new streams (Node's maxSessionMemory).
  HTTP2_MAX_SESSION_MEMORY_MB: intFrom(10, 1),
  // Prometheus /metrics on its own port (src/server/metrics.ts); "off": not served. Unset: 9464, the
  // OpenTelemetry Prometheus exporter's default, served only if free (taken: a warning, no /metrics).
  METRICS_PORT: z.union([z.literal("off"), z.coerce.number().int().min(0).max(65535)]).optional(),
  METRICS_HOST: z.string().default("127.0.0.1"),
  // Query bounds (src/storage/db.ts, src/analytics/limit.ts; docs/analytics.md). 0: no statement timeout.
  STATEMENT_TIMEOUT_MS: intFrom(30_000, 0),
  ANALYTICS_MAX_FILTER_NODES: intFrom(300, 1),
  ANALYTICS_MAX_CONCURRENT_PER_PROJECT: z.coerce.number().int().min(1).optional(),
  ANALYTICS_QUEUE_TIMEOUT_MS: intFrom(10_000, 0),
  // Standard gRPC services (src/server/grpc-services.ts; docs/operations.md): server reflection on or off, and how
  // often health Watch streams re-read readiness.
  GRPC_REFLECTION: z.enum(["on", "off"]).default("on"),
  GRPC_HEALTH_POLL_MS: intFrom(1_000, 50),
  // Deleted projects' data (src/lifecycle/purge.ts; docs/lifecycle.md): how often the sweeper runs, rows per batch.
  PURGE_INTERVAL_MS: intFrom(60_000, 50),
  PURGE_BATCH_ROWS: intFrom(5_000, 1),
});

export interface Config {
  port: number;
  host: string;
  grpcPort?: number;
  dataDir: string;
  /** The dashboard's built files; undefined: web/dist beside src/. */
  dashboardDir?: string;
  sessionSecret?: string;
  databaseUrl?: string;
  redisUrl?: string;
  temporal?: TemporalConfig;
  role: "all" | "api" | "worker";
  signup: "open" | "closed";
  logLevel: z.infer<typeof envSchema>["LOG_LEVEL"];
  rateLimits: {
    eventsPerMinute: number;
    batchesPerMinute: number;
    metricsPerMinute: number;
    metricBatchesPerMinute: number;
    heartbeatsPerMinute: number;
    identifyPerMinute: number;
    webhookSendsPerMinute: number;
    writesPerMinute: number;
    signupsPerMinute: number;
    statusReadsPerMinute: number;
    /** Subscription requests per client address per minute, and per target email per hour. */
    subscribesPerMinute: number;
    subscribesPerEmailPerHour: number;
  };
  /** Public status pages: how long a computed page is served before it is computed again. */
  statusPages: { refreshMs: number; maxSubscribers: number };
  /** Failed logins allowed per email and per client address within one window. */
  login: { maxFailuresPerAccount: number; maxFailuresPerAddress: number; windowSeconds: number };
  maxBodyBytes: number;
  ingest: {
    flushMs: number;
    maxBatch: number;
    maxInFlight: number;
    derivedDelayMs: number;
    /** Body bytes held at once on the ingestion routes: per caller, per node (at least maxBodyBytes). */
    inflightBytesPerKey: number;
    inflightBytes: number;
  };
  /** `maxPerProject`: webhooks per project (MAX_WEBHOOKS_PER_PROJECT). */
  webhooks: {
    backoffBaseMs: number;
    maxAttempts: number;
    timeoutMs: number;
    allowPrivate: boolean;
    maxPerProject: number;
    /** WEBHOOK_DISABLE_AFTER_DAYS: only failures for this long disable a webhook. */
    disableAfterDays: number;
    /** PAGERDUTY_EVENTS_URL. */
    pagerDutyEventsUrl: string;
  };
  /** Email notifications: SMTP_URL (unset: no email webhooks) and MAIL_FROM. */
  mail: { smtpUrl?: string; from: string };
  /** PUBLIC_URL without a trailing slash: where users reach the dashboard and status pages (links in notifications). */
  publicUrl?: string;
  /** Unrevoked API keys and members (the owner included) per project. */
  projects: { maxApiKeys: number; maxMembers: number };
  pgPoolSize: number;
  /**
   * Raw heartbeats are kept this long (older windows read hourly rollups); each monitor keeps its
   * newest `maxRunsPerMonitor` ended runs.
   */
  uptime: {
    rawRetentionDays: number;
    maxMonitorsPerProject: number;
    maxRunsPerMonitor: number;
    maxOpenIncidentsPerProject: number;
    maxMaintenancesPerProject: number;
  };
  /** Alerts (src/alerts/): alerts per project (MAX_ALERTS_PER_PROJECT). */
  alerts: { maxPerProject: number; evaluationConcurrency: number };
  /** Retention: default days (undefined: forever; capped by maxDays), the most a project may set, pass period. */
  retention: { defaultDays?: number; maxDays: number; intervalMs: number; batchRows: number; dutyCycle: number };
  /** Rollups and typed slots on (default) or off; slot assignment pass interval (0: no worker). */
  analytics: {
    fastPaths: boolean;
    slotIntervalMs: number;
    slotSample: number;
    blockIntervalMs: number;
    blockSealMs: number;
    blockCacheMb: number;
  };
  /** Slow-client limits of the API port(s); 0 turns one off. */
  connections: ConnectionLimits;
  /**
   * Where GET /metrics is served; undefined: nowhere (METRICS_PORT=off). Never on the API port.
   * `required`: METRICS_PORT was set, so a port that cannot be bound stops the start; the default
   * port (unset) taken by something else is a warning and no /metrics.
   */
  metrics?: { host: string; port: number; required: boolean };
  /** Every pooled connection's statement_timeout (0: none); background work lifts it per transaction. */
  statementTimeoutMs: number;
  /** Analytics query bounds: filter tree size, statements per project at once, wait for a slot. */
  analyticsLimits: { maxFilterNodes: number; maxConcurrentPerProject: number; queueTimeoutMs: number };
  /** grpc.reflection.v1/v1alpha served or not; health Watch's readiness poll period. */
  grpc: { reflection: boolean; healthPollMs: number };
  /** The sweeper of deleted projects' rows: pass interval, rows per batch (one short statement). */
  purge: { intervalMs: number; batchRows: number };
}

/** Temporal mode (TEMPORAL_ADDRESS set): src/temporal/, docs/temporal.md. */
export interface TemporalConfig {
  address: string;
  namespace: string;
  /** Base of the task queues (`<base>.uptime`, `<base>.webhooks`); undefined: derived from the database. */
  taskQueue?: string;
  /** TLS (Temporal Cloud, mTLS): off when undefined. */
  tls?: { certFile?: string; keyFile?: string; caFile?: string; serverName?: string };
  /** Temporal Cloud API key (sent as a bearer token; implies TLS). */
  apiKey?: string;
  /** Reconciler period: overdue monitors and deliveries whose workflow is gone are acted on. */
  reconcileMs: number;
  /** The least expected interval + grace a monitor may have (Temporal's cost grows with 1/deadline). */
  minDeadlineMs: number;
  /** A monitor's workflow re-reads its monitor at least this often (it is woken on every change). */
  idleCheckMs: number;
  /** The deadline scan runs at most once per this many ms: detection waits up to this long. */
  scanGapMs: number;
  /** Monitor wakes (outbox rows) sent per second per node at most. */
  wakeRate: number;
  /** Deadline checks (local activities) and webhook sends (activities) at once per worker. */
  uptimeConcurrency: number;
  webhookConcurrency: number;
  /** How long a stopping worker lets running activities finish. */
  shutdownGraceMs: number;
  /** Period of the reachability probe behind /health's `temporalServer` (src/temporal/probe.ts). */
  probeMs: number;
  /** Where built workflow bundles are kept, by the hash of their sources (src/temporal/bundle-cache.ts). */
  bundleDir: string;
}

/** src/server/listen.ts; docs/security.md. */
export interface ConnectionLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  sniffTimeoutMs: number;
  http2IdleTimeoutMs: number;
  maxConnections: number;
  http2MaxConcurrentStreams: number;
  http2MaxHeaderListBytes: number;
  http2MaxSessionMemoryMb: number;
}

export class ConfigError extends Error {}

/** Parses an environment-shaped record into a Config. Throws ConfigError with every problem listed. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  if (e.HTTP_REQUEST_TIMEOUT_MS > 0 && e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS) {
    throw new ConfigError("invalid configuration: HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS");
  }
  if (Boolean(e.TEMPORAL_TLS_CERT_FILE) !== Boolean(e.TEMPORAL_TLS_KEY_FILE)) {
    throw new ConfigError("invalid configuration: TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE go together (mTLS)");
  }
  return {
    port: e.PORT,
    host: e.HOST,
    grpcPort: e.GRPC_PORT,
    dataDir: e.DATA_DIR,
    dashboardDir: e.DASHBOARD_DIR || undefined,
    sessionSecret: e.SESSION_SECRET,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    temporal: e.TEMPORAL_ADDRESS
      ? {
          address: e.TEMPORAL_ADDRESS,
          namespace: e.TEMPORAL_NAMESPACE,
          taskQueue: e.TEMPORAL_TASK_QUEUE,
          tls:
            e.TEMPORAL_TLS || e.TEMPORAL_API_KEY || e.TEMPORAL_TLS_CERT_FILE
              ? {
                  certFile: e.TEMPORAL_TLS_CERT_FILE,
                  keyFile: e.TEMPORAL_TLS_KEY_FILE,
                  caFile: e.TEMPORAL_TLS_CA_FILE,
                  serverName: e.TEMPORAL_TLS_SERVER_NAME,
                }
              : undefined,
          apiKey: e.TEMPORAL_API_KEY,
          reconcileMs: e.TEMPORAL_RECONCILE_MS,
          minDeadlineMs: e.TEMPORAL_MIN_DEADLINE_MS,
          idleCheckMs: e.TEMPORAL_IDLE_CHECK_MS,
          scanGapMs: e.TEMPORAL_SCAN_GAP_MS,
          wakeRate: e.TEMPORAL_WAKE_RATE,
          uptimeConcurrency: e.TEMPORAL_UPTIME_CONCURRENCY ?? Math.max(2, Math.floor(e.PG_POOL_SIZE / 2)),
          webhookConcurrency: e.TEMPORAL_WEBHOOK_CONCURRENCY,
          shutdownGraceMs: e.TEMPORAL_SHUTDOWN_GRACE_MS,
          probeMs: e.TEMPORAL_PROBE_MS,
          bundleDir: e.TEMPORAL_BUNDLE_DIR ?? path.join(e.DATA_DIR, "temporal-bundles"),
        }
      : undefined,
    role: e.ROLE,
    signup: e.SIGNUP,
    logLevel: e.LOG_LEVEL,
    rateLimits: {
      eventsPerMinute: e.RATE_LIMIT_EVENTS_PER_MINUTE,
      batchesPerMinute: e.RATE_LIMIT_BATCHES_PER_MINUTE,
      metricsPerMinute: e.RATE_LIMIT_METRICS_PER_MINUTE,
      metricBatchesPerMinute: e.RATE_LIMIT_METRIC_BATCHES_PER_MINUTE,
      heartbeatsPerMinute: e.RATE_LIMIT_HEARTBEATS_PER_MINUTE,
      identifyPerMinute: e.RATE_LIMIT_IDENTIFY_PER_MINUTE,
      webhookSendsPerMinute: e.RATE_LIMIT_WEBHOOK_SENDS_PER_MINUTE,
      writesPerMinute: e.RATE_LIMIT_WRITES_PER_MINUTE,
      signupsPerMinute: e.RATE_LIMIT_SIGNUPS_PER_MINUTE,
      statusReadsPerMinute: e.RATE_LIMIT_STATUS_READS_PER_MINUTE,
      subscribesPerMinute: e.RATE_LIMIT_SUBSCRIBES_PER_MINUTE,
      subscribesPerEmailPerHour: e.RATE_LIMIT_SUBSCRIBES_PER_EMAIL_PER_HOUR,
    },
    statusPages: { refreshMs: e.STATUS_PAGE_REFRESH_MS, maxSubscribers: e.MAX_SUBSCRIBERS_PER_PAGE },
    login: {
      maxFailuresPerAccount: e.LOGIN_MAX_FAILURES_PER_ACCOUNT,
      maxFailuresPerAddress: e.LOGIN_MAX_FAILURES_PER_ADDRESS,
      windowSeconds: e.LOGIN_WINDOW_SECONDS,
    },
    maxBodyBytes: e.MAX_BODY_BYTES,
    ingest: {
      flushMs: e.INGEST_FLUSH_MS,
      maxBatch: e.INGEST_MAX_BATCH,
      maxInFlight: e.INGEST_MAX_IN_FLIGHT,
      derivedDelayMs: e.DERIVED_DELAY_MS,
      inflightBytesPerKey: Math.max(e.INGEST_INFLIGHT_BYTES_PER_KEY, e.MAX_BODY_BYTES),
      inflightBytes: Math.max(e.INGEST_INFLIGHT_BYTES, e.MAX_BODY_BYTES),
    },
    webhooks: {
      backoffBaseMs: e.WEBHOOK_BACKOFF_BASE_MS,
      maxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
      maxPerProject: e.MAX_WEBHOOKS_PER_PROJECT,
      disableAfterDays: e.WEBHOOK_DISABLE_AFTER_DAYS,
      pagerDutyEventsUrl: e.PAGERDUTY_EVENTS_URL,
    },
    mail: { smtpUrl: e.SMTP_URL, from: e.MAIL_FROM },
    publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ""),
    projects: { maxApiKeys: e.MAX_API_KEYS_PER_PROJECT, maxMembers: e.MAX_MEMBERS_PER_PROJECT },
    pgPoolSize: e.PG_POOL_SIZE,
    uptime: {
      rawRetentionDays: e.UPTIME_RAW_RETENTION_DAYS,
      maxMonitorsPerProject: e.MAX_MONITORS_PER_PROJECT,
      maxRunsPerMonitor: e.UPTIME_MAX_RUNS_PER_MONITOR,
      maxOpenIncidentsPerProject: e.MAX_OPEN_INCIDENTS_PER_PROJECT,
      maxMaintenancesPerProject: e.MAX_MAINTENANCES_PER_PROJECT,
    },
    alerts: {
      maxPerProject: e.MAX_ALERTS_PER_PROJECT,
      evaluationConcurrency: e.ALERT_EVALUATION_CONCURRENCY ?? 4 * e.PG_POOL_SIZE,
    },
    retention: {
      defaultDays: e.RETENTION_DAYS === undefined ? undefined : Math.min(e.RETENTION_DAYS, e.RETENTION_MAX_DAYS),
      maxDays: e.RETENTION_MAX_DAYS,
      intervalMs: e.RETENTION_INTERVAL_MS,
      batchRows: e.RETENTION_BATCH_ROWS,
      dutyCycle: e.RETENTION_DUTY_CYCLE,
    },
    analytics: {
      fastPaths: e.ANALYTICS_FAST_PATHS,
      slotIntervalMs: e.ANALYTICS_SLOT_INTERVAL_MS,
      slotSample: e.ANALYTICS_SLOT_SAMPLE,
      blockIntervalMs: e.ANALYTICS_BLOCK_INTERVAL_MS,
      blockSealMs: e.ANALYTICS_BLOCK_SEAL_MS,
      blockCacheMb: e.ANALYTICS_BLOCK_CACHE_MB,
    },
    connections: {
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEPALIVE_TIMEOUT_MS,
      sniffTimeoutMs: e.HTTP_SNIFF_TIMEOUT_MS,
      http2IdleTimeoutMs: e.HTTP2_IDLE_TIMEOUT_MS,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      http2MaxConcurrentStreams: e.HTTP2_MAX_CONCURRENT_STREAMS,
      http2MaxHeaderListBytes: e.HTTP2_MAX_HEADER_LIST_BYTES,
      http2MaxSessionMemoryMb: e.HTTP2_MAX_SESSION_MEMORY_MB,
    },
    metrics:
      e.METRICS_PORT === "off"
        ? undefined
        : {
            host: e.METRICS_HOST,
            port: e.METRICS_PORT ?? DEFAULT_METRICS_PORT,
            required: e.METRICS_PORT !== undefined,
          },
    statementTimeoutMs: e.STATEMENT_TIMEOUT_MS,
    analyticsLimits: {
      maxFilterNodes: e.ANALYTICS_MAX_FILTER_NODES,
      maxConcurrentPerProject: e.ANALYTICS_MAX_CONCURRENT_PER_PROJECT ?? Math.max(1, Math.floor(e.PG_POOL_SIZE / 4)),
      queueTimeoutMs: e.ANALYTICS_QUEUE_TIMEOUT_MS,
    },
    grpc: { reflection: e.GRPC_REFLECTION === "on", healthPollMs: e.GRPC_HEALTH_POLL_MS },
    purge: { intervalMs: e.PURGE_INTERVAL_MS, batchRows: e.PURGE_BATCH_ROWS },
  };
}

/** Reads the process environment. Call once, at the edge (main.ts). */
export function loadConfig(overrides: Record<string, string | undefined> = {}): Config {
  return parseConfig({ ...process.env, ...overrides });
}
