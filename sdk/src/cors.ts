import { VigilError } from "./errors.js";
import type { FetchLike } from "./transport.js";

// A page whose origin is not in the project's allowedOrigins gets Vigil's 403 without CORS
// headers, so the browser withholds it: fetch rejects with the same TypeError as a network outage,
// and only the page's console says why. Both are retried (the owner may fix allowedOrigins, the
// network may come back), but a refusal must not stay silent. So, in a browser page calling
// Vigil on another origin, after two network errors in a row the SDK asks the same URL once
// without its key: a request Vigil answers every origin readably (a keyless ingestion request is
// a 401/403 with CORS headers; it stores nothing). An answer shows that the network and CORS work
// and only the keyed requests are withheld: onError hears `origin_refused`, once, until a request
// gets an answer again. No answer (an outage): asked again after twice as many errors.

/** Network errors in a row before the first check. */
const CORS_CHECK_AFTER = 2;

export interface CorsWatchOptions {
  fetch: FetchLike;
  /** The page's origin (`location.origin`), for the message. */
  origin: string;
  timeoutMs: number;
  report(e: VigilError): void;
}

export class CorsWatch {
  private failures = 0;
  private checkAt = CORS_CHECK_AFTER;
  private checking = false;
  private reported = false;
  /** Bumped by every answer: a check started before it speaks of a streak that is over. */
  private streak = 0;

  constructor(private readonly o: CorsWatchOptions) {}

  /** A request got an HTTP answer (any status): the streak is over. */
  answered(): void {
    this.failures = 0;
    this.checkAt = CORS_CHECK_AFTER;
    this.reported = false;
    this.streak++;
  }

  /** A request to `url` failed without an answer (fetch rejected: a network error or a CORS refusal). */
  networkError(url: string, ids: string[]): void {
    this.failures++;
    if (this.reported || this.checking || this.failures < this.checkAt) return;
    this.checking = true;
    const streak = this.streak;
    void this.answers(url).then((answered) => {
      this.checking = false;
      if (streak !== this.streak || this.reported) return;
      if (!answered) {
        this.checkAt = this.failures * 2;
        return;
      }
      this.reported = true;
      this.o.report(
        new VigilError(
          "origin_refused",
          `the browser withholds Vigil's answers from this page (CORS) although Vigil answers it: this page's origin (${this.o.origin}) is most likely not in the project's allowedOrigins. Items stay queued and are retried.`,
          { ids },
        ),
      );
    });
  }

  /** True when `url` answers a keyless request readably (a CORS-allowed 4xx, say). */
  private async answers(url: string): Promise<boolean> {
    try {
      // A string body is text/plain: a "simple" request, no preflight; no key, nothing stored.
      await this.o.fetch(url, { method: "POST", body: "", signal: AbortSignal.timeout(this.o.timeoutMs) });
      return true;
    } catch {
      return false;
    }
  }
}
