import type http from "node:http";
import type https from "node:https";
import type { Resolver } from "./address.js";
import type { Envelope } from "./envelope.js";
import type { Links } from "./links.js";
import type { MailMessage, MailReply } from "./mailer.js";
import type { Config } from "../../config/index.js";

// What differs between webhook types. The table of types is targets/index.ts; the routes
// (service.ts), the sender (sender.ts: the attempt's deadline) and both runners (the embedded
// scheduler and the Temporal activity) only ever ask the target of a webhook's type. A target
// delivers its own messages through the channel it opens (once per process, channels.ts): the
// HTTP-based ones through `jsonTarget` (http-post.ts: connection, address checks, timeout, body cap,
// recording), the chat ones through the Slack-compatible base (slack-compatible.ts), email through
// its SMTP pool (email.ts). A type reads its own settings from the config it is opened with, so a
// new channel is its file and its TARGETS line. docs/architecture.md: "Add a webhook target".

/** Where a webhook's deliveries go: the fields of its row; each type uses the one its `address` names. */
export interface Destination {
  url: string | null;
  /** `email`: 1-10 addresses, one message to all of them. */
  to: string[] | null;
  /** `pagerduty`: the Events API v2 integration key. */
  routingKey: string | null;
  secret: string | null;
  /** A rotated-out secret still in its overlap (signs next to `secret`); absent or null: none. */
  previousSecret?: string | null;
}

/** The request field a type takes its destination from (the others must be absent). */
export type AddressField = "url" | "to" | "routingKey";

/** One attempt as recorded: the channel's own answer (HTTP status, SMTP reply code) is `statusCode`. */
export interface AttemptRecord {
  at: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
}

/** What one attempt tells the retry rule (retry.ts `nextAttempt`). */
export interface AttemptOutcome {
  /** A 2xx answer within the timeout (or the channel's own success: an SMTP 2xx reply). */
  ok: boolean;
  /** A receiver's own wait (Discord's 429 `retry_after`, or a `Retry-After` header), in ms. */
  retryAfterMs?: number;
}

export interface SendResult {
  record: AttemptRecord;
  outcome: AttemptOutcome;
}

/** The settings channels read (each its own: SMTP_URL and MAIL_FROM, PAGERDUTY_EVENTS_URL...). */
interface ChannelConfig {
  webhooks: Pick<Config["webhooks"], "timeoutMs" | "pagerDutyEventsUrl">;
  mail: Config["mail"];
}

/** What a channel is opened with, once per process (channels.ts). */
export interface ChannelSettings {
  config: ChannelConfig;
  /** Links to the dashboard and the status pages of a delivery (PUBLIC_URL unset: none). */
  links(env: Envelope): Promise<Links>;
}

/** An opened channel: what delivers, with any client it keeps (SMTP's pool) until `close`. */
export interface Channel {
  /**
   * One attempt. Never throws: every failure is an outcome with its record. `eventId`: the event's id
   * (for incidents the per-transition key; for tests `evt_test_...`).
   */
  deliver(attempt: { dest: Destination; env: Envelope; eventId: string }, ctx: DeliverContext): Promise<SendResult>;
  /** A channel that sends mail (email) also sends the server's own notices through its transport; absent when unconfigured. */
  mail?(m: MailMessage): Promise<MailReply>;
  close?(): void;
}

export interface DeliverContext {
  timeoutMs: number;
  allowPrivate: boolean;
  /** The attempt's time (signature `t`, recorded `at`). */
  now: Date;
  /** DNS for an HTTP target's host (default: the system resolver). Every address it returns is checked. */
  resolve?: Resolver;
  /** Connection pools (default: the shared keep-alive agents of http-post.ts). */
  agents?: { http?: http.Agent; https?: https.Agent };
}

export interface CheckContext {
  allowPrivate: boolean;
  config: ChannelConfig;
}

export interface WebhookTarget {
  /** Whether webhooks of this type carry a signing secret (made on create, `rotateSecret` on PATCH). */
  readonly signed: boolean;
  /** The request field naming the destination. */
  readonly address: AddressField;
  /** A new webhook's name when neither the request nor its destination gives one (no url, no address). */
  readonly defaultName?: string;
  /**
   * Checks a destination on create and on a change of it (the shared shape rules already passed:
   * the address field present, the others absent). Throws a 400 (`badRequest`) naming the field.
   */
  check(dest: Destination, ctx: CheckContext): Promise<void>;
  /** Whether this server can send the type (email: SMTP_URL set); absent: always. */
  available?(config: ChannelConfig): boolean;
  /** The channel, opened once per process from the settings and shared by both runners. */
  open(settings: ChannelSettings): Channel;
}
