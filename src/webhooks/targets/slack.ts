import type { Envelope } from "./envelope.js";
import type { Links } from "./links.js";
import { CHAT_COLORS, slackCompatibleTarget } from "./slack-compatible.js";
import { summarize, truncate } from "./summary.js";

// `slack`: a Slack incoming webhook (https://hooks.slack.com/services/T…/B…/…; decisions.md
// "Notification channels"). The message is Block Kit inside one attachment, whose `color` is the
// bar by state (red down, green recovered, violet events): a header, the incident's sentence or the
// event's data as a code block, up to 10 fields, buttons to the dashboard and the status page
// (PUBLIC_URL set), and a context line with the delivery. The top-level `text` is the notification's
// text. Within Slack's documented limits (Block Kit: header text 150, section text 3,000, 10 fields
// of 2,000, 10 context elements, button text 75, button URL 3,000, 50 blocks; a message's text
// 40,000, kept to 4,000 as Slack advises). Text a tenant chose is escaped (`&`, `<`, `>`), so a
// monitor named `<!channel>` notifies no one. Pure functions, tested directly.

export const SLACK_LIMITS = {
  text: 4000,
  header: 150,
  section: 3000,
  fields: 10,
  field: 2000,
  context: 10,
  buttonText: 75,
  buttonUrl: 3000,
  blocks: 50,
} as const;

interface PlainText {
  type: "plain_text";
  text: string;
  emoji?: boolean;
}
interface Mrkdwn {
  type: "mrkdwn";
  text: string;
}
interface Button {
  type: "button";
  text: PlainText;
  url: string;
  action_id: string;
}
type SlackBlock =
  | { type: "header"; text: PlainText }
  | { type: "section"; text?: Mrkdwn; fields?: Mrkdwn[] }
  | { type: "actions"; elements: Button[] }
  | { type: "context"; elements: Mrkdwn[] };

export interface SlackMessage {
  text: string;
  attachments: { color: string; fallback: string; blocks: SlackBlock[] }[];
}

/** Slack's control characters in text made inert (its mentions are `<!channel>`, `<@U…>`). */
function slackEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Escaped, then cut (never inside an entity, never half a surrogate pair). */
function cut(s: string, max: number): string {
  const e = slackEscape(s);
  if (e.length <= max) return e;
  let t = truncate(e, max);
  const amp = t.lastIndexOf("&");
  if (amp >= 0 && !t.slice(amp).includes(";")) t = `${t.slice(0, amp)}…`;
  return t;
}

export function slackMessage(env: Envelope, links: Links = {}): SlackMessage {
  const sum = summarize(env);
  const L = SLACK_LIMITS;
  const blocks: SlackBlock[] = [
    { type: "header", text: { type: "plain_text", text: truncate(sum.title, L.header), emoji: true } },
  ];
  const body =
    sum.props === undefined
      ? sum.description && cut(sum.description, L.section)
      : `\`\`\`${cut(JSON.stringify(sum.props, null, 2), L.section - 6)}\`\`\``;
  if (body) blocks.push({ type: "section", text: { type: "mrkdwn", text: body } });
  const fields = sum.fields.slice(0, L.fields).map((f) => {
    const name = cut(f.name || "—", 200);
    return { type: "mrkdwn" as const, text: `*${name}*\n${cut(f.value || "—", L.field - name.length - 3)}` };
  });
  if (fields.length) blocks.push({ type: "section", fields });
  const buttons: Button[] = [];
  if (links.dashboard && links.dashboard.length <= L.buttonUrl)
    buttons.push({
      type: "button",
      text: { type: "plain_text", text: "Open in Vigil" },
      url: links.dashboard,
      action_id: "vigil_dashboard",
    });
  if (links.statusPage && links.statusPage.length <= L.buttonUrl)
    buttons.push({
      type: "button",
      text: { type: "plain_text", text: "Status page" },
      url: links.statusPage,
      action_id: "vigil_status_page",
    });
  if (buttons.length) blocks.push({ type: "actions", elements: buttons });
  blocks.push({
    type: "context",
    elements: [{ type: "mrkdwn", text: cut(`Vigil · project ${env.projectId} · delivery ${env.id}`, L.section) }],
  });
  const text = cut(sum.kind === "event" ? `${env.type} in project ${env.projectId}` : sum.title, L.text);
  return { text, attachments: [{ color: CHAT_COLORS[sum.kind], fallback: text, blocks }] };
}

/** An incoming-webhook URL's path: /services/<team>/<bot>/<token>. */
export const slackTarget = slackCompatibleTarget({
  hookPath: /^\/services\/[A-Za-z0-9]+\/[A-Za-z0-9]+\/[A-Za-z0-9]+$/,
  hookHint: "a Slack incoming-webhook URL (https://hooks.slack.com/services/T…/B…/…)",
  message: slackMessage,
});
