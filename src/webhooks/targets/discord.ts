import type { Envelope } from "./envelope.js";
import { jsonTarget } from "./http-post.js";
import { summarize, truncate } from "./summary.js";

// `discord`: channel-webhook messages (decisions.md: Webhooks: `{content, embeds}`, within Discord's
// limits, honouring its 429 `retry_after`), unsigned, to any public host.
//
// Discord channel-webhook messages, kept within Discord's documented limits: content 2000;
// 10 embeds; 6000 characters over all embeds' title, description, field names and values, footer
// text and author name; title 256, description 4096, 25 fields, field name 256, value 1024,
// footer 2048, author 256. Pure functions, tested directly.

export const DISCORD_LIMITS = {
  content: 2000,
  embeds: 10,
  total: 6000,
  title: 256,
  description: 4096,
  fields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footer: 2048,
  author: 256,
} as const;

interface DiscordField {
  name: string;
  value: string;
  inline?: boolean;
}

export interface DiscordEmbed {
  title?: string;
  description?: string;
  url?: string;
  color?: number;
  timestamp?: string;
  fields?: DiscordField[];
  footer?: { text: string };
  author?: { name: string };
}

export interface DiscordMessage {
  content: string;
  username?: string;
  embeds: DiscordEmbed[];
  /**
   * Always `{parse: []}`: no text of the message (a monitor's name, an event's data) may ping
   * `@everyone`, `@here`, a role or a user; Discord still shows the text as written.
   */
  allowed_mentions: { parse: never[] };
}

const COLORS = { started: 0xe5484d, recovered: 0x30a46c, event: 0x5b5bd6 };

export { truncate };

/** Characters Discord counts toward the 6000 limit of one embed. */
export function embedChars(e: DiscordEmbed): number {
  let n =
    (e.title?.length ?? 0) + (e.description?.length ?? 0) + (e.footer?.text.length ?? 0) + (e.author?.name.length ?? 0);
  for (const f of e.fields ?? []) n += f.name.length + f.value.length;
  return n;
}

/**
 * Applies every limit: per-field cuts, then counts, then the 6000 total (trimming from the end); and
 * sets `allowed_mentions` (every message goes out through here).
 */
export function fitDiscordLimits(m: Omit<DiscordMessage, "allowed_mentions">): DiscordMessage {
  const embeds = m.embeds.slice(0, DISCORD_LIMITS.embeds).map((e) => {
    const out: DiscordEmbed = { ...e };
    if (e.title !== undefined) out.title = truncate(e.title, DISCORD_LIMITS.title);
    if (e.description !== undefined) out.description = truncate(e.description, DISCORD_LIMITS.description);
    if (e.footer) out.footer = { text: truncate(e.footer.text, DISCORD_LIMITS.footer) };
    if (e.author) out.author = { name: truncate(e.author.name, DISCORD_LIMITS.author) };
    if (e.fields) {
      out.fields = e.fields.slice(0, DISCORD_LIMITS.fields).map((f) => ({
        ...f,
        name: truncate(f.name || "—", DISCORD_LIMITS.fieldName),
        value: truncate(f.value || "—", DISCORD_LIMITS.fieldValue),
      }));
    }
    return out;
  });
  let total = embeds.reduce((n, e) => n + embedChars(e), 0);
  // Over the total: drop fields, then shorten descriptions, then drop embeds, all from the end.
  for (let i = embeds.length - 1; i >= 0 && total > DISCORD_LIMITS.total; i--) {
    const e = embeds[i];
    while (total > DISCORD_LIMITS.total && e.fields && e.fields.length > 0) {
      const f = e.fields.pop()!;
      total -= f.name.length + f.value.length;
    }
    if (total > DISCORD_LIMITS.total && e.description) {
      const keep = Math.max(0, e.description.length - (total - DISCORD_LIMITS.total));
      const next = keep > 0 ? truncate(e.description, keep) : undefined;
      total -= e.description.length - (next?.length ?? 0);
      e.description = next;
    }
    if (total > DISCORD_LIMITS.total && i > 0) {
      total -= embedChars(e);
      embeds.splice(i, 1);
    }
  }
  // A single embed can still exceed only through title+footer+author (<= 2560): impossible.
  return { ...m, content: truncate(m.content, DISCORD_LIMITS.content), embeds, allowed_mentions: { parse: [] } };
}

/** The Discord message for a delivery envelope (an event, an incident, or a test). */
export function discordMessage(env: Envelope): DiscordMessage {
  const sum = summarize(env);
  const embed: DiscordEmbed = {
    timestamp: env.createdAt,
    footer: { text: `Vigil · project ${env.projectId} · delivery ${env.id}` },
    author: { name: "Vigil" },
    title: sum.title,
    color: COLORS[sum.kind],
    description:
      sum.props === undefined
        ? sum.description
        : `\`\`\`json\n${truncate(JSON.stringify(sum.props, null, 2), DISCORD_LIMITS.description - 12)}\n\`\`\``,
    fields: sum.fields,
  };
  const content =
    sum.kind === "event" ? `**${env.type}** in project \`${env.projectId}\`` : `**${env.type}** · ${embed.title}`;
  return fitDiscordLimits({ content, username: "Vigil", embeds: [embed] });
}

/** "discord webhooks take any URL (the host is not checked)": any public host, as for http. */
export const discordTarget = jsonTarget({
  signed: false,
  body: (env) => JSON.stringify(discordMessage(env)),
});
