import { createTransport } from "nodemailer";

// The SMTP client of `email` webhooks: nodemailer's pooled SMTP transport to SMTP_URL (smtp://
// upgrades with STARTTLS when the server offers it; smtps:// is TLS from the start; user:pass@ logs
// in), from MAIL_FROM. One per process (channels.ts). Every reply is returned as the server gave it
// (code and text), with the SMTP password cut out of anything it could appear in: no attempt
// record, log line or response carries it.

/** SMTP connections of the pooled transport (and the subscribers' sender's mails in flight). */
export const MAIL_TRANSPORT_CONNECTIONS = 5;

export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
}

/** The server's answer to one message: its reply code and text, or what failed before one. */
export interface MailReply {
  ok: boolean;
  /** The SMTP reply code (250 when accepted; 4xx/5xx when refused); null without a reply. */
  code: number | null;
  /** The reply's text (`250 2.0.0 Ok: queued as ...`), and the refused recipients. */
  response: string | null;
  error: string | null;
}

export interface Mailer {
  send(m: MailMessage): Promise<MailReply>;
  close(): void;
}

/** Replaces the password (as written in the URL and decoded) in `s`. */
function scrubber(smtpUrl: string): (s: string) => string {
  let secrets: string[] = [];
  try {
    const raw = new URL(smtpUrl).password;
    secrets = [...new Set([raw, decodeURIComponent(raw)])].filter((x) => x.length > 0);
  } catch {
    /* not a URL: nothing to hide beyond the URL itself */
  }
  return (s) => secrets.reduce((acc, x) => acc.split(x).join("***"), s.split(smtpUrl).join("SMTP_URL"));
}

export function createMailer(smtpUrl: string, from: string, timeoutMs: number): Mailer {
  const scrub = scrubber(smtpUrl);
  const transport = createTransport({
    url: smtpUrl,
    pool: true,
    maxConnections: MAIL_TRANSPORT_CONNECTIONS,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    logger: false,
    debug: false,
  });
  return {
    async send(m) {
      try {
        const info = await transport.sendMail({
          from,
          to: m.to,
          subject: m.subject,
          text: m.text,
          html: m.html,
          headers: m.headers,
        });
        const code = Number(/^\d{3}/.exec(info.response ?? "")?.[0] ?? 250);
        const rejected = (info.rejected ?? []).map(String);
        const response = scrub(`${info.response ?? ""}${rejected.length ? ` (refused: ${rejected.join(", ")})` : ""}`);
        return { ok: true, code, response, error: null };
      } catch (err) {
        const e = err as { responseCode?: number; response?: string; code?: string; message?: string };
        const code = typeof e.responseCode === "number" ? e.responseCode : null;
        const what = code !== null ? `SMTP ${code}` : `${e.code ?? "error"}: ${e.message ?? "sending failed"}`;
        return {
          ok: false,
          code,
          response: e.response ? scrub(e.response) : null,
          error: scrub(what),
        };
      }
    },
    close: () => transport.close(),
  };
}
