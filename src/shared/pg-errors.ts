// PostgreSQL errors the service answers on purpose, by SQLSTATE. One place for all of them: the
// code is the contract (node-postgres puts it on `err.code`), the constraint name where it matters.

const codeOf = (err: unknown): unknown => (err as { code?: unknown } | null)?.code;

/** unique_violation (23505), optionally of one constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  return (
    codeOf(err) === "23505" && (constraint === undefined || (err as { constraint?: string }).constraint === constraint)
  );
}

/** foreign_key_violation (23503). */
export const isForeignKeyViolation = (err: unknown): boolean => codeOf(err) === "23503";

/** deadlock_detected (40P01): the transaction was rolled back and may be run again. */
export const isDeadlock = (err: unknown): boolean => codeOf(err) === "40P01";

/** query_canceled (57014): the statement timeout, or a cancel request. */
export const isQueryCanceled = (err: unknown): boolean => codeOf(err) === "57014";

/** lock_not_available (55P03): a lock not granted within `lock_timeout`. */
export const isLockNotAvailable = (err: unknown): boolean => codeOf(err) === "55P03";

/** undefined_table (42P01). */
export const isUndefinedTable = (err: unknown): boolean => codeOf(err) === "42P01";

/**
 * check_violation (23514) raised by a partitioned insert whose row has no partition: the week's partition
 * was dropped (retention) after this process remembered it (events/partitions.ts PartitionCache).
 */
export const isNoPartition = (err: unknown): boolean =>
  codeOf(err) === "23514" && /^no partition of relation/.test((err as { message?: string }).message ?? "");

/** SQLSTATEs of a database that is not there for us: connection_exception (class 08), the server
 * shutting down or starting up (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now)
 * and too_many_connections (53300). */
const UNREACHABLE_STATES = new Set(["57P01", "57P02", "57P03", "53300"]);
/** Socket errors of a connection to it (refused, reset, timed out, unresolvable), over TCP or a unix socket. */
const UNREACHABLE_SOCKET = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
/** node-postgres's own errors for a connection lost or unusable (fixed English texts of the library). */
const UNREACHABLE_MESSAGE =
  /^(Connection terminated( unexpectedly)?|Client has encountered a connection error and is not queryable|timeout exceeded when trying to connect)$/;

/**
 * The database could not be reached, or ended the connection (a restart, a failover, an outage):
 * the request may succeed if tried again shortly. Answered 503 `unavailable`, not 500.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  const code = codeOf(err);
  if (
    typeof code === "string" &&
    (code.startsWith("08") || UNREACHABLE_STATES.has(code) || UNREACHABLE_SOCKET.has(code))
  )
    return true;
  // A unix socket (the embedded PostgreSQL's `/dir/.s.PGSQL.<port>`) whose file is gone: the server
  // stopped or is restarting. Only on `connect`: an ENOENT of any other call is no database outage.
  if (code === "ENOENT" && (err as { syscall?: unknown }).syscall === "connect") return true;
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === "string" && UNREACHABLE_MESSAGE.test(message);
}
