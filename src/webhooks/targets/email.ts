import { badRequest } from "../../shared/errors.js";
import type { Envelope } from "./envelope.js";
import type { Links } from "./links.js";
import { createMailer, type MailMessage } from "./mailer.js";
import { CHAT_COLORS } from "./slack-compatible.js";
import { incidentOf, summarize } from "./summary.js";
import type { WebhookTarget } from "./target.js";

// `email` (decisions.md "Notification channels"): `to` (1-10 addresses) instead of a URL; one
// message per delivery, to all of them, through SMTP_URL from MAIL_FROM (mailer.ts). Creating one
// without SMTP_URL is a 400. Its channel keeps the SMTP pool (mailer.ts). The mail is readable as plain text and as HTML: the headline (down,
// recovered, or the event type), the incident's sentence or the event's data, its fields (incident,
// monitor, times), and links to the dashboard and the status page (PUBLIC_URL set). The attempt
// records the SMTP reply (code as `statusCode`, text as `responseBody`).

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

/** Header values come from tenants' text: one line, bounded. */
const oneLine = (s: string, max = 200) => {
  const t = s.replace(/[\r\n\t]+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

function emailMessage(env: Envelope, to: string[], links: Links = {}): MailMessage {
  const sum = summarize(env);
  const inc = incidentOf(env);
  const subject = oneLine(inc ? `[Vigil] ${sum.title}` : `[Vigil] ${env.type} in project ${env.projectId}`);
  const linkList = [
    ...(links.dashboard ? [{ text: inc ? "Open the monitor in Vigil" : "Open in Vigil", href: links.dashboard }] : []),
    ...(links.statusPage ? [{ text: "Status page", href: links.statusPage }] : []),
  ];
  const json = sum.props === undefined ? undefined : JSON.stringify(sum.props, null, 2);
  const text = [
    sum.title,
    "",
    ...(sum.description ? [sum.description, ""] : []),
    ...sum.fields.map((f) => `${f.name}: ${f.value}`),
    ...(json ? ["", json] : []),
    ...(linkList.length ? ["", ...linkList.map((l) => `${l.text}: ${l.href}`)] : []),
    "",
    `Vigil · project ${env.projectId} · delivery ${env.id}`,
  ].join("\n");
  const rows = sum.fields
    .map(
      (f) =>
        `<tr><th align="left" style="padding:4px 12px 4px 0;color:#555">${escapeHtml(f.name)}</th><td style="padding:4px 0">${escapeHtml(f.value)}</td></tr>`,
    )
    .join("");
  const html = [
    `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>`,
    `<body style="font-family:system-ui,sans-serif;color:#111">`,
    `<div style="border-left:6px solid ${CHAT_COLORS[sum.kind]};padding:8px 16px">`,
    `<h1 style="font-size:20px;margin:0 0 8px">${escapeHtml(sum.title)}</h1>`,
    sum.description ? `<p>${escapeHtml(sum.description)}</p>` : "",
    rows ? `<table style="border-collapse:collapse;font-size:14px">${rows}</table>` : "",
    json ? `<pre style="background:#f4f4f5;padding:8px;font-size:13px">${escapeHtml(json)}</pre>` : "",
    linkList.length
      ? `<p>${linkList.map((l) => `<a href="${escapeHtml(l.href)}">${escapeHtml(l.text)}</a>`).join(" · ")}</p>`
      : "",
    `</div><p style="color:#777;font-size:12px">Vigil · project ${escapeHtml(env.projectId)} · delivery ${escapeHtml(env.id)}</p>`,
    `</body></html>`,
  ].join("");
  return {
    to,
    subject,
    text,
    html,
    headers: { "X-Vigil-Delivery-Id": env.id, "X-Vigil-Event-Type": oneLine(env.type) },
  };
}

export const emailTarget: WebhookTarget = {
  signed: false,
  address: "to",
  available: (config) => config.mail.smtpUrl !== undefined,
  async check(_dest, ctx) {
    if (ctx.config.mail.smtpUrl === undefined) {
      const message = "email webhooks need the server's SMTP_URL setting, which is not set";
      throw badRequest(`invalid request: type: ${message}`, [{ field: "type", message }]);
    }
  },
  open(settings) {
    const { smtpUrl, from } = settings.config.mail;
    // The pool is made now and connects on the first message.
    const mail = smtpUrl ? createMailer(smtpUrl, from, settings.config.webhooks.timeoutMs) : undefined;
    return {
      async deliver({ dest, env }, ctx) {
        const started = performance.now();
        const at = ctx.now.toISOString();
        if (!mail)
          return {
            record: { at, statusCode: null, durationMs: 0, error: "SMTP_URL is not set", responseBody: null },
            outcome: { ok: false },
          };
        const reply = await mail.send(emailMessage(env, dest.to ?? [], await settings.links(env)));
        return {
          record: {
            at,
            statusCode: reply.code,
            durationMs: Math.round(performance.now() - started),
            error: reply.error,
            responseBody: reply.response?.slice(0, 1024) ?? null,
          },
          outcome: { ok: reply.ok },
        };
      },
      ...(mail ? { mail: (m: MailMessage) => mail.send(m) } : {}),
      close: () => mail?.close(),
    };
  },
};
