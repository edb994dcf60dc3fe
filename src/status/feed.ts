import { markup } from "./escape.js";
import { incidentStatusText } from "./html.js";
import type { IncidentView, PageView } from "./model.js";

// GET /status/{slug}/feed.atom: the page's incidents as an Atom 1.0 feed (RFC 4287), newest first,
// after its maintenance in progress and upcoming (one entry per occurrence),
// one entry per incident with its description and updates as text. Entry ids are tag: URIs
// (RFC 4151) made of the page's slug and the incident's start, never of an incident id; two
// incidents starting at the same millisecond on one page get "-2", "-3"... in the order listed.
// Links are relative to the feed's own address (Vigil does not know the public host it is reached by).

const TAG_AUTHORITY = "vigil.dev,2026";

const latest = (dates: Date[]) => new Date(Math.max(...dates.map((d) => d.getTime())));

function entryUpdated(i: IncidentView): Date {
  return latest([i.startedAt, ...(i.endedAt ? [i.endedAt] : []), ...i.updates.map((u) => u.at)]);
}

function entryText(i: IncidentView): string {
  const lines = [
    i.endedAt === null
      ? `${incidentStatusText(i.status)} since ${i.startedAt.toISOString()}.`
      : `Resolved: ${i.startedAt.toISOString()} to ${i.endedAt.toISOString()}.`,
  ];
  if (i.kind === "manual") lines.push(`Impact: ${i.impact}.`);
  if (i.description !== null) lines.push("", i.description);
  for (const u of i.updates)
    lines.push(
      "",
      `${u.at.toISOString()}: ${u.status !== null ? `[${incidentStatusText(u.status)}] ` : ""}${u.message}`,
    );
  return lines.join("\n");
}

/** The feed; `slug` is the page's (validated) slug; `pageUpdatedAt` dates a feed without entries. */
export function renderFeed(v: PageView, slug: string, pageUpdatedAt: Date): string {
  const base = `/status/${encodeURIComponent(slug)}`;
  const seen = new Map<string, number>();
  const entries = v.incidents.map((i) => {
    const start = i.startedAt.toISOString();
    const n = (seen.get(start) ?? 0) + 1;
    seen.set(start, n);
    const id = `tag:${TAG_AUTHORITY}:status/${slug}/incident/${start}${n > 1 ? `-${n}` : ""}`;
    return `<entry>
<id>${markup(id)}</id>
<title>${markup(`[${incidentStatusText(i.status)}] ${i.title}`)}</title>
<updated>${entryUpdated(i).toISOString()}</updated>
<published>${start}</published>
<link rel="alternate" type="text/html" href="${base}"/>
<content type="text">${markup(entryText(i))}</content>
</entry>`;
  });
  // Maintenance in progress and upcoming: one entry per occurrence, its id the page's slug and its start.
  const maintenance = [...v.maintenances.active, ...v.maintenances.upcoming].map((m) => {
    const start = m.startsAt.toISOString();
    const id = `tag:${TAG_AUTHORITY}:status/${slug}/maintenance/${start}`;
    const active = v.maintenances.active.includes(m);
    const text = [
      `${active ? "In progress" : "Scheduled"}: ${start} to ${m.endsAt.toISOString()}.`,
      `Monitors: ${m.monitors.join(", ")}.`,
      ...(m.description !== null ? ["", m.description] : []),
    ].join("\n");
    return `<entry>
<id>${markup(id)}</id>
<title>${markup(`[Maintenance${active ? ", in progress" : ""}] ${m.title}`)}</title>
<updated>${start}</updated>
<published>${start}</published>
<link rel="alternate" type="text/html" href="${base}"/>
<content type="text">${markup(text)}</content>
</entry>`;
  });
  entries.unshift(...maintenance);
  const updated = v.incidents.length ? latest(v.incidents.map(entryUpdated)) : pageUpdatedAt;
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<id>${markup(`tag:${TAG_AUTHORITY}:status/${slug}`)}</id>
<title>${markup(`${v.title}: incidents`)}</title>
<updated>${updated.toISOString()}</updated>
<author><name>${markup(v.title)}</name></author>
<link rel="self" type="application/atom+xml" href="${base}/feed.atom"/>
<link rel="alternate" type="text/html" href="${base}"/>
${entries.join("\n")}
</feed>
`;
}
