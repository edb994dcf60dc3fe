import type { Config } from "../config/index.js";
import type { Queryable } from "../storage/db.js";
import { targetOf, WEBHOOK_TYPES, type WebhookType } from "./targets/index.js";
import { createLinks } from "./targets/links.js";
import type { MailMessage, MailReply } from "./targets/mailer.js";
import type { Channel, ChannelSettings } from "./targets/target.js";

// Every type's channel, opened once per process from the config and shared by both runners (the
// embedded scheduler and the Temporal activities): what a channel keeps (email's SMTP pool) lives
// here until the feature stops. Links (PUBLIC_URL) are the one thing the server adds.

export interface OpenChannels {
  of(type: WebhookType): Channel;
  /** The server's own notices by mail, through the channel that sends mail (email's SMTP pool); undefined: no SMTP_URL. */
  mail(m: MailMessage): Promise<MailReply | undefined>;
  close(): void;
}

export function openChannels(settings: ChannelSettings): OpenChannels {
  const open = new Map(WEBHOOK_TYPES.map((type) => [type, targetOf(type).open(settings)]));
  return {
    of: (type) => open.get(type)!,
    mail: async (m) => {
      for (const c of open.values()) if (c.mail) return c.mail(m);
      return undefined;
    },
    close: () => {
      for (const c of open.values()) c.close?.();
    },
  };
}

/** The settings of this server's channels: its config, and links under PUBLIC_URL. */
export function channelSettings(
  db: Queryable,
  config: Pick<Config, "webhooks" | "mail" | "publicUrl">,
): ChannelSettings {
  return { config, links: createLinks(db, config.publicUrl) };
}
