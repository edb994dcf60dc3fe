import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { isDatabaseUnreachable } from "./pg-errors.js";

// One error type for every layer. REST answers `{error: {code, message, details}}` with `status`;
// gRPC/Connect clients see the matching Code, the snake_case code in `vigil-error-code` metadata,
// and google.rpc.Status details built from the same facts (rpcError below).

/** `ErrorInfo.domain` of every Vigil error (the same on every deployment, so clients can match on it). */
export const ERROR_DOMAIN = "vigil.dev";

const statusToCode: Record<number, Code> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  403: Code.PermissionDenied,
  404: Code.NotFound,
  405: Code.Unimplemented,
  409: Code.AlreadyExists,
  413: Code.ResourceExhausted,
  415: Code.InvalidArgument,
  429: Code.ResourceExhausted,
  500: Code.Internal,
  503: Code.Unavailable,
};

const codeToStatus: Record<number, number> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 404,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

export class ApiError extends ConnectError {
  /**
   * `instanceof ApiError` is a real prototype check. ConnectError's own static Symbol.hasInstance
   * accepts any ConnectError-shaped value (so errors from another copy of the library match), and a
   * subclass inherits it: without this, every plain ConnectError (a Canceled from a client that went
   * away, say) passed for an ApiError, and its missing `status` reached `writeHead`.
   */
  static override [Symbol.hasInstance](v: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(this, v);
  }
  readonly status: number;
  readonly errorCode: string;
  readonly restDetails?: unknown;
  constructor(status: number, errorCode: string, message: string, details?: unknown, headers?: Record<string, string>) {
    const metadata = new Headers(headers);
    metadata.set("vigil-error-code", errorCode);
    super(message, statusToCode[status] ?? Code.Unknown, metadata);
    this.status = status;
    this.errorCode = errorCode;
    this.restDetails = details;
  }
}

export const badRequest = (message: string, details?: unknown) =>
  new ApiError(400, "validation_failed", message, details);
export const unauthenticated = (message = "missing or invalid credentials") =>
  new ApiError(401, "unauthenticated", message);
export const forbidden = (message = "not allowed") => new ApiError(403, "forbidden", message);
export const notFound = (what = "resource") => new ApiError(404, "not_found", `${what} not found`);
export const conflict = (message: string, details?: unknown) => new ApiError(409, "conflict", message, details);
/** decisions.md "Corrections from the second round": a path that exists, asked with a method it does not serve. */
export const methodNotAllowed = (path: string, verb: string, allowed: readonly string[]) =>
  new ApiError(
    405,
    "method_not_allowed",
    `${path} does not accept ${verb}; allowed: ${allowed.join(", ")}`,
    undefined,
    {
      allow: allowed.join(", "),
    },
  );
export const tooLarge = (message: string) => new ApiError(413, "payload_too_large", message);
export const rateLimited = (retryAfterSeconds: number) =>
  new ApiError(
    429,
    "rate_limited",
    "rate limit exceeded",
    { retryAfterSeconds },
    { "retry-after": String(retryAfterSeconds) },
  );
export const internal = () => new ApiError(500, "internal", "internal server error");
/** The database is unreachable (shared/pg-errors.ts isDatabaseUnreachable): 503, worth a retry in a second. */
export const databaseUnavailable = () =>
  new ApiError(503, "unavailable", "the service cannot reach its database; try again shortly", undefined, {
    "retry-after": "1",
  });
/** The error of a request whose client went away (Connect's Canceled; REST 499, never written). */
export const requestCancelled = () => new ConnectError("the client went away", Code.Canceled);
/** A statement ran past STATEMENT_TIMEOUT_MS (PostgreSQL 57014): the server's bound, not the client's input. */
export const queryTimeout = () =>
  new ApiError(
    503,
    "query_timeout",
    "the query ran longer than the server allows; narrow the time range or the filters",
  );

/**
 * Node's error on a request whose client went away before its body was read: over HTTP/1.1 the
 * IncomingMessage destroyed with ECONNRESET "aborted"; over HTTP/2 the stream reset (RST_STREAM) or
 * its session gone while body bytes were still unread, which ends the request's reader with
 * ERR_STREAM_PREMATURE_CLOSE. Not a server error: answered (if anyone still listens) as Canceled /
 * 499 and never logged as an error.
 */
const isClientGone = (err: unknown): boolean => {
  const e = err as { code?: unknown; message?: unknown } | null;
  return (e?.code === "ECONNRESET" && e.message === "aborted") || e?.code === "ERR_STREAM_PREMATURE_CLOSE";
};

/** Connect's code names in snake_case: `Code.ResourceExhausted` -> "resource_exhausted". */
export const codeName = (c: Code): string => Code[c].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();

type FieldDetail = { field: string; message: string };
const isFieldList = (d: unknown): d is FieldDetail[] =>
  Array.isArray(d) && d.length > 0 && d.every((x) => typeof x?.field === "string" && typeof x?.message === "string");

/**
 * The RPC view of any thrown value (gRPC, gRPC-web, Connect): a ConnectError carrying
 * google.rpc.Status details derived from the same facts as the REST body, so both views agree:
 * `ErrorInfo` on every error (reason = the snake_case code of the REST body, domain ERROR_DOMAIN),
 * `BadRequest` field violations for INVALID_ARGUMENT errors with field details, `RetryInfo` for
 * rate limits (the Retry-After seconds). Unknown errors become a bare INTERNAL, as over REST.
 * Idempotent: an error that already carries details is returned as it is.
 */
export function rpcError(err: unknown): ConnectError {
  let e: ConnectError;
  if (err instanceof ConnectError) e = err;
  else if (isClientGone(err)) e = requestCancelled();
  else if (isDatabaseUnreachable(err)) e = databaseUnavailable();
  else e = new ConnectError("internal server error", Code.Internal);
  if (e.details.length > 0) return e;
  const api = e instanceof ApiError ? e : undefined;
  e.details.push({
    desc: ErrorInfoSchema,
    value: { reason: api?.errorCode ?? codeName(e.code), domain: ERROR_DOMAIN },
  });
  const rest = api?.restDetails;
  if (e.code === Code.InvalidArgument && isFieldList(rest)) {
    e.details.push({
      desc: BadRequestSchema,
      value: { fieldViolations: rest.map((d) => ({ field: d.field, description: d.message })) },
    });
  }
  const retry = (rest as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
  if (api?.status === 429 && typeof retry === "number" && Number.isFinite(retry)) {
    e.details.push({
      desc: RetryInfoSchema,
      value: { retryDelay: { seconds: BigInt(Math.max(0, Math.ceil(retry))) } },
    });
  }
  return e;
}

/** The REST view of any thrown value. Unknown errors become a bare 500: never their message. */
export function toRestError(err: unknown): {
  status: number;
  body: { error: { code: string; message: string; details?: unknown } };
  headers: Headers;
} {
  if (err instanceof ApiError) {
    const body: { code: string; message: string; details?: unknown } = { code: err.errorCode, message: err.rawMessage };
    if (err.restDetails !== undefined) body.details = err.restDetails;
    return { status: err.status, body: { error: body }, headers: err.metadata };
  }
  if (err instanceof ConnectError && err.code !== Code.Internal && err.code !== Code.Unknown) {
    const status = codeToStatus[err.code] ?? 500;
    return { status, body: { error: { code: codeName(err.code), message: err.rawMessage } }, headers: new Headers() };
  }
  if (isClientGone(err))
    return {
      status: 499,
      body: { error: { code: "canceled", message: "the client went away" } },
      headers: new Headers(),
    };
  if (isDatabaseUnreachable(err)) return toRestError(databaseUnavailable());
  return {
    status: 500,
    body: { error: { code: "internal", message: "internal server error" } },
    headers: new Headers(),
  };
}
