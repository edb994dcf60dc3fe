import type { Logger } from "pino";
import type { Config } from "../config/index.js";
import type { Db } from "../storage/db.js";
import type { Clock } from "../shared/clock.js";
import type { Telemetry } from "../shared/telemetry.js";
import type { BackgroundTasks } from "../shared/background.js";
import type { Notifications } from "../shared/notifications.js";
import type { IngestPressure } from "../shared/pressure.js";
import type { Authenticator } from "../auth/principal.js";
import type { RateLimiter } from "../shared/ratelimit.js";
import type { TemporalLink } from "../temporal/link.js";

/** What every feature is built from. Created once in server/app.ts. */
export interface Deps {
  config: Config;
  db: Db;
  log: Logger;
  clock: Clock;
  /** Resolves credentials and project access for every handler. */
  auth: Authenticator;
  /** Signs session cookies (from SESSION_SECRET or DATA_DIR). */
  sessionSecret: string;
  /** Prometheus metrics of the service itself (GET /metrics). */
  telemetry: Telemetry;
  /** Every background loop of this node records its passes here (/health `background`, /metrics). */
  background: BackgroundTasks;
  /** The process's one LISTEN connection (uptime wakes, webhook deliveries and changes); closed after the features. */
  notifications: Notifications;
  /** Ingestion marks activity here; background senders yield to it. */
  pressure: IngestPressure;
  /** Request limits of the process (Redis-backed with REDIS_URL); src/shared/ratelimit.ts. */
  limits: RateLimiter;
  /** Temporal mode (TEMPORAL_ADDRESS set): the process's client and task queues; closed last. */
  temporal?: TemporalLink;
  /** Fires when the process begins shutting down. */
  shutdownSignal: AbortSignal;
}
