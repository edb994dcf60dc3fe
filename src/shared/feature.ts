import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type {
  DescMessage,
  DescMethod,
  DescMethodServerStreaming,
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
import type { z } from "zod";
import { restJsonBodyKey, restJsonListKey, type ClientInfo } from "./context.js";
import { databaseUnavailable, internal, queryTimeout, requestCancelled } from "./errors.js";
import { isDatabaseUnreachable, isQueryCanceled } from "./pg-errors.js";

// A feature (auth, projects, events, ...) contributes Connect services and, optionally,
// background work started on worker nodes.
//
// A service is bound with `bind(XService, { ...handlers })`: the handlers are typed against the
// generated descriptor as connect-es types them (`ServiceImpl<typeof XService>`), so a misspelled
// or missing method, a misspelled request field and a response field the output message does not
// have (at any depth) are compile errors (test/foundation/service-types.test.ts proves each).

/** A unary handler as the RPC router and the REST transcoder call it: `bind()` erased its types. */
export type UnaryHandler = (
  req: Message,
  ctx: HandlerContext,
) => Promise<MessageInitShape<DescMessage>> | MessageInitShape<DescMessage>;

/** A server-streaming handler (an async generator of the output messages), types erased likewise. */
export type StreamHandler = (req: Message, ctx: HandlerContext) => AsyncIterable<MessageInitShape<DescMessage>>;

/** Which one a method's handler is follows from its descriptor's `methodKind` (see `isStreaming`). */
export type Handler = UnaryHandler | StreamHandler;

/** A server-streaming method: its handler is a `StreamHandler`. */
export const isStreaming = (method: DescMethod): boolean => method.methodKind === "server_streaming";

/** Only `bind()` makes a ServiceBinding: a hand-built `{ desc, impl }` would skip its checks. */
declare const bound: unique symbol;

export interface ServiceBinding {
  readonly [bound]: true;
  desc: DescService;
  /** Per method (local name): unary, or server-streaming where the method's `methodKind` says so. */
  impl: Record<string, Handler>;
  /**
   * REST only: per method (local name), one `repeated google.protobuf.Value` field (local name)
   * that the transcoder hands over as the parsed JSON array (`restJsonListKey`, read with
   * `jsonListItems`) instead of decoding it into Value messages that the handler would turn back
   * into JSON. The handler must read it.
   */
  restJsonList?: Record<string, string>;
  /**
   * REST only: methods (local names) whose JSON body the transcoder hands over as parsed
   * (`restJsonBodyKey`, read with `jsonBody`) instead of decoding it into the request message: for a
   * handler that validates the JSON itself anyway (the single-event ingestion shares the batch items'
   * validator), it saves decoding what it would turn back into JSON. The handler must read it.
   */
  restJsonBody?: string[];
  /** Per server-streaming method (local name): the content types its HttpBody chunks carry (OpenAPI). */
  streamContentTypes?: Record<string, string[]>;
  /**
   * Per method (local name): the zod schema its handler validates the request with (`validate()`),
   * keyed by the input message's JSON names. The one written form of those rules: the OpenAPI
   * document states them (src/openapi/rules.ts) and test/clients/openapi-rules.test.ts checks it does.
   */
  rules?: Record<string, z.ZodType>;
}

/**
 * A service whose every RPC is unary or server-streaming: both adapters serve those (a client or
 * bidirectional stream makes `bind` refuse the service).
 */
type BindableService = DescService & { method: Record<string, DescMethodUnary | DescMethodServerStreaming> };

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
/** What a server-streaming handler yields. */
type Yielded<F> = F extends (...args: never[]) => AsyncIterable<infer Y> ? Y : never;

/**
 * What a handler of a method with output `O` may return (or yield, for a stream), given that it
 * returns `R`: a valid init of the output message and nothing the message does not have.
 */
type Reply<O extends DescMessage, R> = [R] extends [never]
  ? MessageInitShape<O>
  : R extends MessageInitShape<O>
    ? NoExtra<R, MessageShape<O>>
    : MessageInitShape<O>;

/**
 * A method's handler as connect-es types it (`ServiceImpl`), with its reply checked against `F`
 * (the handler as written): unary returns one message, server-streaming yields them.
 */
type HandlerOf<M, F> =
  M extends DescMethodServerStreaming<infer In, infer O>
    ? (req: MessageShape<In>, ctx: HandlerContext) => AsyncIterable<Reply<O, Yielded<F>>>
    : M extends DescMethodUnary<infer In, infer O>
      ? (req: MessageShape<In>, ctx: HandlerContext) => Promise<Reply<O, Returned<F>>> | Reply<O, Returned<F>>
      : never;

/**
 * `ServiceImpl<S>` (connect-es's type of a service's handlers) with each handler's reply checked
 * against what `I` (the handlers as written) returns, and no method the service does not have.
 */
type Checked<S extends BindableService, I> = {
  [M in keyof S["method"]]: HandlerOf<S["method"][M], I[M & keyof I]>;
} & { [M in Exclude<keyof I, keyof S["method"]>]: never };

/** The server-streaming methods of a service (local names). */
type StreamingMethod<S extends BindableService> = {
  [M in keyof S["method"]]: S["method"][M] extends DescMethodServerStreaming ? M : never;
}[keyof S["method"]];

/** The `repeated google.protobuf.Value` fields of a method's input (local names). */
type ValueListField<M> = M extends
  DescMethodUnary<infer In, DescMessage> | DescMethodServerStreaming<infer In, DescMessage>
  ? { [K in keyof MessageShape<In>]: MessageShape<In>[K] extends Value[] ? K : never }[keyof MessageShape<In>]
  : never;

export interface BindOptions<S extends BindableService> {
  /** See ServiceBinding.restJsonList. */
  restJsonList?: { [M in keyof S["method"]]?: ValueListField<S["method"][M]> };
  /** See ServiceBinding.restJsonBody. */
  restJsonBody?: (keyof S["method"] & string)[];
  /** See ServiceBinding.streamContentTypes: required in spirit for every HttpBody stream (the OpenAPI test reads it). */
  streamContentTypes?: { [M in StreamingMethod<S>]?: string[] };
  /** See ServiceBinding.rules. */
  rules?: { [M in keyof S["method"]]?: z.ZodType };
}

/** Binds a generated service descriptor to its handlers, typed as connect-es types them. */
export function bind<S extends BindableService, I extends Checked<S, I>>(
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
    restJsonBody: opts.restJsonBody,
    streamContentTypes: opts.streamContentTypes as Record<string, string[]> | undefined,
    rules: opts.rules as Record<string, z.ZodType> | undefined,
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

/** A `restJsonBody` method's body as parsed over REST, with its size; undefined over gRPC and Connect. */
export function jsonBody(ctx: HandlerContext): { json: JsonValue; bodyBytes: number } | undefined {
  return ctx.values.get(restJsonBodyKey);
}

/**
 * Every handler runs through this: ApiError / ConnectError pass through; anything else is logged
 * with its stack and becomes a bare `internal` error, so no SQL or stack reaches a client. When the
 * request's signal has aborted (the client left), the failure is Canceled and logged at debug.
 * A server stream is guarded the same way wherever it fails: before its first message or after.
 */
export function guardImpl(binding: ServiceBinding, log: Logger): ServiceBinding {
  const impl: Record<string, Handler> = {};
  const guard = (err: unknown, ctx: HandlerContext, name: string): unknown => {
    if (err instanceof ConnectError && err.code !== 13 && err.code !== 2) return err;
    // The client went away (or the node is shutting down) and the work failed with it: not a
    // server error, so not logged as one and not answered as a 5xx.
    if (ctx.signal.aborted) {
      log.debug({ err, rpc: `${binding.desc.typeName}/${name}` }, "request cancelled");
      return requestCancelled();
    }
    // A statement stopped by STATEMENT_TIMEOUT_MS on any route: a clear 503, not a bare 500.
    if (isQueryCanceled(err)) return queryTimeout();
    // The database restarting, failing over or out of reach: a 503 to retry, not a bare 500.
    if (isDatabaseUnreachable(err)) {
      log.warn({ err, rpc: `${binding.desc.typeName}/${name}` }, "database unreachable");
      return databaseUnavailable();
    }
    log.error({ err, rpc: `${binding.desc.typeName}/${name}` }, "unhandled error in handler");
    return internal();
  };
  for (const [name, fn] of Object.entries(binding.impl)) {
    const method = binding.desc.methods.find((m) => m.localName === name);
    if (method && isStreaming(method)) {
      const stream = fn as StreamHandler;
      impl[name] = async function* (req: Message, ctx: HandlerContext) {
        try {
          yield* stream(req, ctx);
        } catch (err) {
          throw guard(err, ctx, name);
        }
      };
      continue;
    }
    const unary = fn as UnaryHandler;
    impl[name] = async (req: Message, ctx: HandlerContext) => {
      try {
        return await unary(req, ctx);
      } catch (err) {
        throw guard(err, ctx, name);
      }
    };
  }
  return { ...binding, impl };
}
