import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
import type { Readiness } from "./health.js";

// grpc.health.v1.Health (grpc/health/v1/health.proto; gRPC's health-checking protocol), from the
// same readiness as GET /health (health.ts), no credentials:
//
// - "" (the whole node; what Kubernetes' gRPC probes ask) and every served service: SERVING while
//   the database answers and every migration of this build is applied; NOT_SERVING otherwise and
//   from the moment the node begins to shut down.
// - vigil.v1.UptimeService, PingService (heartbeats), WebhookService and AlertService are also NOT_SERVING
//   while GET /health says "degraded" (Temporal mode: this node's workers cannot run or the Temporal
//   server does not answer it, so deadlines, deliveries and alert evaluations wait).
//   "" stays SERVING then, as /health stays 200: the API serves, and restarting the node would not
//   bring Temporal back.
// - Check of an unknown name: NOT_FOUND. Watch of one: SERVICE_UNKNOWN, and the stream stays open.
// - Watch sends the status at once, then each change (readiness re-read every GRPC_HEALTH_POLL_MS,
//   one read shared by all watchers); on shutdown it sends NOT_SERVING and ends (status OK).

export interface HealthOptions {
  readiness(): Promise<Readiness>;
  /** The served services' names ("" is added). */
  services: string[];
  pollMs: number;
  /** Aborted when the node begins to shut down. */
  closing: AbortSignal;
}

/** Services whose work runs on this node's Temporal workers in Temporal mode. */
const NEEDS_WORKER = new Set([
  "vigil.v1.UptimeService",
  "vigil.v1.PingService",
  "vigil.v1.WebhookService",
  "vigil.v1.AlertService",
]);

export function grpcHealth(o: HealthOptions): ServiceImpl<typeof Health> {
  const known = new Set(["", ...o.services]);
  let cached: { at: number; value: Promise<Readiness> } | undefined;
  /** Readiness no older than `maxAgeMs` (0: read now); concurrent watchers share one read. */
  const current = (maxAgeMs: number) => {
    const now = Date.now();
    if (!cached || now - cached.at >= maxAgeMs) cached = { at: now, value: o.readiness() };
    return cached.value;
  };
  const statusOf = (service: string, r: Readiness): Status => {
    if (o.closing.aborted || r.unavailable) return Status.NOT_SERVING;
    if (NEEDS_WORKER.has(service) && r.status === "degraded") return Status.NOT_SERVING;
    return Status.SERVING;
  };
  // No ":" in the message: connect-es percent-encodes it in grpc-message and @grpc/grpc-js leaves "%3A".
  const unknown = (service: string) => new ConnectError(`unknown service ${JSON.stringify(service)}`, Code.NotFound);

  return {
    async check(req) {
      if (!known.has(req.service)) throw unknown(req.service);
      if (o.closing.aborted) return { status: Status.NOT_SERVING };
      return { status: statusOf(req.service, await current(0)) };
    },
    async list() {
      const r = await current(0);
      return { statuses: Object.fromEntries([...known].map((name) => [name, { status: statusOf(name, r) }])) };
    },
    async *watch(req, ctx) {
      const signal = AbortSignal.any([ctx.signal, o.closing]);
      const wait = (ms: number) => sleep(ms, undefined, { signal }).catch(() => undefined);
      if (!known.has(req.service)) {
        // The set of services never changes while the node runs: nothing more will come.
        yield { status: Status.SERVICE_UNKNOWN };
        while (!signal.aborted) await wait(3_600_000);
        return;
      }
      let last: Status | undefined;
      for (;;) {
        const status = o.closing.aborted ? Status.NOT_SERVING : statusOf(req.service, await current(o.pollMs / 2));
        if (status !== last) {
          last = status;
          yield { status };
        }
        if (ctx.signal.aborted) return;
        if (o.closing.aborted) {
          if (last === Status.NOT_SERVING) return;
          continue;
        }
        await wait(o.pollMs);
      }
    },
  };
}
