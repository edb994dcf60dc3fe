/** What went wrong, in one word a program can switch on. */
export type VigilErrorCode =
  /** The server refused items (a 4xx for the whole request, or per-item `errors[]` of a 202/201). */
  | "rejected"
  /** Retries ended without an answer (shutdown's deadline, `retry.maxAttempts`, or a heartbeat's 5 tries). */
  | "gave_up"
  /** The bounded queue was full: the oldest items were dropped (`stats.dropped` counts each). */
  | "queue_full"
  /** The call could not be turned into a request (not JSON-serializable, wrong key kind, after shutdown...). */
  | "invalid"
  /** localStorage refused a write (quota); the queue stays in memory. */
  | "storage"
  /**
   * Browser: Vigil answers this page, but the browser withholds the answers to its keyed requests
   * (CORS): most likely the page's origin is not in the project's allowedOrigins. Reported once per
   * streak of failures; the items stay queued and are retried.
   */
  | "origin_refused";

/** Every error the SDK reports (to `onError`, or thrown by `heartbeat()`). */
export class VigilError extends Error {
  override readonly name = "VigilError";
  readonly code: VigilErrorCode;
  /** The HTTP status of the answer that decided it, when there was one. */
  readonly status?: number;
  /** The server's error code (`validation_failed`, `unauthenticated`...), when it sent one. */
  readonly serverCode?: string;
  /** The client ids of the events or metric points concerned. */
  readonly ids: string[];

  constructor(
    code: VigilErrorCode,
    message: string,
    opts: { status?: number; serverCode?: string; ids?: string[] } = {},
  ) {
    super(message);
    this.code = code;
    this.status = opts.status;
    this.serverCode = opts.serverCode;
    this.ids = opts.ids ?? [];
  }
}
