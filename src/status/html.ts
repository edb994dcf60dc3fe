import { createHash } from "node:crypto";
import { assertNever } from "../shared/never.js";
import { HOUR_MS, MINUTE_MS } from "../shared/time.js";
import type { BucketStatus } from "../uptime/figures.js";
import { markup } from "./escape.js";
import {
  sections,
  type DayView,
  type IncidentView,
  type MaintenanceView,
  type MonitorView,
  type PageMonitorStatus,
  type PageStatus,
  type PageView,
} from "./model.js";

// GET /status/{slug}: the page as server-rendered HTML, complete without JavaScript (there is none),
// under a CSP that allows only its own stylesheet (by hash) and its own images. Accessible: one h1,
// h2 per part, h3 per section and incident; every colour has its words beside it (a monitor's status,
// each day's text in its title and in visually hidden text); colours meet WCAG AA contrast on white.
// Responsive: one column, and phones show the last 30 days. Reloads itself every minute.

const REFRESH_SECONDS = 60;

const CSS = `*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#fff}
main{max-width:880px;margin:0 auto;padding:24px 16px 48px}
h1{font-size:1.8rem;margin:0 0 4px}
h2{font-size:1.25rem;margin:32px 0 12px;border-bottom:1px solid #d1d9e0;padding-bottom:4px}
h3{font-size:1.05rem;margin:20px 0 8px}
a{color:#0550ae}
.desc,.text{white-space:pre-line;margin:4px 0}
.muted,.legend,footer{color:#59636e;font-size:.875rem}
.overall{display:flex;align-items:center;gap:10px;margin:16px 0;padding:12px 16px;border-radius:6px;border:2px solid;font-weight:600;font-size:1.1rem}
.s-operational{color:#1a7f37}.s-degraded{color:#9a6700}.s-down{color:#cf222e}.s-unknown{color:#59636e}
.m-up{color:#1a7f37}.m-down{color:#cf222e}.m-unknown{color:#59636e}.m-paused{color:#8250df}.m-maintenance{color:#0550ae}
.dot{display:inline-block;width:.75em;height:.75em;border-radius:50%;background:currentColor;flex:none}
ul.monitors{list-style:none;margin:0;padding:0}
li.monitor{padding:12px 0;border-bottom:1px solid #d1d9e0}
.row{display:flex;justify-content:space-between;align-items:baseline;gap:12px;flex-wrap:wrap}
.name{font-weight:600;overflow-wrap:anywhere}
.st{display:inline-flex;align-items:center;gap:6px;font-weight:600}
ol.days{display:flex;gap:2px;list-style:none;margin:8px 0 2px;padding:0;height:34px}
ol.days li{flex:1 1 0;min-width:0;border-radius:2px}
.d-up{background:#1a7f37}.d-down{background:#cf222e}.d-unknown{background:#818b98}.d-paused{background:#8250df}.d-maintenance{background:#0550ae}
.legend{display:flex;justify-content:space-between}
.short{display:none}
.sr{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
article{padding:8px 0 12px;border-bottom:1px solid #d1d9e0}
article h3{margin:8px 0 2px}
ol.updates{margin:8px 0 0;padding-left:20px}
footer{margin-top:32px}
@media (max-width:600px){ol.days li:nth-child(-n+60){display:none}.long{display:none}.short{display:inline}}
`;

/** The Content-Security-Policy of the HTML page: nothing but its own inline stylesheet (by hash) and images. */
export const HTML_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(CSS).digest("base64")}'`,
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

function pageStatusText(s: PageStatus): string {
  switch (s) {
    case "operational":
      return "All systems operational";
    case "degraded":
      return "Partial outage";
    case "down":
      return "Major outage";
    case "unknown":
      return "Status unknown";
    default:
      return assertNever(s);
  }
}

function monitorStatusText(s: PageMonitorStatus): string {
  switch (s) {
    case "up":
      return "Up";
    case "down":
      return "Down";
    case "unknown":
      return "Unknown";
    case "paused":
      return "Paused";
    case "maintenance":
      return "Under maintenance";
    default:
      return assertNever(s);
  }
}

/** 99.994 → "99.99%": rounded down, so a day with any downtime never reads 100%. */
export function percentText(p: number): string {
  return `${Math.floor(p * 100) / 100}%`;
}

export function downtimeText(ms: number): string {
  if (ms <= 0) return "no downtime";
  if (ms < MINUTE_MS) return "less than 1 min down";
  const minutes = Math.round(ms / MINUTE_MS);
  if (ms < HOUR_MS) return `${minutes} min down`;
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return m ? `${h} h ${m} min down` : `${h} h down`;
}

/** A day's words: "2026-11-20: 99.31% up, 10 min down", "2026-11-20: 100% up", "2026-11-20: no data". */
export function dayText(d: DayView): string {
  const status: BucketStatus = d.status;
  switch (status) {
    case "unknown":
      return `${d.date}: no data`;
    case "paused":
      return `${d.date}: paused`;
    case "maintenance":
      return `${d.date}: maintenance`;
    case "up":
    case "down": {
      const up = `${d.date}: ${percentText(d.uptimePercentage ?? 100)} up`;
      return d.downtimeMs > 0 ? `${up}, ${downtimeText(d.downtimeMs)}` : up;
    }
    default:
      return assertNever(status);
  }
}

const timeText = (d: Date) => `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
const time = (d: Date) => `<time datetime="${d.toISOString()}">${timeText(d)}</time>`;

function monitorHtml(m: MonitorView): string {
  const days = m.days
    .map((d) => {
      const text = markup(dayText(d));
      return `<li class="d-${d.status}" title="${text}"><span class="sr">${text}</span></li>`;
    })
    .join("");
  const uptime =
    m.uptimePercentage24h === null
      ? "No data for the last 24 hours"
      : `${percentText(m.uptimePercentage24h)} uptime in the last 24 hours`;
  return `<li class="monitor">
<div class="row"><span class="name">${markup(m.name)}</span><span class="st m-${m.status}"><span class="dot" aria-hidden="true"></span>${monitorStatusText(m.status)}</span></div>
<div class="muted">${uptime}</div>
<ol class="days" aria-label="${markup(`Daily uptime of ${m.name}, oldest first`)}">${days}</ol>
<div class="legend" aria-hidden="true"><span><span class="long">${m.days.length} days ago</span><span class="short">30 days ago</span></span><span>Today</span></div>
</li>`;
}

/** An incident's status in words (a monitor incident: open or resolved; a manual one: its workflow status). */
export function incidentStatusText(s: IncidentView["status"]): string {
  switch (s) {
    case "open":
      return "Open";
    case "investigating":
      return "Investigating";
    case "identified":
      return "Identified";
    case "monitoring":
      return "Monitoring";
    case "resolved":
      return "Resolved";
    default:
      return assertNever(s);
  }
}

function incidentHtml(i: IncidentView): string {
  const when = i.endedAt === null ? `since ${time(i.startedAt)}` : `${time(i.startedAt)} to ${time(i.endedAt)}`;
  const updates = i.updates.length
    ? `<ol class="updates">${i.updates
        .map(
          (u) =>
            `<li>${time(u.at)}: ${u.status !== null ? `<strong>${incidentStatusText(u.status)}</strong> — ` : ""}<span class="text">${markup(u.message)}</span></li>`,
        )
        .join("")}</ol>`
    : "";
  const impact = i.kind === "manual" ? ` · ${i.impact[0].toUpperCase()}${i.impact.slice(1)} impact` : "";
  return `<article>
<h3>${markup(i.title)}</h3>
<div class="muted"><span class="${i.endedAt === null ? "m-down" : "m-up"}">${incidentStatusText(i.status)}</span>${impact} · ${when}</div>
${i.description !== null ? `<p class="text">${markup(i.description)}</p>` : ""}${updates}
</article>`;
}

function maintenanceHtml(m: MaintenanceView): string {
  return `<article>
<h3>${markup(m.title)}</h3>
<div class="muted">${time(m.startsAt)} to ${time(m.endsAt)} · ${markup(m.monitors.join(", "))}</div>
${m.description !== null ? `<p class="text">${markup(m.description)}</p>` : ""}
</article>`;
}

/** The page's maintenance part: in progress and upcoming (none: the part is left out). */
function maintenancesHtml(v: PageView): string {
  const { active, upcoming } = v.maintenances;
  if (!active.length && !upcoming.length) return "";
  const list = (title: string, id: string, items: MaintenanceView[]) =>
    items.length ? `<h3 id="${id}">${title}</h3>\n${items.map(maintenanceHtml).join("\n")}\n` : "";
  return `<section aria-labelledby="maintenance">
<h2 id="maintenance">Maintenance</h2>
${list("In progress", "maintenance-active", active)}${list("Upcoming", "maintenance-upcoming", upcoming)}</section>
`;
}

/** The HTML of a page; `slug` is the page's own (validated) slug, for its links. */
export function renderHtml(v: PageView, slug: string, builtAt: Date): string {
  const base = `/status/${encodeURIComponent(slug)}`;
  const groups = sections(v.monitors)
    .map(
      (g) =>
        `${g.section !== null ? `<h3>${markup(g.section)}</h3>\n` : ""}<ul class="monitors">\n${g.monitors.map(monitorHtml).join("\n")}\n</ul>`,
    )
    .join("\n");
  const incidents = v.incidents.length
    ? v.incidents.map(incidentHtml).join("\n")
    : `<p class="muted">No incidents in the last 14 days.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${REFRESH_SECONDS}">
<title>${markup(v.title)} status</title>
<link rel="alternate" type="application/atom+xml" title="${markup(`${v.title} incidents`)}" href="${base}/feed.atom">
<style>${CSS}</style>
</head>
<body>
<main>
<header>
<h1>${markup(v.title)}</h1>
${v.description !== null ? `<p class="desc">${markup(v.description)}</p>\n` : ""}<p class="overall s-${v.status}"><span class="dot" aria-hidden="true"></span>${pageStatusText(v.status)}</p>
</header>
<section aria-labelledby="monitors">
<h2 id="monitors">Monitors</h2>
${v.monitors.length ? groups : `<p class="muted">This page lists no monitors yet.</p>`}
</section>
${maintenancesHtml(v)}<section aria-labelledby="incidents">
<h2 id="incidents">Incidents</h2>
${incidents}
</section>
<footer>
<p>Updated ${time(builtAt)}; this page reloads every minute. <a href="${base}/feed.atom">Incident feed (Atom)</a> · <a href="/v1/status/${encodeURIComponent(slug)}">JSON</a> · <a href="${base}/badge.svg">Badge</a></p>
<p><img src="${base}/badge.svg" alt="Status badge: ${pageStatusText(v.status)}"></p>
</footer>
</main>
</body>
</html>
`;
}
