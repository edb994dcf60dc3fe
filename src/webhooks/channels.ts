import type { Deps } from "../platform/deps.js";
import { createLinks } from "./targets/links.js";
import { createMailer } from "./targets/mailer.js";
import type { Channels } from "./targets/target.js";

// What the channels beyond HTTP need from the server, made once per process from the config and
// shared by both runners (the embedded scheduler and the Temporal activities): the SMTP transport
// (SMTP_URL, MAIL_FROM), PagerDuty's endpoint (PAGERDUTY_EVENTS_URL) and the links (PUBLIC_URL).

export function createChannels(deps: Pick<Deps, "db" | "config">): Channels & { close(): void } {
  const { config } = deps;
  const mail = config.mail.smtpUrl
    ? createMailer(config.mail.smtpUrl, config.mail.from, config.webhooks.timeoutMs)
    : undefined;
  return {
    mail,
    pagerDutyEventsUrl: config.webhooks.pagerDutyEventsUrl,
    links: createLinks(deps.db, config.publicUrl),
    close: () => mail?.close(),
  };
}
