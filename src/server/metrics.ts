import http from "node:http";
import type net from "node:net";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { Config, ConnectionLimits } from "../config/index.js";

// GET /metrics (Prometheus text format) on its own port, METRICS_PORT on METRICS_HOST (loopback by
// default), never on the API port: what it shows (routes, queue depths, memory) is for operators.

export interface MetricsListener {
  port: number;
  close(): Promise<void>;
}

/** The metrics port could not be bound; `code` is listen's (EADDRINUSE, EACCES, ...). */
class MetricsListenError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/**
 * `/metrics` as configured: undefined when METRICS_PORT=off, or when METRICS_PORT is unset and its
 * default port is taken (one warning; Vigil serves without /metrics rather than not at all: 9464 is
 * the OpenTelemetry Prometheus exporter's default, often held by another process's exporter). A
 * METRICS_PORT the operator set is a promise to their scraper: failing to bind it stops the start.
 */
export async function serveMetrics(
  registry: Registry,
  metrics: Config["metrics"],
  limits: ConnectionLimits,
  log: Logger,
  extra?: () => Promise<string>,
): Promise<MetricsListener | undefined> {
  if (!metrics) return undefined;
  try {
    return await listenMetrics(registry, metrics.host, metrics.port, limits, extra);
  } catch (err) {
    if (metrics.required || !(err instanceof MetricsListenError) || err.code !== "EADDRINUSE") throw err;
    log.warn(
      { host: metrics.host, port: metrics.port },
      `metrics not served: the default METRICS_PORT ${metrics.host}:${metrics.port} is in use by another process; set METRICS_PORT to a free port (or "off")`,
    );
    return undefined;
  }
}

/** `extra`: more Prometheus text appended to the registry's (the Temporal SDK's metrics). */
async function listenMetrics(
  registry: Registry,
  host: string,
  port: number,
  limits: ConnectionLimits,
  extra?: () => Promise<string>,
): Promise<MetricsListener> {
  const server = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
    },
    (req, res) => {
      req.resume();
      const path = (req.url ?? "/").split("?")[0];
      if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "not_found", message: "this port serves GET /metrics only" } }));
        return;
      }
      Promise.all([registry.metrics(), extra?.() ?? ""]).then(
        ([own, more]) => {
          const text = more ? `${own}\n${more}` : own;
          res.writeHead(200, { "content-type": registry.contentType });
          res.end(req.method === "HEAD" ? undefined : text);
        },
        () => {
          res.writeHead(500, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { code: "internal", message: "internal server error" } }));
        },
      );
    },
  );
  if (limits.maxConnections > 0) server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new MetricsListenError(
          `cannot serve metrics on ${host}:${port} (METRICS_PORT, METRICS_HOST; "off" turns it off): ${err.message}`,
          err.code,
        ),
      ),
    );
    server.listen(port, host, () => {
      server.removeAllListeners("error");
      resolve();
    });
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
