// @vigil/sdk: Vigil's client for Node 20+ and browsers (sdk/README.md). ESM, no runtime dependencies.
export { Vigil, GZIP_MIN_BYTES } from "./client.js";
export type {
  VigilOptions,
  TrackOptions,
  MetricOptions,
  HeartbeatOptions,
  HeartbeatResult,
  JobOptions,
  VigilStats,
  JsonObject,
  JsonValue,
} from "./options.js";
export { BEACON_MAX_BYTES } from "./page.js";
export { VigilError, type VigilErrorCode } from "./errors.js";
export { backoffDelay, parseRetryAfter, type RetryOptions, type FetchLike } from "./transport.js";
export type { StorageLike } from "./storage.js";
export {
  verifyWebhook,
  WebhookVerificationError,
  SIGNATURE_HEADER,
  type WebhookPayload,
  type WebhookVerificationReason,
  type VerifyWebhookOptions,
  type HeadersLike,
} from "./webhook.js";
