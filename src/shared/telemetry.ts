import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

// The service's own metrics, served in Prometheus text format at GET /metrics (docs/operations.md
// explains each one). Here: the registry, the process's request and RPC metrics, and the ones more
// than one feature records into (scheduler lag by kind, refusals by limit). Each feature registers
// its own on `registry` (events/metrics.ts, analytics/, uptime/, webhooks/).

/** prom-client's default gauges named like counters (see the constructor). */
const TOTAL_NAMED_GAUGES = [
  "vigil_nodejs_active_handles_total",
  "vigil_nodejs_active_requests_total",
  "vigil_nodejs_active_resources_total",
];

export class Telemetry {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: "vigil_http_requests_total",
    help: "Requests answered, by protocol, route and status",
    labelNames: ["protocol", "route", "status"] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: "vigil_http_request_duration_seconds",
    help: "Request latency",
    labelNames: ["protocol", "route"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly schedulerLag = new Histogram({
    name: "vigil_scheduler_lag_seconds",
    help: "Delay between a job's due time and its run, by kind (monitor deadline, webhook delivery, alert evaluation)",
    labelNames: ["kind"] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: "vigil_rate_limited_total",
    help: "Requests refused with 429, by limit",
    labelNames: ["limit"] as const,
    registers: [this.registry],
  });
  /** shared/background.ts: every background task of this node, by name (also on /health). */
  private backgroundView: () => { task: string; lastRunSeconds: number | undefined; lagSeconds: number }[] = () => [];
  readonly backgroundFailures = new Counter({
    name: "vigil_background_failures_total",
    help: "Background passes that failed, by task",
    labelNames: ["task"] as const,
    registers: [this.registry],
  });
  readonly backgroundLastRun = new Gauge({
    name: "vigil_background_last_run_timestamp_seconds",
    help: "When the task's last pass ended (Unix seconds), by task; absent before its first",
    labelNames: ["task"] as const,
    registers: [this.registry],
    collect: () => {
      for (const t of this.backgroundView())
        if (t.lastRunSeconds !== undefined) this.backgroundLastRun.set({ task: t.task }, t.lastRunSeconds);
    },
  });
  readonly backgroundLag = new Gauge({
    name: "vigil_background_lag_seconds",
    help: "How far behind its due time the task is (0 when on time), by task",
    labelNames: ["task"] as const,
    registers: [this.registry],
    collect: () => {
      for (const t of this.backgroundView()) this.backgroundLag.set({ task: t.task }, t.lagSeconds);
    },
  });
  /** The source of the three metrics above (BackgroundTasks registers itself). */
  readBackground(view: () => { task: string; lastRunSeconds: number | undefined; lagSeconds: number }[]): void {
    this.backgroundView = view;
  }
  /**
   * shared/inflight.ts: the ingestion routes' body bytes held now (read at scrape time from the
   * source given to `watchInflight`, not set on every request), and the requests refused for it.
   */
  private inflight: { readonly bytes: number } | undefined;
  readonly inflightBytes: Gauge = new Gauge({
    name: "vigil_ingest_inflight_bytes",
    help: "Request-body bytes of the ingestion routes held now (read or inflated, until answered)",
    registers: [this.registry],
    collect: (): void => this.inflightBytes.set(this.inflight?.bytes ?? 0),
  });
  watchInflight(source: { readonly bytes: number }): void {
    this.inflight = source;
  }
  readonly inflightRefused = new Counter({
    name: "vigil_ingest_inflight_refused_total",
    help: "Ingestion requests refused for the bytes in flight: scope key (429) or total (503)",
    labelNames: ["scope"] as const,
    registers: [this.registry],
  });

  /**
   * Every finished RPC (gRPC, gRPC-web, Connect) by its gRPC status code: over gRPC the HTTP status
   * is always 200. Named and labelled as go-grpc-prometheus does (no vigil_ prefix), so the usual
   * gRPC dashboards and alerts work as they are; `protocol` tells the three wire protocols apart.
   */
  readonly rpcHandled = new Counter({
    name: "grpc_server_handled_total",
    help: "RPCs completed on the server, regardless of success or failure, by gRPC status code",
    labelNames: ["grpc_type", "grpc_service", "grpc_method", "grpc_code", "protocol"] as const,
    registers: [this.registry],
  });
  private readonly rpcChildren = new Map<string, { inc(): void }>();

  /** Records one finished RPC; `route` is "/package.Service/Method", `code` its name ("OK", "InvalidArgument"...). */
  recordRpc(protocol: string, route: string, code: string): void {
    const k = `${protocol}\u0000${route}\u0000${code}`;
    let c = this.rpcChildren.get(k);
    if (!c) {
      const [, service = "", method = ""] = route.split("/");
      this.rpcChildren.set(k, (c = this.rpcHandled.labels("unary", service, method, code, protocol)));
    }
    c.inc();
  }

  private readonly requestChildren = new Map<string, { inc(): void }>();
  private readonly durationChildren = new Map<string, { observe(v: number): void }>();

  /** Records one answered request; label children are cached (hashing labels per call is not free). */
  recordRequest(protocol: string, route: string, status: number, seconds: number): void {
    const rk = `${protocol}\u0000${route}\u0000${status}`;
    let c = this.requestChildren.get(rk);
    if (!c) this.requestChildren.set(rk, (c = this.httpRequests.labels(protocol, route, String(status))));
    c.inc();
    const dk = `${protocol}\u0000${route}`;
    let h = this.durationChildren.get(dk);
    if (!h) this.durationChildren.set(dk, (h = this.httpDuration.labels(protocol, route)));
    h.observe(seconds);
  }

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "vigil_" });
    // prom-client makes these three gauges end in `_total`, a counter's suffix: Prometheus's naming
    // rules (`promtool check metrics`) refuse that. Each is the sum of the per-type gauge it stands
    // beside (`vigil_nodejs_active_handles{type}`...), which stays: sum it for the total.
    for (const name of TOTAL_NAMED_GAUGES) this.registry.removeSingleMetric(name);
  }
}
