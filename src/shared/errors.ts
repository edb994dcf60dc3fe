import { Code, ConnectError } from "@connectrpc/connect";

// One error type for every layer. REST answers `{error: {code, message, details}}` with `status`;
// gRPC/Connect clients see the matching Code and the snake_case code in `vigil-error-code` metadata.

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

export const codeToStatus: Record<number, number> = {
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

export const badRequest = (message: string, details?: unknown) => new ApiError(400, "validation_failed", message, details);
export const unauthenticated = (message = "missing or invalid credentials") => new ApiError(401, "unauthenticated", message);
export const forbidden = (message = "not allowed") => new ApiError(403, "forbidden", message);
export const notFound = (what = "resource") => new ApiError(404, "not_found", `${what} not found`);
export const conflict = (message: string, details?: unknown) => new ApiError(409, "conflict", message, details);
export const tooLarge = (message: string) => new ApiError(413, "payload_too_large", message);
export const rateLimited = (retryAfterSeconds: number) =>
  new ApiError(429, "rate_limited", "rate limit exceeded", { retryAfterSeconds }, { "retry-after": String(retryAfterSeconds) });
export const internal = () => new ApiError(500, "internal", "internal server error");
/** The error of a request whose client went away (Connect's Canceled; REST 499, never written). */
export const requestCancelled = () => new ConnectError("the client went away", Code.Canceled);
/** A statement ran past STATEMENT_TIMEOUT_MS (PostgreSQL 57014): the server's bound, not the client's input. */
export const queryTimeout = () =>
  new ApiError(503, "query_timeout", "the query ran longer than the server allows; narrow the time range or the filters");

/**
 * Node's error on a request whose client went away before its body was read (IncomingMessage
 * destroyed with ECONNRESET "aborted"): not a server error. Answered (if anyone still listens) as
 * Canceled / 499 and never logged as an error.
 */
export const isClientGone = (err: unknown): boolean => {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === "ECONNRESET" && e.message === "aborted";
};

/** The REST view of any thrown value. Unknown errors become a bare 500: never their message. */
export function toRestError(err: unknown): { status: number; body: { error: { code: string; message: string; details?: unknown } }; headers: Headers } {
  if (err instanceof ApiError) {
    const body: { code: string; message: string; details?: unknown } = { code: err.errorCode, message: err.rawMessage };
    if (err.restDetails !== undefined) body.details = err.restDetails;
    return { status: err.status, body: { error: body }, headers: err.metadata };
  }
  if (err instanceof ConnectError && err.code !== Code.Internal && err.code !== Code.Unknown) {
    const status = codeToStatus[err.code] ?? 500;
    return { status, body: { error: { code: Code[err.code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase(), message: err.rawMessage } }, headers: new Headers() };
  }
  if (isClientGone(err)) return { status: 499, body: { error: { code: "canceled", message: "the client went away" } }, headers: new Headers() };
  return { status: 500, body: { error: { code: "internal", message: "internal server error" } }, headers: new Headers() };
}
