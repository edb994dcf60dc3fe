import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { SendHeartbeatResponseSchema } from "../../gen/vigil/v1/uptime_pb.js";
import { PingService, type PingRequest } from "../../gen/vigil/v1/ping_pb.js";
import { principalKey } from "../auth/principal.js";
import { bind, type ServiceBinding } from "../shared/feature.js";
import type { UptimeDeps } from "./deps.js";
import * as s from "./requests.js";

/**
 * A heartbeat of a caller authorized for `projectId` (SendHeartbeat, and the ping URLs): validated,
 * written, answered (service.ts `heartbeatOf`). `recheck` is the route's credential check, run again
 * should the project be deleted during the write (answered as a request after the delete: 401/404).
 */
export type RecordHeartbeat = (
  projectId: string,
  fields: ReturnType<typeof s.heartbeatFields>,
  recheck: () => Promise<unknown>,
) => Promise<MessageInitShape<typeof SendHeartbeatResponseSchema>>;

// Ping URLs (decisions.md "Cron jobs and ping keys"; docs/uptime.md "Ping URLs"): `GET` or `POST
// /ping/:pingKey/:monitorSlug`, a heartbeat from a crontab line with no header. The key comes in the
// path (REST: the gate resolves it and takes the heartbeat limit before the body is read, `PING_URLS`
// in src/server/ingest-routes.ts) or the message (gRPC, Connect: the handler does both, with
// `auth.pingKey`). A ping key only: 401 unknown or revoked, 403 another kind. The heartbeat is then
// recorded exactly as SendHeartbeat records it (`RecordHeartbeat`).

/** What the signals are run with: the feature's heartbeat and the key's resolution. */
interface PingContext {
  heartbeat: RecordHeartbeat;
  auth: UptimeDeps["auth"];
}

/** What a ping URL's suffix does once its key is resolved to `projectId`: a heartbeat, or (later) a run signal. */
type PingSignal = (
  p: PingContext,
  req: PingRequest,
  ctx: HandlerContext,
  projectId: string,
) => ReturnType<RecordHeartbeat>;

/**
 * The suffixes after `/ping/:pingKey/:monitorSlug`, each to its signal: the one table of ping URLs.
 * `""` (no suffix) is the plain heartbeat, a success.
 *
 * TODO(#32 point 2, run signals): fill `start`, `fail` and `exit` with the run signals of
 * `POST .../heartbeats/:monitorSlug/start|fail|exit/:code` (built in src/uptime by the runs work),
 * and give PingService.Ping the bindings that carry the suffix (`/ping/{ping_key}/{monitor_slug}/{signal}`
 * and `.../exit/{exit_code}`, GET and POST, with those fields in PingRequest), choosing the entry by
 * them. Until then they have no route, and `/ping/:key/:slug/start` answers what any unknown route
 * answers (404 `not_found`).
 */
const PING_SIGNALS = {
  "": (p, req, _ctx, projectId) =>
    p.heartbeat(projectId, s.heartbeatFields(req), () => p.auth.fromPingKey(req.pingKey)),
  start: undefined,
  fail: undefined,
  exit: undefined,
} satisfies Record<"" | "start" | "fail" | "exit", PingSignal | undefined>;

export function pingService(deps: Pick<UptimeDeps, "auth" | "limits">, heartbeat: RecordHeartbeat): ServiceBinding {
  const p: PingContext = { heartbeat, auth: deps.auth };
  return bind(
    PingService,
    {
      async ping(req, ctx) {
        // REST: the gate has resolved the path's key and taken the heartbeat limit, before the body.
        const counted = ctx.values.get(principalKey) !== undefined;
        const { projectId } = await deps.auth.pingKey(ctx, req.pingKey);
        // gRPC, Connect: the key was in the message, so the limit is taken here.
        if (!counted) await deps.limits.take("heartbeats", projectId);
        return PING_SIGNALS[""](p, req, ctx, projectId);
      },
    },
    { rules: { ping: s.heartbeatSchema } },
  );
}
