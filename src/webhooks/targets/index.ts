import { discordTarget } from "./discord.js";
import { emailTarget } from "./email.js";
import { httpTarget } from "./http.js";
import { mattermostTarget } from "./mattermost.js";
import { pagerDutyTarget } from "./pagerduty.js";
import { slackTarget } from "./slack.js";
import type { WebhookTarget } from "./target.js";

// The webhook types: one entry per type, and the only list of them. The `type` column, the create
// request's enum, the rows, the sender and GET /v1/webhook-types (the dashboard's list) all take
// `WebhookType` from here; a new type is a file in this folder and a line below
// (docs/architecture.md: "Add a webhook target").

const TARGETS = {
  http: httpTarget,
  discord: discordTarget,
  slack: slackTarget,
  /** Vigil's own, beyond decisions.md's (docs/webhooks.md). */
  mattermost: mattermostTarget,
  email: emailTarget,
  pagerduty: pagerDutyTarget,
} as const satisfies Record<string, WebhookTarget>;

export type WebhookType = keyof typeof TARGETS;

/** Every type, for zod's enum (the first is the default of a create without `type`). */
export const WEBHOOK_TYPES = Object.keys(TARGETS) as [WebhookType, ...WebhookType[]];

export const targetOf = (type: WebhookType): WebhookTarget => TARGETS[type];

export type { WebhookTarget } from "./target.js";
