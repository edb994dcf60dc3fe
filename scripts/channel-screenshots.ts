// Screenshots of every chat and paging channel's message for docs/webhooks.md:
//
//   npx tsx scripts/channel-screenshots.ts [outDir]      (default docs/images; needs /usr/bin/chromium)
//
// Each channel (src/webhooks/targets: slack, discord, mattermost, pagerduty) delivers one real
// `incident.started` of a monitor, through its own deliver() over HTTP, to a local receiver on
// 127.0.0.1 (as the receivers of test/webhooks/*.test.ts get them); the body the receiver got is
// then drawn in an HTML mock of that product (Slack's Block Kit in an attachment with its colour
// bar, Discord's embed, Mattermost's attachment, PagerDuty's incident summary) and screenshotted
// with headless Chromium. These are renderings of the real payloads, not screenshots of the
// vendors' apps: fonts, spacing and icons are approximations.
import http from "node:http";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { envelope } from "../src/webhooks/targets/envelope.js";
import type { DiscordMessage } from "../src/webhooks/targets/discord.js";
import { targetOf, type WebhookType } from "../src/webhooks/targets/index.js";
import type { MattermostMessage } from "../src/webhooks/targets/mattermost.js";
import type { PagerDutyEvent } from "../src/webhooks/targets/pagerduty.js";
import type { SlackMessage } from "../src/webhooks/targets/slack.js";

type SlackBlock = SlackMessage["attachments"][number]["blocks"][number];

const OUT = path.resolve(process.argv[2] ?? "docs/images");
const CHROMIUM = "/usr/bin/chromium";
const PUBLIC = "https://vigil.example.com";
const STARTED = new Date("2026-03-02T09:14:07.000Z");

/** An incident.started of a monitor, as uptime hands it to the webhooks (docs/webhooks.md "Incident payloads"). */
const monitor = {
  id: "mon_7Hq2xLw9",
  name: "payments-api",
  slug: "payments-api",
  type: "heartbeat",
  status: "down",
  expectedIntervalMs: 60_000,
  gracePeriodMs: 0,
};
const incident = {
  id: "inc_3Vb8tQe1",
  kind: "monitor",
  monitorId: monitor.id,
  monitorIds: [monitor.id],
  impact: "major",
  status: "open",
  startedAt: STARTED.toISOString(),
  endedAt: null,
  durationMs: null,
  title: "payments-api is down",
  description: "No heartbeat within 60 s (last: down)",
  createdAt: STARTED.toISOString(),
  updatedAt: STARTED.toISOString(),
};
const env = envelope({
  id: "whd_018e0bf322d2a1b2c3d4",
  eventType: "incident.started",
  createdAt: STARTED,
  projectId: "prj_shop",
  payload: { incident, monitor },
});

/** A receiver on 127.0.0.1 that keeps each body by path and answers as the service does. */
async function receiver(): Promise<{ url: string; bodies: Map<string, unknown>; close(): Promise<void> }> {
  const bodies = new Map<string, unknown>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      bodies.set(req.url ?? "/", JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown);
      res.writeHead(req.url?.startsWith("/v2/enqueue") ? 202 : 200, { "content-type": "application/json" });
      res.end(req.url?.startsWith("/v2/enqueue") ? '{"status":"success","message":"Event processed"}' : "ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, bodies, close: () => new Promise((r) => server.close(() => r())) };
}

/** The body `type`'s channel POSTs for the incident, as the receiver got it. */
async function delivered(type: WebhookType, rx: { url: string; bodies: Map<string, unknown> }): Promise<unknown> {
  const channel = targetOf(type).open({
    config: {
      webhooks: { timeoutMs: 5_000, pagerDutyEventsUrl: `${rx.url}/v2/enqueue` },
      mail: { from: "Vigil <alerts@vigil.example.com>" },
    },
    links: async () => ({
      dashboard: `${PUBLIC}/projects/prj_shop/uptime/${monitor.id}`,
      statusPage: `${PUBLIC}/status/shop`,
    }),
  });
  const pathOf = type === "pagerduty" ? "/v2/enqueue" : `/${type}/T0001/B0002/hook`;
  const r = await channel.deliver(
    {
      dest: { url: `${rx.url}${pathOf}`, to: null, routingKey: "R0UT1NGKEY0123456789abcdefABCDEF", secret: null },
      env,
      eventId: incident.id,
    },
    { timeoutMs: 5_000, allowPrivate: true, now: STARTED },
  );
  channel.close?.();
  if (!r.outcome.ok) throw new Error(`${type}: ${JSON.stringify(r.record)}`);
  const body = rx.bodies.get(pathOf);
  if (!body) throw new Error(`${type}: the receiver got nothing`);
  return body;
}

const esc = (s: unknown) =>
  String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
/** Slack's escaped text (&amp; &lt; &gt;) shown as Slack shows it, with *bold*, `code` and <url|label> links. */
function mrkdwn(s: string): string {
  const links: string[] = [];
  const t = s.replace(/<(https?:[^|>]+)\|([^>]+)>/g, (_m, u: string, l: string) => {
    links.push(`<a href="${u}">${l}</a>`);
    return `\u0000${links.length - 1}\u0000`;
  });
  return t
    .replace(/&lt;/g, "\u0001")
    .replace(/&gt;/g, "\u0002")
    .replace(/&amp;/g, "\u0003")
    .replace(/[&<>"]/g, (c) => esc(c))
    .replace(/\u0001/g, "&lt;")
    .replace(/\u0002/g, "&gt;")
    .replace(/\u0003/g, "&amp;")
    .replace(/\*([^*\n]+)\*/g, "<b>$1</b>")
    .replace(/`([^`\n]+)`/g, "<code>$1</code>")
    .replace(/\n/g, "<br>")
    .replace(/\u0000(\d+)\u0000/g, (_m, i: string) => links[Number(i)]);
}
/** Markdown of Discord and Mattermost: **bold**, `code`, [label](url). */
const markdown = (s: string) =>
  esc(s)
    .replace(/\*\*([^*]+)\*\*/g, "<b>$1</b>")
    .replace(/`([^`\n]+)`/g, "<code>$1</code>")
    .replace(/\[([^\]]+)\]\((https?:[^)]+)\)/g, '<a href="$2">$1</a>')
    .replace(/\n/g, "<br>");
const time = (iso: string) => new Date(iso).toUTCString().replace(" GMT", " UTC");

const BASE_CSS = `*{box-sizing:border-box}body{margin:0;padding:20px;font:15px/1.46 "Helvetica Neue",Arial,sans-serif}
code{font:12px monospace;padding:1px 3px;border-radius:3px}a{text-decoration:none}`;
const page = (css: string, body: string) =>
  `<!doctype html><meta charset="utf-8"><style>${BASE_CSS}${css}</style><body>${body}</body>`;
const avatar = (bg: string) => `<div class="avatar" style="background:${bg}">V</div>`;

function slackHtml(m: SlackMessage): string {
  const a = m.attachments[0];
  const block = (b: SlackBlock): string => {
    switch (b.type) {
      case "header":
        return `<div class="header">${esc(b.text.text)}</div>`;
      case "section":
        return `<div class="section">${b.text ? `<div>${mrkdwn(b.text.text)}</div>` : ""}${
          b.fields ? `<div class="fields">${b.fields.map((f) => `<div>${mrkdwn(f.text)}</div>`).join("")}</div>` : ""
        }</div>`;
      case "actions":
        return `<div class="actions">${b.elements
          .map((e) => `<a class="button" href="${esc(e.url)}">${esc(e.text.text)}</a>`)
          .join("")}</div>`;
      case "context":
        return `<div class="context">${b.elements.map((e) => mrkdwn(e.text)).join(" ")}</div>`;
    }
  };
  return page(
    `body{background:#fff;color:#1d1c1d;width:720px}.msg{display:flex;gap:8px}.avatar{width:36px;height:36px;border-radius:4px;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center}
    .name{font-weight:900}.app{font-size:10px;background:#e8e8e8;color:#616061;padding:1px 3px;border-radius:2px;margin-left:4px;font-weight:700}.ts{color:#616061;font-size:12px;margin-left:6px}
    .att{display:flex;margin-top:6px}.bar{width:4px;border-radius:8px;background:${esc(a.color)}}.inner{padding:0 12px;flex:1}
    .header{font-size:18px;font-weight:900;margin:4px 0}.section{margin:6px 0}.fields{display:grid;grid-template-columns:1fr 1fr;gap:8px 16px;margin-top:6px}
    .actions{display:flex;gap:8px;margin:10px 0}.button{border:1px solid #ddd;border-radius:4px;padding:3px 12px;color:#1d1c1d;font-weight:700;font-size:13px}.button.primary{background:#007a5a;color:#fff;border-color:#007a5a}
    .context{color:#616061;font-size:12px;margin:6px 0}code{background:#f6f6f6;color:#e01e5a;border:1px solid #ddd}a{color:#1264a3}hr{border:0;border-top:1px solid #ddd}`,
    `<div class="msg">${avatar("#4a154b")}<div style="flex:1"><div><span class="name">Vigil</span><span class="app">APP</span><span class="ts">9:14 AM</span></div>
    <div>${mrkdwn(m.text)}</div>
    <div class="att"><div class="bar"></div><div class="inner">${a.blocks.map(block).join("")}</div></div></div></div>`,
  );
}

function discordHtml(m: DiscordMessage): string {
  const e = m.embeds[0];
  const color = typeof e.color === "number" ? `#${e.color.toString(16).padStart(6, "0")}` : "#5b5bd6";
  return page(
    `body{background:#313338;color:#dbdee1;width:720px}.msg{display:flex;gap:14px}.avatar{width:40px;height:40px;border-radius:50%;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center}
    .name{color:#f2f3f5;font-weight:600}.bot{font-size:10px;background:#5865f2;color:#fff;padding:1px 4px;border-radius:3px;margin-left:4px}.ts{color:#949ba4;font-size:12px;margin-left:6px}
    .embed{margin-top:4px;background:#2b2d31;border-left:4px solid ${color};border-radius:4px;padding:10px 16px 14px;max-width:520px}
    .title{font-weight:600;color:#00a8fc;margin:4px 0}.title.plain{color:#f2f3f5}.desc{font-size:14px;margin:6px 0}.fields{display:grid;grid-template-columns:1fr 1fr 1fr;gap:8px;margin-top:8px;font-size:14px}.fields .full{grid-column:1/-1}
    .fname{font-weight:600;color:#f2f3f5}.footer{font-size:12px;color:#b5bac1;margin-top:8px}code{background:#1e1f22}a{color:#00a8fc}`,
    `<div class="msg">${avatar("#5b5bd6")}<div style="flex:1"><div><span class="name">${esc(m.username ?? "Vigil")}</span><span class="bot">APP</span><span class="ts">Today at 9:14 AM</span></div>
    ${m.content ? `<div>${markdown(m.content)}</div>` : ""}
    <div class="embed">${e.author ? `<div class="fname">${esc(e.author.name)}</div>` : ""}
    ${e.title ? `<div class="title${e.url ? "" : " plain"}">${e.url ? `<a href="${esc(e.url)}">${esc(e.title)}</a>` : esc(e.title)}</div>` : ""}
    ${e.description ? `<div class="desc">${markdown(e.description)}</div>` : ""}
    ${e.fields?.length ? `<div class="fields">${e.fields.map((f) => `<div class="${f.inline ? "" : "full"}"><div class="fname">${esc(f.name)}</div><div>${markdown(String(f.value))}</div></div>`).join("")}</div>` : ""}
    ${e.footer || e.timestamp ? `<div class="footer">${esc(e.footer?.text ?? "")}${e.footer && e.timestamp ? " • " : ""}${e.timestamp ? esc(time(e.timestamp)) : ""}</div>` : ""}
    </div></div></div>`,
  );
}

function mattermostHtml(m: MattermostMessage): string {
  const a = m.attachments[0];
  return page(
    `body{background:#fff;color:#3f4350;width:720px;font-family:"Open Sans",Arial,sans-serif}.msg{display:flex;gap:10px}.avatar{width:32px;height:32px;border-radius:50%;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center}
    .name{font-weight:600}.bot{font-size:10px;background:#e8eaed;padding:1px 4px;border-radius:3px;margin-left:4px;font-weight:600}.ts{color:#8b8e96;font-size:12px;margin-left:6px}
    .att{margin-top:6px;border:1px solid #e0e1e4;border-left:4px solid ${esc(a.color)};border-radius:4px;padding:10px 12px;max-width:560px}
    .pre{font-size:14px}.title{font-weight:600;font-size:15px;margin:2px 0}.text{font-size:14px;margin:6px 0}.fields{display:grid;grid-template-columns:1fr 1fr;gap:8px 16px;font-size:14px;margin-top:8px}.fields .full{grid-column:1/-1}
    .fname{font-weight:600}.footer{color:#8b8e96;font-size:12px;margin-top:8px}code{background:#f4f4f6;color:#c7254e}a{color:#1c58d9}`,
    `<div class="msg">${avatar("#1c58d9")}<div style="flex:1"><div><span class="name">${esc(m.username ?? "Vigil")}</span><span class="bot">BOT</span><span class="ts">9:14 AM</span></div>
    <div>${markdown(m.text ?? "")}</div>
    <div class="att">
    ${a.title ? `<div class="title">${a.title_link ? `<a href="${esc(a.title_link)}">${esc(a.title)}</a>` : esc(a.title)}</div>` : ""}
    ${a.text ? `<div class="text">${markdown(a.text)}</div>` : ""}
    ${a.fields?.length ? `<div class="fields">${a.fields.map((f) => `<div class="${f.short ? "" : "full"}"><div class="fname">${esc(f.title)}</div><div>${markdown(String(f.value))}</div></div>`).join("")}</div>` : ""}
    ${a.footer ? `<div class="footer">${esc(a.footer)}</div>` : ""}</div></div></div>`,
  );
}

function pagerDutyHtml(e: PagerDutyEvent): string {
  const p = e.payload;
  if (!p) throw new Error("pagerduty: a trigger carries its payload");
  const sev: Record<string, string> = { critical: "#d0021b", error: "#ef6c00", warning: "#f5a623", info: "#0f7bd5" };
  const details = Object.entries(p.custom_details);
  return page(
    `body{background:#f4f5f7;color:#1e1e1e;width:760px;font-family:Arial,sans-serif}.card{background:#fff;border:1px solid #dcdfe4;border-radius:6px;padding:16px 20px}
    .top{display:flex;gap:10px;align-items:center}.status{background:#d0021b;color:#fff;font-weight:700;font-size:12px;padding:3px 8px;border-radius:3px;text-transform:uppercase}
    .sev{font-size:12px;font-weight:700;color:#fff;padding:3px 8px;border-radius:3px;text-transform:uppercase}.num{color:#6b6f76;font-size:13px}
    h1{font-size:20px;margin:10px 0 12px}table{border-collapse:collapse;width:100%;font-size:13px}td{padding:5px 8px;border-top:1px solid #eceef1;vertical-align:top}td:first-child{color:#6b6f76;width:170px}
    h2{font-size:13px;text-transform:uppercase;color:#6b6f76;margin:16px 0 6px}a{color:#0f7bd5}code{background:#f4f5f7}`,
    `<div class="card"><div class="top"><span class="status">${e.event_action === "resolve" ? "Resolved" : "Triggered"}</span>
    <span class="sev" style="background:${sev[p.severity] ?? "#6b6f76"}">${esc(p.severity)}</span><span class="num">Events API v2 · ${esc(e.client ?? "")}</span></div>
    <h1>${esc(p.summary)}</h1>
    <table>
    <tr><td>Source</td><td>${esc(p.source)}</td></tr>
    <tr><td>Component</td><td>${esc(p.component ?? "—")}</td></tr>
    <tr><td>Group</td><td>${esc(p.group ?? "—")}</td></tr>
    <tr><td>Class</td><td>${esc(p.class ?? "—")}</td></tr>
    <tr><td>Timestamp</td><td>${p.timestamp ? esc(time(p.timestamp)) : "—"}</td></tr>
    <tr><td>Dedup key</td><td><code>${esc(e.dedup_key)}</code></td></tr>
    </table>
    ${details.length ? `<h2>Custom details</h2><table>${details.map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(typeof v === "string" ? v : JSON.stringify(v))}</td></tr>`).join("")}</table>` : ""}
    ${e.links?.length ? `<h2>Links</h2>${e.links.map((l) => `<div><a href="${esc(l.href)}">${esc(l.text)}</a></div>`).join("")}` : ""}
    ${e.client_url ? `<div style="margin-top:8px;font-size:13px">View in ${esc(e.client ?? "client")}: <a href="${esc(e.client_url)}">${esc(e.client_url)}</a></div>` : ""}
    </div>`,
  );
}

/** Each channel's mock, given the body its receiver got (the channel's own message type). */
const RENDER: Record<"slack" | "discord" | "mattermost" | "pagerduty", (body: unknown) => string> = {
  slack: (b) => slackHtml(b as SlackMessage),
  discord: (b) => discordHtml(b as DiscordMessage),
  mattermost: (b) => mattermostHtml(b as MattermostMessage),
  pagerduty: (b) => pagerDutyHtml(b as PagerDutyEvent),
};

const rx = await receiver();
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu"],
});
try {
  mkdirSync(OUT, { recursive: true });
  for (const [type, render] of Object.entries(RENDER) as [
    WebhookType & keyof typeof RENDER,
    (body: unknown) => string,
  ][]) {
    const body = await delivered(type, rx);
    const tab = await browser.newPage({ viewport: { width: 800, height: 200 } });
    await tab.setContent(render(body), { waitUntil: "load" });
    const file = path.join(OUT, `webhook-${type}.png`);
    await tab.locator("body").screenshot({ path: file });
    await tab.close();
    console.log(`${file}: ${type} ${JSON.stringify(body).length} bytes received`);
  }
} finally {
  await browser.close();
  await rx.close();
}
