import type { Envelope } from "./envelope.js";

// What differs between webhook types. The table of types is targets/index.ts; the sender
// (sender.ts: connection, address checks, timeout, body cap, recording), the routes (service.ts)
// and the runners only ever ask the target of a webhook's type. docs/architecture.md: "Add a
// webhook target".

export interface WebhookTarget {
  /** Whether webhooks of this type carry a signing secret (made on create, `rotateSecret` on PATCH). */
  readonly signed: boolean;
  /**
   * Checks a target URL on create and on a URL change, after the shared rules (an http: or https:
   * URL; its host resolves to public addresses unless WEBHOOK_ALLOW_PRIVATE). Throws a 400
   * (`badRequest`) naming `url`. The sender checks the addresses again before every connection.
   */
  checkUrl(url: URL): void;
  /** The request body of one attempt (POSTed as application/json). */
  body(env: Envelope): string;
  /** Headers of this type beyond content-type, user-agent, content-length and host. */
  headers(attempt: {
    env: Envelope;
    eventId: string;
    body: string;
    secret: string | null;
    now: Date;
  }): Record<string, string>;
  /**
   * From a failed answer: how long the receiver asked us to wait (ms), if it said; the retry then
   * waits at least that long (retry.ts).
   */
  retryAfterMs(
    status: number,
    headers: Record<string, string | string[] | undefined>,
    body: string,
    now: Date,
  ): number | undefined;
}
