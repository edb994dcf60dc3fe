import { bodyBudgetKey, UNBOUNDED, type BodyBudget } from "../shared/inflight.js";
import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import { isUtf8 } from "node:buffer";
import { create, type DescField, type DescMethod, type JsonValue } from "@bufbuild/protobuf";
import type { ContextValues } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ApiError, badRequest, methodNotAllowed, toRestError } from "../shared/errors.js";
import { restJsonBodyKey, restJsonListKey, type ClientInfo } from "../shared/context.js";
import { assertStorableJson, assertStorableMessage } from "../shared/message-check.js";
import { textProblem } from "../shared/text.js";
import { redactPath } from "../shared/redact.js";
import { isJsonObject } from "../shared/json.js";
import { isStreaming, type Handler, type StreamHandler, type UnaryHandler } from "../shared/feature.js";
import type { ServiceBinding } from "../shared/feature.js";
import { isOriginRefused } from "../auth/principal.js";
import { bodyEncoding, readBody, readGzipBody, parseJsonBody, type AnyRequest } from "./body.js";
import { restContext } from "./context.js";
import { answerPreflight, dropCorsHeaders, requestOrigin, setCorsHeaders } from "./cors.js";
import { decodeRequest } from "./decode.js";
import { messageToRestJson } from "./json.js";
import { matchRoute, routesFor, type Route } from "./routes.js";

// The REST/JSON face of the Connect services: the route comes from the RPC's http rule, the
// request is decoded into the RPC's input message, the very same implementation runs, and the
// output message is written in the spec's JSON shape.

export type AnyResponse = ServerResponse | Http2ServerResponse;

/**
 * Runs once the route is known and BEFORE the body is read (credentials, cross-site checks): it
 * throws to refuse, or returns the request's context values (client info, the resolved caller).
 * `params`: the REST route's path variables (a ping URL's key is one); none over RPC.
 */
export type Admit = (
  method: DescMethod,
  verb: string,
  req: AnyRequest,
  client: ClientInfo,
  params?: Readonly<Record<string, string>>,
) => Promise<ContextValues>;

export interface RestOptions {
  bindings: ServiceBinding[];
  admit: Admit;
  maxBodyBytes: number;
  log: Logger;
  shutdownSignal?: AbortSignal;
  /** The browser ingestion RPCs: CORS (src/transcoding/cors.ts), publishable keys. */
  browserIngest?: ReadonlySet<DescMethod>;
  /** The RPCs whose REST bodies may be `Content-Encoding: gzip` (src/transcoding/body.ts). */
  compressedIngest?: ReadonlySet<DescMethod>;
}

/** The verbs routes are written with (google.api.http), for a 405's `Allow`. */
const VERBS = ["GET", "POST", "PUT", "PATCH", "DELETE"];

function send(res: AnyResponse, status: number, body: unknown, headers?: Headers): void {
  headers?.forEach((value, key) => {
    if (key === "vigil-error-code" || key === "content-type" || key === "content-length") return;
    if (key === "set-cookie") res.setHeader("set-cookie", headers.getSetCookie());
    else res.setHeader(key, value);
  });
  if (status === 204 || body === undefined) {
    res.writeHead(status);
    res.end();
    return;
  }
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(payload),
  });
  res.end(payload);
}

/**
 * A server-streaming RPC whose output is google.api.HttpBody (createRestHandler refuses any other): status
 * 200, the content type of the first chunk, then each chunk's bytes as they come, written with
 * backpressure (the next chunk is asked for once the socket has drained). A failure before the
 * first chunk throws (the caller answers the usual JSON error); after it the response is cut
 * (destroyed: no clean end, so a client sees a truncated transfer, never a complete-looking file).
 * The client going away ends the stream: `return()` runs the handler's `finally`, and its signal
 * (restContext) has aborted any statement in flight.
 */
export async function streamBody(res: AnyResponse, chunks: AsyncIterable<unknown>, headers?: Headers): Promise<void> {
  const it = chunks[Symbol.asyncIterator]();
  const first = await it.next();
  const body = (v: unknown) => v as { contentType?: string; data?: Uint8Array };
  let closed = false;
  const onClose = () => (closed = true);
  res.once("close", onClose);
  try {
    headers?.forEach((value, key) => {
      if (key !== "vigil-error-code" && key !== "content-type" && key !== "content-length") res.setHeader(key, value);
    });
    const head = first.done ? {} : body(first.value);
    res.writeHead(200, { "content-type": head.contentType || "application/octet-stream" });
    let next = first;
    while (!next.done) {
      const data = body(next.value).data;
      if (data && data.length > 0 && !(res as NodeJS.WritableStream).write(data)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done);
            res.off("close", done);
            resolve();
          };
          res.on("drain", done);
          res.on("close", done);
        });
      }
      if (closed || res.destroyed) {
        await it.return?.();
        return;
      }
      next = await it.next();
    }
    res.end();
  } catch (err) {
    // Headers are out: nothing to answer in JSON. Cut the transfer so it cannot pass for a whole file.
    await it.return?.().catch(() => undefined);
    res.destroy(err instanceof Error ? err : undefined);
    throw err;
  } finally {
    res.off("close", onClose);
  }
}

/** Path variables and query parameters are text too: NUL and lone surrogates are a 400 naming them. */
export function checkText(name: string, value: string): void {
  const why = textProblem(value) ?? textProblem(name);
  if (why) throw badRequest(`invalid value for parameter '${name}': ${why}`, [{ field: name, message: why }]);
}

export function createRestHandler(opts: RestOptions) {
  const routes: Route[] = routesFor(opts.bindings.map((b) => b.desc));
  const impls = new Map<string, Handler>();
  const jsonLists = new Map<string, DescField>();
  const jsonBodies = new Set<string>();
  for (const b of opts.bindings) {
    for (const name of b.restJsonBody ?? []) {
      const route = routes.find((r) => r.service === b.desc && r.method.localName === name);
      if (route?.body !== "*") throw new Error(`restJsonBody: ${b.desc.typeName}/${name} has no body: "*" route`);
      jsonBodies.add(`${b.desc.typeName}/${name}`);
    }
    for (const [name, fn] of Object.entries(b.impl)) impls.set(`${b.desc.typeName}/${name}`, fn);
    for (const m of b.desc.methods) {
      if (isStreaming(m) && m.output.typeName !== "google.api.HttpBody")
        throw new Error(
          `${b.desc.typeName}/${m.name}: REST streams google.api.HttpBody only, not ${m.output.typeName}`,
        );
    }
    for (const [name, field] of Object.entries(b.restJsonList ?? {})) {
      const f = b.desc.methods.find((m) => m.localName === name)?.input.fields.find((x) => x.localName === field);
      if (!f || f.fieldKind !== "list" || f.listKind !== "message" || f.message.typeName !== "google.protobuf.Value") {
        throw new Error(
          `restJsonList: ${b.desc.typeName}/${name}.${field} is not a repeated google.protobuf.Value field`,
        );
      }
      jsonLists.set(`${b.desc.typeName}/${name}`, f);
    }
  }

  const browserIngest = opts.browserIngest ?? new Set<DescMethod>();
  const isBrowserIngest = (route: Route | undefined) => !!route && browserIngest.has(route.method);
  /**
   * The verbs of a path's own routes: those of its most literal template (`.../events/query` is not
   * also `.../events/{eventId}` for GET), exactly as the document lists them (CORS preflights aside).
   */
  const allowedVerbs = (pathname: string): string[] => {
    const found = VERBS.flatMap((v) => {
      const route = matchRoute(routes, v, pathname).match?.route;
      return route ? [{ v, route, literals: route.segments.filter((x) => "literal" in x).length }] : [];
    });
    const most = Math.max(...found.map((f) => f.literals));
    return found.filter((f) => f.literals === most).map((f) => f.v);
  };

  return async function handleRest(req: AnyRequest, res: AnyResponse, client: ClientInfo): Promise<void> {
    const verb = (req.method ?? "GET").toUpperCase();
    let bodyRead = false;
    // The request's share of the bytes in flight (shared/inflight.ts), released once it is answered.
    let budget: BodyBudget = UNBOUNDED;
    try {
      const url = new URL(req.url ?? "/", "http://vigil.local");
      if (verb === "OPTIONS") {
        const post = matchRoute(routes, "POST", url.pathname).match;
        if (post && isBrowserIngest(post.route)) {
          client.route = post.route.template;
          bodyRead = true;
          req.resume();
          answerPreflight(res, requestOrigin(req));
          return;
        }
      }
      const { match, pathMatched } = matchRoute(routes, verb, url.pathname);
      if (!match) {
        req.resume();
        // decisions.md "Corrections from the second round": an unknown path is a 404; a path that
        // exists answers a method it does not serve with 405 and `Allow`.
        if (pathMatched) throw methodNotAllowed(redactPath(url.pathname), verb, allowedVerbs(url.pathname));
        throw new ApiError(404, "not_found", `no route for ${verb} ${redactPath(url.pathname)}`);
      }
      const { route, params } = match;
      client.route = route.template;
      if (isBrowserIngest(route)) setCorsHeaders(res, requestOrigin(req));
      for (const [name, value] of Object.entries(params)) checkText(name, value);
      for (const [name, value] of url.searchParams) checkText(name, value);
      const values = await opts.admit(route.method, verb, req, client, params);
      budget = values.get(bodyBudgetKey);
      // sendBeacon: the gate has resolved the publishable key of `?key=` (it refuses any other); the
      // body may then be text/plain, and `key` is no field of the request message.
      const beacon = isBrowserIngest(route) && url.searchParams.has("key");
      let query = url.searchParams;
      if (beacon) {
        query = new URLSearchParams(query);
        query.delete("key");
      }
      let body: JsonValue | undefined;
      let bodyBytes = 0;
      if (verb === "POST" || verb === "PATCH" || verb === "PUT") {
        const gzip = bodyEncoding(req.headers["content-encoding"], !!opts.compressedIngest?.has(route.method));
        const buf = await (gzip ? readGzipBody : readBody)(req, opts.maxBodyBytes, budget);
        bodyRead = true;
        bodyBytes = buf.length;
        if (!isUtf8(buf)) throw new ApiError(400, "invalid_json", "request body is not valid UTF-8");
        body = parseJsonBody(buf, req.headers["content-type"], beacon);
      } else {
        bodyRead = true;
        req.resume();
      }
      const rpc = `${route.service.typeName}/${route.method.localName}`;
      // A restJsonBody method's body (a JSON object: anything else is refused by decodeRequest) goes to
      // its handler as parsed, checked but not decoded (ServiceBinding.restJsonBody).
      const keepBody = jsonBodies.has(rpc) && isJsonObject(body);
      const input = decodeRequest(route, params, query, body, jsonLists.get(rpc), keepBody);
      if (keepBody) values.set(restJsonBodyKey, { json: body, bodyBytes });
      assertStorableMessage(route.method.input, input.message);
      if (keepBody) assertStorableJson(body);
      const fn = impls.get(rpc);
      if (!fn) throw new ApiError(404, "not_found", `no route for ${verb} ${redactPath(url.pathname)}`);
      const ctx = restContext({
        service: route.service,
        method: route.method,
        requestMethod: verb,
        url: url.toString(),
        headers: req.headers,
        values: values.set(restJsonListKey, input.jsonList && { items: input.jsonList, bodyBytes }),
        shutdownSignal: opts.shutdownSignal,
        response: res,
      });
      if (isStreaming(route.method)) {
        await streamBody(res, (fn as StreamHandler)(input.message, ctx), ctx.touchedResponseHeader);
        return;
      }
      const result = await (fn as UnaryHandler)(input.message, ctx);
      const output = create(route.method.output, result);
      const status = route.successStatus;
      send(
        res,
        status,
        status === 204
          ? undefined
          : messageToRestJson(route.method.output, output as unknown as Record<string, unknown>),
        ctx.touchedResponseHeader,
      );
    } catch (err) {
      const { status, body, headers } = toRestError(err);
      // An origin the project does not allow: the browser must not let the page read the answer.
      if (isOriginRefused(err) && !res.headersSent) dropCorsHeaders(res);
      // A server fault is an error; a deliberate 503 (the database out of reach, the statement
      // timeout) is for an operator to look at: a warning, as over gRPC (rpcLogLevel).
      if (status >= 500)
        opts.log[status === 503 ? "warn" : "error"]({ err, requestId: client.requestId }, "request failed");
      if (!bodyRead) {
        // Refused before its body was read: discard what arrives, and do not keep the connection.
        req.resume();
        if (!res.headersSent && "shouldKeepAlive" in res) res.shouldKeepAlive = false;
      }
      if (!res.headersSent) send(res, status, body, headers);
      else res.end();
    } finally {
      budget.release();
    }
  };
}
