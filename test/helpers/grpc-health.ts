import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

// A grpc.health.v1.Health client as Kubernetes probes, load balancers and grpc-health-probe use it:
// @grpc/grpc-js with the vendored proto loaded by @grpc/proto-loader (nothing of connect-es on the
// client side), no credentials.

const PROTO_DIR = path.resolve(import.meta.dirname, "../../proto");
const def = protoLoader.loadSync("grpc/health/v1/health.proto", {
  includeDirs: [PROTO_DIR],
  enums: String,
  defaults: true,
});
const HealthClient = (
  grpc.loadPackageDefinition(def) as unknown as { grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } } }
).grpc.health.v1.Health;

export type HealthStatus = "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";
export type HealthClient = grpc.Client & Record<string, (...a: unknown[]) => unknown>;

/** A client of the node listening on 127.0.0.1:port (h2c); close() it. */
export const healthClient = (port: number) =>
  new HealthClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as HealthClient;

/** Health/Check of one service ("" is the node). */
export function healthCheck(c: HealthClient, service: string): Promise<HealthStatus> {
  return new Promise((resolve, reject) =>
    c.Check(
      { service },
      { deadline: Date.now() + 5_000 },
      (err: grpc.ServiceError | null, res: { status: HealthStatus }) => (err ? reject(err) : resolve(res.status)),
    ),
  );
}
