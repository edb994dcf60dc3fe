// @vigil/sdk: Vigil's client for Node 20+ and browsers (sdk/README.md). ESM, no runtime dependencies.
export {
  Vigil,
  BEACON_MAX_BYTES,
  type VigilOptions,
  type TrackOptions,
  type MetricOptions,
  type HeartbeatOptions,
  type HeartbeatResult,
  type VigilStats,
  type JsonObject,
  type JsonValue,
} from "./client.js";
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
