import type { MailMessage } from "../webhooks/targets/mailer.js";
import { markup } from "../status/escape.js";
import { noticeLook, type NoticeType } from "./model.js";
import type { NoticeContent } from "./notices.js";

// The mails of a page's subscribers, plain text and HTML: the confirmation link, and one mail per
// notice with links to the page and to a one-click unsubscribe (RFC 8058: `List-Unsubscribe` with
// the https link, `List-Unsubscribe-Post: List-Unsubscribe=One-Click`). Links are under PUBLIC_URL.

/** Header values come from tenants' text: one line, bounded. */
const oneLine = (s: string, max = 200) => {
  const t = s.replace(/[\r\n\t]+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

export interface PageLinks {
  page: string;
  unsubscribe: string;
}

/** The addresses of a page's public routes under PUBLIC_URL. */
export function pageUrl(
  publicUrl: string,
  slug: string,
  route: "" | "confirm" | "unsubscribe",
  token?: string,
): string {
  const base = `${publicUrl}/status/${encodeURIComponent(slug)}${route ? `/${route}` : ""}`;
  return token ? `${base}?token=${encodeURIComponent(token)}` : base;
}

const html = (title: string, color: string, body: string[], footer: string) =>
  [
    `<!doctype html><html><head><meta charset="utf-8"><title>${markup(title)}</title></head>`,
    `<body style="font-family:system-ui,sans-serif;color:#111">`,
    `<div style="border-left:6px solid ${color};padding:8px 16px">`,
    ...body,
    `</div><p style="color:#777;font-size:12px">${footer}</p></body></html>`,
  ].join("");

export function confirmationMail(to: string, pageTitle: string, links: { page: string; confirm: string }): MailMessage {
  const subject = oneLine(`Confirm your subscription to ${pageTitle}`);
  const text = [
    `Someone (hopefully you) asked to receive the status notices of ${pageTitle} at this address.`,
    "",
    `Confirm: ${links.confirm}`,
    "",
    "If it was not you, ignore this mail: nothing will be sent to you.",
    `Status page: ${links.page}`,
  ].join("\n");
  const body = [
    `<h1 style="font-size:20px;margin:0 0 8px">${markup(subject)}</h1>`,
    `<p>Someone (hopefully you) asked to receive the status notices of ${markup(pageTitle)} at this address.</p>`,
    `<p><a href="${markup(links.confirm)}">Confirm the subscription</a></p>`,
    `<p>If it was not you, ignore this mail: nothing will be sent to you.</p>`,
  ];
  return {
    to: [to],
    subject,
    text,
    html: html(subject, "#2563eb", body, `<a href="${markup(links.page)}">${markup(pageTitle)}</a>`),
    headers: {},
  };
}

export function noticeMail(
  to: string,
  pageTitle: string,
  type: NoticeType,
  c: NoticeContent,
  links: PageLinks,
): MailMessage {
  const look = noticeLook(type);
  const subject = oneLine(`[${pageTitle}] ${look.headline}: ${c.title}`);
  const fields = [
    ...(c.status ? [["Status", c.status]] : []),
    ...(c.impact ? [["Impact", c.impact]] : []),
    ...(c.monitors.length ? [["Affected", c.monitors.join(", ")]] : []),
    ["At", c.at],
  ];
  const text = [
    `${look.headline}: ${c.title}`,
    "",
    ...(c.message ? [c.message, ""] : []),
    ...fields.map(([k, v]) => `${k}: ${v}`),
    "",
    `Status page: ${links.page}`,
    `Unsubscribe: ${links.unsubscribe}`,
  ].join("\n");
  const rows = fields
    .map(
      ([k, v]) =>
        `<tr><th align="left" style="padding:4px 12px 4px 0;color:#555">${markup(k)}</th><td>${markup(v)}</td></tr>`,
    )
    .join("");
  const body = [
    `<h1 style="font-size:20px;margin:0 0 8px">${markup(`${look.headline}: ${c.title}`)}</h1>`,
    c.message ? `<p>${markup(c.message)}</p>` : "",
    `<table style="border-collapse:collapse;font-size:14px">${rows}</table>`,
    `<p><a href="${markup(links.page)}">${markup(pageTitle)} status page</a></p>`,
  ];
  return {
    to: [to],
    subject,
    text,
    html: html(
      subject,
      look.color,
      body,
      `<a href="${markup(links.unsubscribe)}">Unsubscribe</a> from ${markup(pageTitle)}`,
    ),
    headers: {
      "List-Unsubscribe": `<${links.unsubscribe}>`,
      "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    },
  };
}
