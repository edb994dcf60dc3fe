import { assertNever } from "../shared/never.js";
import { markup } from "./escape.js";
import type { PageMonitorStatus, PageStatus } from "./model.js";

// GET /status/{slug}/badge.svg: a shields.io-style "flat" badge, label on grey, the status on its
// colour, as text (with a <title> and an aria-label) so that it reads without the colour. The page's
// badge says the page's status under the page's title; `?monitor=<monitor slug>` gives one
// monitor's own status under its name on the page.

/** Longest label, in characters (a page title may be 200): longer ones end with "…". */
const MAX_LABEL = 40;

export function badgeColor(s: PageStatus | PageMonitorStatus): string {
  switch (s) {
    case "operational":
    case "up":
      return "#4c1";
    case "degraded":
      return "#dfb317";
    case "down":
      return "#e05d44";
    case "maintenance":
      return "#007ec6";
    case "unknown":
    case "paused":
      return "#9f9f9f";
    default:
      return assertNever(s);
  }
}

/** Approximate advance of Verdana 11px per character (textLength then fits the text exactly). */
function textWidth(s: string): number {
  let w = 0;
  for (const c of s) {
    if (/[iljI.,:;'!|()[\]`]/.test(c)) w += 3.7;
    else if (/[mwMW@%]/.test(c)) w += 10.5;
    else if (/[A-Z0-9#&]/.test(c)) w += 7.6;
    else if (c.charCodeAt(0) > 0x2e80) w += 11;
    else w += 6.6;
  }
  return Math.ceil(w);
}

const clip = (s: string) => {
  const chars = [...s.replace(/\s+/g, " ").trim()];
  return chars.length > MAX_LABEL ? `${chars.slice(0, MAX_LABEL - 1).join("")}…` : chars.join("");
};

export function renderBadge(label: string, message: string, color: string): string {
  const l = clip(label) || "status";
  const lw = textWidth(l) + 10;
  const mw = textWidth(message) + 10;
  const w = lw + mw;
  const text = (x: number, s: string) =>
    `<text aria-hidden="true" x="${x * 10}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="${textWidth(s) * 10}">${markup(s)}</text>` +
    `<text x="${x * 10}" y="140" transform="scale(.1)" fill="#fff" textLength="${textWidth(s) * 10}">${markup(s)}</text>`;
  const title = markup(`${l}: ${message}`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${title}"><title>${title}</title><linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient><clipPath id="r"><rect width="${w}" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)"><rect width="${lw}" height="20" fill="#555"/><rect x="${lw}" width="${mw}" height="20" fill="${color}"/><rect width="${w}" height="20" fill="url(#s)"/></g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="110">${text(lw / 2, l)}${text(lw + mw / 2, message)}</g></svg>`;
}
