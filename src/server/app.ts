import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { DescMethod } from "@bufbuild/protobuf";
import { createContextValues, type ContextValues } from "@connectrpc/connect";
import pino, { type Logger } from "pino";
import { Authenticator, isOriginRefused, principalKey, type OriginRefused, type Principal } from "../auth/principal.js";
import type { Config } from "../config/index.js";
import { systemClock, type Clock } from "../shared/clock.js";
import { clientInfoKey, type ClientInfo } from "../shared/context.js";
import type { Deps } from "../platform/deps.js";
import { guardImpl, type Feature } from "../shared/feature.js";
import { Telemetry } from "../shared/telemetry.js";
import { BackgroundTasks } from "../shared/background.js";
import { PgNotifications } from "../shared/notifications.js";
import { IngestPressure } from "../shared/pressure.js";
import { createLogThrottle } from "../shared/log-throttle.js";
import { bodyBudgetKey, InflightBytes } from "../shared/inflight.js";
import { createRateLimiter } from "../shared/ratelimit.js";
import { createPool, type Db } from "../storage/db.js";
import { startEmbeddedPostgres, type EmbeddedHandle } from "../storage/embedded.js";
import { migrate } from "../storage/migrate.js";
import { createRestHandler } from "../transcoding/rest.js";
import { createFeatures } from "./features.js";
import { createTemporalLink } from "../temporal/link.js";
import { sdkMetrics } from "../temporal/runtime.js";
import { isDocsPath, serveDocs } from "./docs.js";
import { createDashboard, DEFAULT_DASHBOARD_DIR } from "./dashboard.js";
import { createGate } from "./gate.js";
import { redactPath } from "../shared/redact.js";
import { BROWSER_INGEST, COMPRESSED_INGEST, PING_URLS } from "./ingest-routes.js";
import { createRpcHandler, protocolOf } from "./rpc.js";
import { grpcCodeName, requestStatus, rpcLogLevel } from "./grpc-status.js";
import { createStandardServices } from "./grpc-services.js";
import { listen, type Listener } from "./listen.js";
import { serveMetrics, type MetricsListener } from "./metrics.js";
import { sessionSecret } from "./secrets.js";

// Builds the whole service apart from listening: tests and main.ts both use buildApp().

/** Whose share of the bytes in flight a request takes: its API key, its session's account, else its address. */
const inflightKey = (p: Principal | undefined, client: ClientInfo): string =>
  p?.kind === "apiKey" ? `key:${p.keyId}` : p?.kind === "session" ? `account:${p.accountId}` : `ip:${client.ip}`;

export interface AppOptions {
  log?: Logger;
  clock?: Clock;
}

export interface App {
  deps: Deps;
  features: Feature[];
  handler: (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;
  /** Starts listening (and background work when the role includes it). Returns the bound port. */
  listen(port?: number): Promise<number>;
  /** The bound METRICS_PORT once listening (undefined with METRICS_PORT=off or its default port taken). */
  readonly metricsPort: number | undefined;
  /** Graceful stop: stop accepting, finish in-flight work, flush accepted writes, release the database. */
  close(): Promise<void>;
}

const CONNECT_PATH = /^\/vigil\.v1\.[A-Za-z]+\/[A-Za-z]+$/;

/** Closes what start-up has opened so far, last first. */
type Opened = (() => Promise<unknown>)[];

export async function buildApp(config: Config, opts: AppOptions = {}): Promise<App> {
  // A step that fails (migrations, the session secret, a feature) closes what the earlier ones
  // opened (the embedded cluster, the pool, Redis, Temporal): nothing outlives a failed start.
  const opened: Opened = [];
  try {
    return await assemble(config, opts, opened);
  } catch (err) {
    for (const close of opened.reverse()) await close().catch(() => undefined);
    throw err;
  }
}

async function assemble(config: Config, opts: AppOptions, opened: Opened): Promise<App> {
  const log = opts.log ?? pino({ level: config.logLevel, base: undefined });
  let embedded: EmbeddedHandle | undefined;
  let url = config.databaseUrl;
  if (!url) {
    const handle = (embedded = await startEmbeddedPostgres(config.dataDir, log));
    opened.push(() => handle.stop());
    url = embedded.url;
  }
  const db: Db = createPool(url, config.pgPoolSize, { statementTimeoutMs: config.statementTimeoutMs });
  opened.push(() => db.end());
  await migrate(db);
  const secret = await sessionSecret(config.sessionSecret, config.dataDir);

  const shutdown = new AbortController();
  // Every in-flight request links to this signal; thousands at once is normal, not a leak.
  setMaxListeners(0, shutdown.signal);
  const telemetry = new Telemetry();
  const background = new BackgroundTasks(log, telemetry, { role: config.role, temporal: !!config.temporal });
  const clock = opts.clock ?? systemClock;
  const deps: Deps = {
    config,
    db,
    log,
    clock,
    telemetry,
    background,
    notifications: new PgNotifications({ ...db.options }, log),
    pressure: new IngestPressure(),
    limits: createRateLimiter(config, log, clock, telemetry),
    auth: new Authenticator({ db, clock, sessionSecret: secret }),
    sessionSecret: secret,
    shutdownSignal: shutdown.signal,
    temporal: config.temporal ? createTemporalLink(config.temporal, db, log, background) : undefined,
  };
  opened.push(
    () => deps.notifications.stop(),
    () => deps.limits.close(),
    async () => deps.temporal?.close(),
  );

  const features = await createFeatures(deps);
  const bindings = features.flatMap((f) => f.services.map((b) => guardImpl(b, log)));

  // Every request passes the gate (cross-site checks, credentials) before its body is read, over
  // every protocol; the caller it resolved travels in the context values.
  const gate = createGate(deps.auth, deps.limits);
  // A page whose origin the project does not allow cannot read its 403 (no CORS headers): its
  // browser reports a CORS error to the page's console only. The operator learns it here: a
  // warning naming the project and the origin (never the key), once per minute per pair.
  const originThrottle = createLogThrottle({ intervalMs: 60_000, maxKeys: 1000 });
  const logOriginRefused = (err: OriginRefused, client: ClientInfo) => {
    client.projectId = err.projectId;
    const skipped = originThrottle(`${err.projectId} ${err.origin}`);
    if (skipped !== undefined)
      log.warn(
        { projectId: err.projectId, origin: err.origin, requestId: client.requestId, refusedSinceLastLine: skipped },
        "publishable key used from an origin not in the project's allowedOrigins: refused",
      );
  };
  // The ingestion routes' body bytes held at once, per caller and per node (shared/inflight.ts):
  // each request's budget is charged as its bytes arrive and released once it is answered.
  const inflight = new InflightBytes(
    { perKey: config.ingest.inflightBytesPerKey, total: config.ingest.inflightBytes },
    { refused: (scope) => telemetry.inflightRefused.inc({ scope }) },
  );
  telemetry.watchInflight(inflight);
  const admit = async (
    method: DescMethod,
    verb: string,
    req: IncomingMessage | Http2ServerRequest,
    client: ClientInfo,
    params?: Readonly<Record<string, string>>,
  ): Promise<ContextValues> => {
    const protocol = CONNECT_PATH.test((req.url ?? "").split("?", 1)[0])
      ? protocolOf(req.headers["content-type"])
      : "rest";
    const url = req.url ?? "/";
    // `?key=` matters only on the browser ingestion routes (sendBeacon); parsed only when there.
    const queryKeys =
      protocol === "rest" && url.includes("key=") && BROWSER_INGEST.has(method)
        ? new URL(url, "http://vigil.local").searchParams.getAll("key")
        : undefined;
    // A ping URL's key is a path variable (REST): the gate resolves it before the body is read.
    const pathKey = protocol === "rest" && PING_URLS.has(method) ? params?.ping_key : undefined;
    const principal = await gate({ method, verb, headers: req.headers, protocol, queryKeys, pathKey }).catch(
      (err: unknown) => {
        if (isOriginRefused(err)) logOriginRefused(err, client);
        throw err;
      },
    );
    const values = createContextValues().set(clientInfoKey, client).set(principalKey, principal);
    if (COMPRESSED_INGEST.has(method)) values.set(bodyBudgetKey, inflight.open(inflightKey(principal, client)));
    return values;
  };
  const rpc = createRpcHandler({
    bindings,
    maxBodyBytes: config.maxBodyBytes,
    admit,
    log,
    shutdownSignal: shutdown.signal,
  });
  const rest = createRestHandler({
    bindings,
    admit,
    browserIngest: BROWSER_INGEST,
    compressedIngest: COMPRESSED_INGEST,
    maxBodyBytes: config.maxBodyBytes,
    log,
    shutdownSignal: shutdown.signal,
  });
  // grpc.health.v1 and grpc.reflection (grpc-services.ts): no credentials, no REST route.
  const standard = createStandardServices(deps, features);

  // One ClientInfo per request (made once, in the handler), shared by the REST path and the Connect context values.
  const REQUEST_ID = /^[\w.:-]{1,128}$/;
  function clientOf(req: IncomingMessage | Http2ServerRequest): ClientInfo {
    const rid = req.headers["x-request-id"];
    return {
      ip: req.socket?.remoteAddress ?? "",
      requestId: typeof rid === "string" && REQUEST_ID.test(rid) ? rid : randomUUID(),
    };
  }

  const dashboard = createDashboard(config.dashboardDir ?? DEFAULT_DASHBOARD_DIR, config.publicUrl);
  // Plain HTTP routes of features (the public status pages), tried before the REST transcoder.
  const httpRoutes = features.flatMap((f) => (f.http ? [f.http] : []));

  const procedures = new Set([
    ...bindings.flatMap((b) => b.desc.methods.map((m) => `/${b.desc.typeName}/${m.name}`)),
    ...standard.paths,
  ]);
  const logRequests = log.isLevelEnabled("info");
  const handler: App["handler"] = (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const started = process.hrtime.bigint();
    const client = clientOf(req);
    const isConnect = CONNECT_PATH.test(path) || standard.paths.has(path);
    const protocol = isConnect
      ? String(req.headers["content-type"] ?? "").startsWith("application/grpc")
        ? "grpc"
        : "connect"
      : "rest";
    // Only real procedures become metric labels: arbitrary paths must not grow the series.
    if (isConnect && procedures.has(path)) client.route = path;
    res.setHeader("x-request-id", client.requestId);
    res.on("finish", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = client.route ?? "unmatched";
      // An HTTP/2 stream closed before any answer (the client reset it, its session went away) still
      // "finishes", with the default 200: it is counted as the client's doing, 499, never a 2xx or 5xx.
      // Over gRPC and gRPC-web the HTTP status is 200 whatever the outcome: the metric counts such a
      // call under the HTTP status its gRPC code maps to, so error rates read the same for every protocol.
      const status = "stream" in res && !res.headersSent ? 499 : res.statusCode;
      telemetry.recordRequest(protocol, route, requestStatus(status, protocol, client.rpcCode), seconds);
      // An RPC's outcome is its gRPC status (HTTP 200 over gRPC even when it failed): counted and
      // logged by it, at its level (src/server/grpc-status.ts).
      const grpcCode = client.rpcCode === undefined ? undefined : grpcCodeName(client.rpcCode);
      if (grpcCode !== undefined && client.route)
        telemetry.recordRpc(protocolOf(req.headers["content-type"]), client.route, grpcCode);
      const level = client.rpcCode === undefined ? "info" : rpcLogLevel(client.rpcCode);
      if (logRequests || (level !== "info" && log.isLevelEnabled(level)))
        log[level](
          {
            requestId: client.requestId,
            projectId: client.projectId,
            protocol,
            method: req.method,
            route,
            // A ping URL's key (and any key a client put in a path) never reaches the log.
            path: redactPath(path),
            status,
            grpcCode,
            ms: Math.round(seconds * 1e5) / 100,
          },
          "request",
        );
    });
    if (isConnect) {
      if (standard.paths.has(path)) standard.handle(req, res, (code) => (client.rpcCode = code));
      else void rpc(req, res, client);
      return;
    }
    // /metrics is not served here but on METRICS_PORT (src/server/metrics.ts).
    // A worker node serves only /health on this port; the API lives on api/all nodes.
    if (config.role === "worker" && path !== "/health") {
      req.resume();
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: {
            code: "not_found",
            message: "this node runs ROLE=worker: it serves /health only (metrics: METRICS_PORT)",
          },
        }),
      );
      return;
    }
    // The dashboard (src/server/dashboard.ts): /, its client routes and /assets/*, GET only.
    if (dashboard.matches(path, req.method)) {
      client.route = path.startsWith("/assets/") ? "/assets/*" : "dashboard";
      dashboard.serve(req, res, path);
      return;
    }
    // The API reference (src/server/docs.ts): /openapi.json, /docs and its assets.
    if (isDocsPath(path)) {
      client.route = path;
      serveDocs(req, res, path);
      return;
    }
    for (const routes of httpRoutes) {
      const route = routes.route(path);
      if (route) {
        client.route = route.template;
        route.serve(req, res, client);
        return;
      }
    }
    void rest(req, res, client);
  };

  let listener: Listener | undefined;
  let grpcListener: Listener | undefined;
  let metricsListener: MetricsListener | undefined;
  let metricsTried = false;
  let started = false;
  const workerRole = config.role !== "api";

  return {
    deps,
    features,
    handler,
    get metricsPort() {
      return metricsListener?.port;
    },
    async listen(port = config.port) {
      if (!started) {
        for (const f of features) f.startEveryRole?.();
        if (workerRole) for (const f of features) await f.start?.();
        started = true;
      }
      if (!metricsTried) {
        metricsListener = await serveMetrics(telemetry.registry, config.metrics, config.connections, log, sdkMetrics);
        metricsTried = true; // served, off, or the default port taken (warned once)
      }
      // The connection cap counts both API ports together.
      const connections = { open: 0 };
      listener = await listen(handler, config.host, port, config.connections, connections);
      // Optionally a second port too (GRPC_PORT), e.g. for a load balancer that routes gRPC apart.
      if (config.grpcPort !== undefined && config.grpcPort !== port)
        grpcListener = await listen(handler, config.host, config.grpcPort, config.connections, connections);
      return listener.port;
    },
    async close() {
      // Order matters: stop accepting and let in-flight requests finish (their commits included),
      // then stop background work (flushes queues, releases claims), then the pool and the cluster.
      standard.close(); // health answers NOT_SERVING, Watch streams end (they would hold the listeners)
      await Promise.all([listener?.close(), grpcListener?.close(), metricsListener?.close()]);
      shutdown.abort();
      for (const f of [...features].reverse())
        await f.stop?.().catch((err) => log.error({ err, feature: f.name }, "feature stop failed"));
      // After every feature: the uptime writer's last wakes and the webhook hand-overs use it.
      await deps.notifications.stop();
      await deps.temporal?.close();
      await deps.limits.close();
      await db.end().catch(() => undefined);
      await embedded?.stop().catch((err) => log.error({ err }, "embedded postgres stop failed"));
    },
  };
}
