import type { DescService } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { internal, queryTimeout, requestCancelled } from "./errors.js";
import { isQueryCanceled } from "./pg-errors.js";

// A feature (auth, projects, events, ...) contributes Connect services and, optionally,
// background work started on worker nodes.

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type UnaryFn = (req: any, ctx: HandlerContext) => Promise<any> | any;

export interface ServiceBinding {
  desc: DescService;
  impl: Record<string, UnaryFn>;
  /**
   * REST only: per method (local name), one `repeated google.protobuf.Value` field (proto name)
   * that the transcoder hands over as the parsed JSON array (`restJsonListKey`) instead of decoding
   * it into Value messages that the handler would turn back into JSON. The handler must read it.
   */
  restJsonList?: Record<string, string>;
}

export interface Feature {
  name: string;
  services: ServiceBinding[];
  /** Background work every node runs, whatever its ROLE (the projector of derived records); before `start`. */
  startEveryRole?(): void;
  /** Background work (schedulers, delivery workers); runs where ROLE is `worker` or `all`. */
  start?(): Promise<void>;
  /** Stops background work and flushes what was accepted. */
  stop?(): Promise<void>;
}

/**
 * Every handler runs through this: ApiError / ConnectError pass through; anything else is logged
 * with its stack and becomes a bare `internal` error, so no SQL or stack reaches a client. When the
 * request's signal has aborted (the client left), the failure is Canceled and logged at debug.
 */
export function guardImpl(binding: ServiceBinding, log: Logger): ServiceBinding {
  const impl: Record<string, UnaryFn> = {};
  for (const [name, fn] of Object.entries(binding.impl)) {
    impl[name] = async (req, ctx) => {
      try {
        return await fn(req, ctx);
      } catch (err) {
        if (err instanceof ConnectError && err.code !== 13 && err.code !== 2) throw err;
        // The client went away (or the node is shutting down) and the work failed with it: not a
        // server error, so not logged as one and not answered as a 5xx.
        if (ctx.signal.aborted) {
          log.debug({ err, rpc: `${binding.desc.typeName}/${name}` }, "request cancelled");
          throw requestCancelled();
        }
        // A statement stopped by STATEMENT_TIMEOUT_MS on any route: a clear 503, not a bare 500.
        if (isQueryCanceled(err)) throw queryTimeout();
        log.error({ err, rpc: `${binding.desc.typeName}/${name}` }, "unhandled error in handler");
        throw internal();
      }
    };
  }
  return { ...binding, impl };
}
