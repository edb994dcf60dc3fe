import { discordTarget } from "./discord.js";
import { httpTarget } from "./http.js";
import { mattermostTarget } from "./mattermost.js";
import type { WebhookTarget } from "./target.js";

// The webhook types: one entry per type, and the only list of them. The `type` column, the create
// request's enum, the rows and the sender all take `WebhookType` from here; a new type is a file in
// this folder and a line below (docs/architecture.md: "Add a webhook target").

const TARGETS = {
  http: httpTarget,
  discord: discordTarget,
  /** Vigil's own, beyond the spec's two (docs/webhooks.md). */
  mattermost: mattermostTarget,
} as const satisfies Record<string, WebhookTarget>;

export type WebhookType = keyof typeof TARGETS;

/** Every type, for zod's enum (the first is the default of a create without `type`). */
export const WEBHOOK_TYPES = Object.keys(TARGETS) as [WebhookType, ...WebhookType[]];

export const targetOf = (type: WebhookType): WebhookTarget => TARGETS[type];

export type { WebhookTarget } from "./target.js";
