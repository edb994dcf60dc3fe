import type { Envelope } from "./envelope.js";
import type { Links } from "./links.js";
import { CHAT_COLORS, slackCompatibleTarget } from "./slack-compatible.js";
import { summarize, truncate } from "./summary.js";

// `mattermost`: Vigil's own type, beyond the spec's `http` and `discord` (docs/webhooks.md). A
// Mattermost incoming webhook (https://<server>/hooks/<id>, the server possibly under a path) takes
// a Slack-style JSON message: `text` (Markdown), `username`, and `attachments` with a colour bar,
// fields and a footer (the Slack-compatible base, slack-compatible.ts, sends it). Mattermost splits a
// post over 16,383 characters and drops attachment text past its props limit, so everything is cut
// to fit well within them here. Pure functions, tested directly.

export const MATTERMOST_LIMITS = {
  /** The post's `text`. */
  text: 4000,
  /** An attachment's title, and a field's title. */
  title: 256,
  /** An attachment's text. */
  attachmentText: 8000,
  fields: 25,
  fieldValue: 1024,
  footer: 1024,
} as const;

interface MattermostField {
  title: string;
  value: string;
  short: boolean;
}

interface MattermostAttachment {
  fallback: string;
  color: string;
  title: string;
  /** The dashboard's page of it (PUBLIC_URL set). */
  title_link?: string;
  text?: string;
  fields: MattermostField[];
  footer: string;
  /** Unix seconds. */
  ts: number;
}

export interface MattermostMessage {
  username: string;
  text: string;
  attachments: MattermostAttachment[];
}

/**
 * Mentions made inert: a zero-width space after each `@` that starts a mention (`@channel`, `@all`,
 * `@here`, `@<username>`, `@<group>`), so that no text of the message (a monitor's name, an
 * incident's title, an event's data) notifies a channel or a person. It reads the same on screen.
 * Mattermost has no `allowed_mentions`; this is its equivalent.
 */
function quietMentions(s: string): string {
  return s.replace(/@(?=[\p{L}\p{N}_.-])/gu, "@\u200B");
}

/** The Mattermost message for a delivery envelope (an event, an incident, or a test). */
export function mattermostMessage(env: Envelope, links: Links = {}): MattermostMessage {
  const sum = summarize(env);
  const L = MATTERMOST_LIMITS;
  // Every text goes through `cut`: mentions made inert, then cut to its limit.
  const cut = (v: string, max: number) => truncate(quietMentions(v), max);
  const text =
    sum.props === undefined
      ? sum.description && cut(sum.description, L.attachmentText)
      : `\`\`\`json\n${cut(JSON.stringify(sum.props, null, 2), L.attachmentText - 12)}\n\`\`\``;
  const title = cut(sum.title, L.title);
  return {
    username: "Vigil",
    text: cut(sum.kind === "event" ? `**${env.type}** in project \`${env.projectId}\`` : `**${title}**`, L.text),
    attachments: [
      {
        fallback: title,
        color: CHAT_COLORS[sum.kind],
        title,
        ...(links.dashboard ? { title_link: links.dashboard } : {}),
        ...(text === undefined ? {} : { text }),
        fields: sum.fields.slice(0, L.fields).map((f) => ({
          title: cut(f.name || "—", L.title),
          value: cut(f.value || "—", L.fieldValue),
          short: f.inline,
        })),
        footer: cut(`Vigil · project ${env.projectId} · delivery ${env.id}`, L.footer),
        ts: Math.floor(Date.parse(env.createdAt) / 1000),
      },
    ],
  };
}

/** An incoming-webhook URL's path ends in /hooks/<id> (the id: 26 lowercase letters and digits). */
export const mattermostTarget = slackCompatibleTarget({
  hookPath: /\/hooks\/[a-z0-9]{26}$/,
  hookHint: "a Mattermost incoming-webhook URL (…/hooks/<26-character id>)",
  message: mattermostMessage,
});
