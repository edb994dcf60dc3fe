// The signature of http webhooks lives with the http target (targets/signature.ts); this path is
// the one docs/webhooks.md shows receivers, kept for them.
export * from "./targets/signature.js";
