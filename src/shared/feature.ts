import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type {
  DescMessage,
  DescMethodUnary,
  DescService,
  JsonValue,
  Message,
  MessageInitShape,
  MessageShape,
} from "@bufbuild/protobuf";
import type { Value } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { restJsonListKey, type ClientInfo } from "./context.js";
import { internal, queryTimeout, requestCancelled } from "./errors.js";
import { isQueryCanceled } from "./pg-errors.js";

// A feature (auth, projects, events, ...) contributes Connect services and, optionally,
// background work started on worker nodes.
//
// A service is bound with `bind(XService, { ...handlers })`: the handlers are typed against the
// generated descriptor as connect-es types them (`ServiceImpl<typeof XService>`), so a misspelled
// or missing method, a misspelled request field and a response field the output message does not
// have (at any depth) are compile errors (test/foundation/service-types.test.ts proves each).

/** A handler as the RPC router and the REST transcoder call it: `bind()` erased its types. */
export type Handler = (
  req: Message,
  ctx: HandlerContext,
) => Promise<MessageInitShape<DescMessage>> | MessageInitShape<DescMessage>;

/** Only `bind()` makes a ServiceBinding: a hand-built `{ desc, impl }` would skip its checks. */
declare const bound: unique symbol;

export interface ServiceBinding {
  readonly [bound]: true;
  desc: DescService;
  /** Per method (local name). Every vigil.v1 RPC is unary: neither adapter serves streams. */
  impl: Record<string, Handler>;
  /**
   * REST only: per method (local name), one `repeated google.protobuf.Value` field (local name)
   * that the transcoder hands over as the parsed JSON array (`restJsonListKey`, read with
   * `jsonListItems`) instead of decoding it into Value messages that the handler would turn back
   * into JSON. The handler must read it.
   */
  restJsonList?: Record<string, string>;
}

/** The methods of a service whose every RPC is unary (a streaming method makes `bind` refuse it). */
type UnaryService = DescService & { method: Record<string, DescMethodUnary> };

type Primitive = string | number | bigint | boolean | Date | Uint8Array | null | undefined;

/**
 * `A` (what a handler returns) with every property the message shape `S` does not have turned into
 * `never`, at any depth. TypeScript does not check excess properties of a returned object literal
 * (the return type is inferred, then compared structurally, and a message's init shape makes every
 * field optional), so `{ data, paginaton }` would pass: this makes it an error naming the property.
 * Free-form JSON (Struct: an index signature), maps and created messages are left as they are.
 */
type NoExtra<A, S> = A extends Primitive
  ? A
  : A extends { $typeName: string }
    ? A // a message made with create(): exact by construction
    : A extends { case: infer C; value: infer V }
      ? S extends { case: C; value: infer W } // the oneof's member of the same case
        ? { case: C; value: NoExtra<V, NonNullable<W>> }
        : A
      : A extends readonly (infer E)[]
        ? S extends readonly (infer F)[]
          ? readonly NoExtra<E, F>[]
          : A
        : string extends keyof S
          ? A
          : { [K in keyof A]: K extends keyof S ? NoExtra<A[K], NonNullable<S[K]>> : never };

type Returned<F> = F extends (...args: never[]) => infer R ? Awaited<R> : never;

/**
 * What a handler of method `M` may return, given that it returns `R`: a valid init of the output
 * message and nothing the message does not have.
 */
type Reply<M, R> =
  M extends DescMethodUnary<DescMessage, infer O>
    ? [R] extends [never]
      ? MessageInitShape<O>
      : R extends MessageInitShape<O>
        ? NoExtra<R, MessageShape<O>>
        : MessageInitShape<O>
    : never;
type Request<M> = M extends DescMethodUnary<infer In, DescMessage> ? MessageShape<In> : never;

/**
 * `ServiceImpl<S>` (connect-es's type of a service's handlers) with each handler's reply checked
 * against what `I` (the handlers as written) returns, and no method the service does not have.
 */
type Checked<S extends UnaryService, I> = {
  [M in keyof S["method"]]: (
    req: Request<S["method"][M]>,
    ctx: HandlerContext,
  ) => Promise<Reply<S["method"][M], Returned<I[M & keyof I]>>> | Reply<S["method"][M], Returned<I[M & keyof I]>>;
} & { [M in Exclude<keyof I, keyof S["method"]>]: never };

/** The `repeated google.protobuf.Value` fields of a method's input (local names). */
type ValueListField<M> =
  M extends DescMethodUnary<infer In, DescMessage>
    ? { [K in keyof MessageShape<In>]: MessageShape<In>[K] extends Value[] ? K : never }[keyof MessageShape<In>]
    : never;

export interface BindOptions<S extends UnaryService> {
  /** See ServiceBinding.restJsonList. */
  restJsonList?: { [M in keyof S["method"]]?: ValueListField<S["method"][M]> };
}

/** Binds a generated service descriptor to its handlers, typed as connect-es types them. */
export function bind<S extends UnaryService, I extends Checked<S, I>>(
  desc: S,
  impl: I,
  opts: BindOptions<S> = {},
): ServiceBinding {
  // Exactly what connect-es's router takes for this service; erased here, for the list of bindings.
  const typed: ServiceImpl<S> = impl;
  const binding: Omit<ServiceBinding, typeof bound> = {
    desc,
    impl: typed as unknown as Record<string, Handler>,
    restJsonList: opts.restJsonList as Record<string, string> | undefined,
  };
  return binding as ServiceBinding;
}

/**
 * Plain HTTP routes a feature answers itself, before the REST transcoder (src/server/app.ts): for
 * answers that are not one RPC's JSON (the status pages' HTML, badges and feed) or that are served
 * from bytes made once (their JSON). Public routes only: nothing here passes the gate.
 */
export interface HttpRoutes {
  /** The route of a request path (its template labels metrics), or undefined when the path is not one of them. */
  route(pathname: string):
    | {
        template: string;
        serve(
          req: IncomingMessage | Http2ServerRequest,
          res: ServerResponse | Http2ServerResponse,
          client: ClientInfo,
        ): void;
      }
    | undefined;
}

export interface Feature {
  name: string;
  services: ServiceBinding[];
  /** Plain HTTP routes (see HttpRoutes). */
  http?: HttpRoutes;
  /** Background work every node runs, whatever its ROLE (the projector of derived records); before `start`. */
  startEveryRole?(): void;
  /** Background work (schedulers, delivery workers); runs where ROLE is `worker` or `all`. */
  start?(): Promise<void>;
  /** Stops background work and flushes what was accepted. */
  stop?(): Promise<void>;
}

/**
 * The items of a method's `restJsonList` field: over REST the body's JSON array as parsed (and the
 * body's size, which bounds what any item can serialize to), else the Value messages the caller sent.
 */
export type JsonListItems = { json: true; items: JsonValue[]; bodyBytes: number } | { json: false; items: Value[] };

export function jsonListItems(ctx: HandlerContext, field: Value[]): JsonListItems {
  const json = ctx.values.get(restJsonListKey);
  return json ? { json: true, items: json.items, bodyBytes: json.bodyBytes } : { json: false, items: field };
}

/**
 * Every handler runs through this: ApiError / ConnectError pass through; anything else is logged
 * with its stack and becomes a bare `internal` error, so no SQL or stack reaches a client. When the
 * request's signal has aborted (the client left), the failure is Canceled and logged at debug.
 */
export function guardImpl(binding: ServiceBinding, log: Logger): ServiceBinding {
  const impl: Record<string, Handler> = {};
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
