import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { HeartbeatResultSchema } from "../../gen/vigil/v1/uptime_pb.js";
import {
  PingService,
  type PingExitRequest,
  type PingRequest,
  type PingSignalRequest,
} from "../../gen/vigil/v1/ping_pb.js";
import { notFound } from "../shared/errors.js";
import type { RunSignal } from "./heartbeats.js";
import { principalKey } from "../auth/principal.js";
import { bind, type ServiceBinding } from "../shared/feature.js";
import type { UptimeDeps } from "./deps.js";
import * as s from "./requests.js";

/**
 * A heartbeat or run signal of a caller authorized for `projectId` (SendHeartbeat, the run signals,
 * and the ping URLs): validated, written, answered (service.ts `signalsOf`). `body`: the request's
 * fields as plain values (requests.ts `signalBody`). `recheck` is the route's credential check, run
 * again should the project be deleted during the write (answered as a request after the delete: 401/404).
 */
export type RecordSignal = (
  projectId: string,
  slug: string,
  signal: RunSignal,
  body: Record<string, unknown>,
  recheck: () => Promise<unknown>,
) => Promise<{ data: MessageInitShape<typeof HeartbeatResultSchema> }>;

// Ping URLs (decisions.md "Cron jobs and ping keys"; docs/uptime.md "Ping URLs"): `GET` or `POST
// /ping/:pingKey/:monitorSlug[/start|/fail|/exit/:code]`, a heartbeat or run signal from a crontab
// line with no header. The key comes in the
// path (REST: the gate resolves it and takes the heartbeat limit before the body is read, `PING_URLS`
// in src/server/ingest-routes.ts) or the message (gRPC, Connect: the handler does both, with
// `auth.pingKey`). A ping key only: 401 unknown or revoked, 403 another kind. The signal is then
// recorded exactly as SendHeartbeat and the run signal routes record theirs (`RecordSignal`).

/**
 * The ping URLs' suffixes after `/ping/:pingKey/:monitorSlug`, each to its run signal (heartbeats.ts
 * `RunSignal`): the one table of ping URLs. `""` is the plain heartbeat, a success; `exit/:code` is
 * PingExit's. A suffix outside the table is a 404, as an unknown route.
 */
const PING_SIGNALS = {
  start: "start",
  fail: "fail",
} as const satisfies Record<string, RunSignal>;

export function pingService(deps: Pick<UptimeDeps, "auth" | "limits">, record: RecordSignal): ServiceBinding {
  /** The key resolved (REST: by the gate, which took the heartbeat limit before the body), then the signal. */
  const ping = async (
    req: PingRequest | PingSignalRequest | PingExitRequest,
    ctx: HandlerContext,
    signal: RunSignal | undefined,
  ) => {
    const counted = ctx.values.get(principalKey) !== undefined;
    const { projectId } = await deps.auth.pingKey(ctx, req.pingKey);
    // gRPC, Connect: the key was in the message, so the limit is taken here.
    if (!counted) await deps.limits.take("heartbeats", projectId);
    if (signal === undefined) throw notFound("route");
    return record(projectId, req.monitorSlug, signal, s.signalBody(req), () => deps.auth.fromPingKey(req.pingKey));
  };
  return bind(
    PingService,
    {
      async ping(req, ctx) {
        return ping(req, ctx, "heartbeat");
      },
      async pingSignal(req, ctx) {
        const known = Object.hasOwn(PING_SIGNALS, req.signal);
        return ping(req, ctx, known ? PING_SIGNALS[req.signal as keyof typeof PING_SIGNALS] : undefined);
      },
      async pingExit(req, ctx) {
        return ping(req, ctx, { exit: req.code });
      },
    },
    { rules: { ping: s.heartbeatSchema, pingSignal: s.runSignalSchema, pingExit: s.exitRunSchema } },
  );
}
