import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

// The service's own metrics, served in Prometheus text format at GET /metrics.
// Features record into these; docs/operations.md explains each one.

export class Telemetry {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({ name: "vigil_http_requests_total", help: "Requests answered, by protocol, route and status", labelNames: ["protocol", "route", "status"] as const, registers: [this.registry] });
  readonly httpDuration = new Histogram({ name: "vigil_http_request_duration_seconds", help: "Request latency", labelNames: ["protocol", "route"] as const, buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers: [this.registry] });
  readonly ingestQueueDepth = new Gauge({ name: "vigil_ingest_queue_depth", help: "Events waiting for the next group commit", registers: [this.registry] });
  readonly ingestCommits = new Counter({ name: "vigil_ingest_commits_total", help: "Group commits by how they were written: one guarded statement, or a transaction", labelNames: ["path"] as const, registers: [this.registry] });
  readonly ingestCommitSize = new Histogram({ name: "vigil_ingest_commit_events", help: "Events per group commit", buckets: [1, 5, 10, 50, 100, 500, 1000, 2000, 5000], registers: [this.registry] });
  readonly ingestCommitDuration = new Histogram({ name: "vigil_ingest_commit_duration_seconds", help: "Time to commit one group", buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1], registers: [this.registry] });
  readonly eventsAccepted = new Counter({ name: "vigil_events_accepted_total", help: "Events committed", registers: [this.registry] });
  readonly schedulerLag = new Histogram({ name: "vigil_scheduler_lag_seconds", help: "Delay between a job's due time and its run, by kind (monitor deadline, webhook delivery)", labelNames: ["kind"] as const, buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30], registers: [this.registry] });
  readonly webhookDeliveries = new Counter({ name: "vigil_webhook_attempts_total", help: "Webhook delivery attempts by outcome (succeeded, failed, abandoned)", labelNames: ["outcome"] as const, registers: [this.registry] });
  readonly incidents = new Counter({ name: "vigil_incident_transitions_total", help: "Incidents opened and resolved", labelNames: ["transition"] as const, registers: [this.registry] });
  readonly analyticsBlockQueries = new Counter({ name: "vigil_analytics_block_queries_total", help: "Analytics queries that could use column blocks, by whether they did (blocks) or ran plain SQL (declined)", labelNames: ["outcome"] as const, registers: [this.registry] });
  readonly rateLimited = new Counter({ name: "vigil_rate_limited_total", help: "Requests refused with 429, by limit", labelNames: ["limit"] as const, registers: [this.registry] });

  /**
   * Every finished RPC (gRPC, gRPC-web, Connect) by its gRPC status code: over gRPC the HTTP status
   * is always 200. Named and labelled as go-grpc-prometheus does (no vigil_ prefix), so the usual
   * gRPC dashboards and alerts work as they are; `protocol` tells the three wire protocols apart.
   */
  readonly rpcHandled = new Counter({ name: "grpc_server_handled_total", help: "RPCs completed on the server, regardless of success or failure, by gRPC status code", labelNames: ["grpc_type", "grpc_service", "grpc_method", "grpc_code", "protocol"] as const, registers: [this.registry] });
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
  }
}
