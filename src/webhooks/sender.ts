import { DEFAULT_PAGERDUTY_EVENTS_URL } from "../config/index.js";
import { openChannels, type OpenChannels } from "./channels.js";
import type { Envelope } from "./targets/envelope.js";
import type { WebhookType } from "./targets/index.js";
import type { AttemptRecord, DeliverContext, SendResult } from "./targets/target.js";

// One delivery attempt, the same entry for both runners (the embedded scheduler and the Temporal
// activity): the channel of the webhook's type delivers it (channels.ts; targets/: HTTP through
// http-post.ts, email through SMTP), bounded here by one deadline whatever the channel does.

export type { AttemptRecord, SendResult } from "./targets/target.js";
export { AGENT_OPTIONS } from "./targets/http-post.js";
export { retryAfterMs } from "./targets/retry-after.js";

/** A webhook as the sender needs it (its row's destination fields). */
export interface Target {
  type: WebhookType;
  url: string | null;
  secret: string | null;
  to?: string[] | null;
  routingKey?: string | null;
  /** A rotated-out secret that signs too until `previousSecretUntil` (POST .../rotate-secret). */
  previousSecret?: string | null;
  previousSecretUntil?: Date | null;
}

/** A row's store.ts TARGET_COLS, as pg returns them (rowTarget turns them into a Target). */
export interface TargetRow {
  type: WebhookType;
  url: string | null;
  to: string[] | null;
  routing_key: string | null;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: Date | null;
}

/** The Target of a row selected with store.ts TARGET_COLS (both runners). */
export function rowTarget(r: TargetRow): Target {
  return {
    type: r.type,
    url: r.url,
    to: r.to,
    routingKey: r.routing_key,
    secret: r.secret,
    previousSecret: r.previous_secret,
    previousSecretUntil: r.previous_secret_until,
  };
}

export type SendOptions = DeliverContext & {
  /** The server's opened channels (channels.ts); callers that only send over HTTP may leave it out. */
  channels?: OpenChannels;
};

let httpOnly: OpenChannels | undefined;
/** Channels for such a caller: no SMTP, PagerDuty's own endpoint, no links. */
const httpOnlyChannels = (timeoutMs: number) =>
  (httpOnly ??= openChannels({
    config: {
      webhooks: { timeoutMs, pagerDutyEventsUrl: DEFAULT_PAGERDUTY_EVENTS_URL },
      mail: { from: "" },
    },
    links: async () => ({}),
  }));

/** Beyond the target's own deadline (HTTP's is exact), so a channel that hangs still ends. */
const BACKSTOP_MS = 1_000;

export async function sendAttempt(
  target: Target,
  env: Envelope,
  eventId: string,
  opts: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  const fail = (error: string): SendResult => ({
    record: {
      at: opts.now.toISOString(),
      statusCode: null,
      durationMs: Math.round(performance.now() - started),
      error,
      responseBody: null,
    } satisfies AttemptRecord,
    outcome: { ok: false },
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<SendResult>((resolve) => {
    timer = setTimeout(
      () => resolve(fail(`timeout: no complete answer within ${opts.timeoutMs} ms`)),
      opts.timeoutMs + BACKSTOP_MS,
    );
  });
  const dest = {
    url: target.url,
    secret: target.secret,
    // The old secret signs too while the rotation's overlap lasts, judged at the attempt's time.
    previousSecret:
      target.previousSecret && target.previousSecretUntil && target.previousSecretUntil > opts.now
        ? target.previousSecret
        : null,
    to: target.to ?? null,
    routingKey: target.routingKey ?? null,
  };
  try {
    return await Promise.race([
      (opts.channels ?? httpOnlyChannels(opts.timeoutMs))
        .of(target.type)
        .deliver({ dest, env, eventId }, opts)
        .catch(() => fail("the channel failed unexpectedly")),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
