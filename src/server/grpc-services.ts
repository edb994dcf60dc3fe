import { type Code, createConnectRouter, createContextValues, type ConnectRouter } from "@connectrpc/connect";
import {
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { file_google_rpc_status } from "../../gen/google/rpc/status_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { watchStatus } from "./grpc-status.js";
import type { HealthFeature } from "./health.js";
import { outcomeKey, protocolOf, richErrors } from "./rpc.js";
import type { Deps } from "../platform/deps.js";
import type { AnyRequest } from "../transcoding/body.js";
import type { AnyResponse } from "../transcoding/rest.js";
import type { Feature } from "../shared/feature.js";
import { createDescriptorIndex } from "./grpc-descriptors.js";
import { grpcHealth } from "./grpc-health.js";
import { reflectionV1, reflectionV1alpha } from "./grpc-reflection.js";

// The standard gRPC services every gRPC tool expects: grpc.health.v1.Health and (GRPC_REFLECTION=on,
// the default) grpc.reflection.v1/v1alpha.ServerReflection, on the API port(s) beside vigil.v1.
// They are not features: they carry no google.api.http rule (no REST route), take no credentials
// (health is for probes; reflection exposes only the schema, which is public: docs/security.md),
// and stream (Health/Watch, bidirectional reflection), which the vigil.v1 adapter (rpc.ts,
// unary only) does not do. Served over gRPC (h2c), gRPC-web and Connect by connect-es's router.

export interface StandardServices {
  /** Request paths served here ("/grpc.health.v1.Health/Check", ...). */
  paths: ReadonlySet<string>;
  /** `done` learns the call's gRPC status code (0 = OK) once its response is written. */
  handle(req: AnyRequest, res: AnyResponse, done: (code: number) => void): void;
  /** The node begins to shut down: health answers NOT_SERVING, Watch streams end. */
  close(): void;
}

/** Requests are a service name or a symbol: small. */
const READ_MAX_BYTES = 64 * 1024;

export function createStandardServices(deps: Pick<Deps, "config" | "log">, features: Feature[]): StandardServices {
  const health = features.find((f): f is HealthFeature => f.name === "health" && "readiness" in f);
  if (!health) throw new Error("grpc.health.v1 needs the health feature");
  const served = features.flatMap((f) => f.services.map((s) => s.desc));
  const standard = deps.config.grpc.reflection ? [Health, ReflectionV1, ReflectionV1alpha] : [Health];
  const closing = new AbortController();

  const routes = (router: ConnectRouter) => {
    router.service(
      Health,
      grpcHealth({
        readiness: () => health.readiness(),
        services: [...served, ...standard].map((s) => s.typeName),
        pollMs: deps.config.grpc.healthPollMs,
        closing: closing.signal,
      }),
    );
    if (!deps.config.grpc.reflection) return;
    // The error details too, so that grpcurl and buf curl can show an error's ErrorInfo, BadRequest...
    const index = createDescriptorIndex(
      [...served, ...standard],
      [file_google_rpc_status, file_google_rpc_error_details],
    );
    router.service(ReflectionV1, reflectionV1(index));
    router.service(ReflectionV1alpha, reflectionV1alpha(index));
  };
  const router = createConnectRouter({
    readMaxBytes: READ_MAX_BYTES,
    acceptCompression: [compressionGzip],
    interceptors: [richErrors],
  });
  routes(router);
  const handlers = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));

  return {
    paths: new Set(handlers.keys()),
    handle(req, res, done) {
      const handler = handlers.get((req.url ?? "").split("?", 1)[0]);
      if (!handler) {
        req.resume();
        res.writeHead(404);
        res.end();
        return;
      }
      const call: { code?: Code } = {};
      handler(
        universalRequestFromNodeRequest(
          req as never,
          res as never,
          undefined,
          createContextValues().set(outcomeKey, call),
        ),
      )
        // The same status recording and trailer fixes as vigil.v1's calls (grpc_server_handled_total,
        // log level, grpc-message encoding, ErrorInfo on every failure).
        .then((uRes) =>
          universalResponseToNodeResponse(
            watchStatus(uRes, protocolOf(req.headers["content-type"]), () => call.code, done),
            res as never,
          ),
        )
        .catch((err) => deps.log.debug({ err, rpc: handler.requestPath }, "standard gRPC call ended early"));
    },
    close() {
      closing.abort();
    },
  };
}
