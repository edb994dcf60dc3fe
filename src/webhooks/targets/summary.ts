import type { Envelope } from "./envelope.js";

// What a chat message says about a delivery, whatever the chat: the headline, the colour's meaning
// and the fields of an incident or an event. Each chat target (discord.ts, mattermost.ts) lays
// this out in its own format and within its own limits. Pure.

interface SummaryField {
  name: string;
  value: string;
  /** Short enough to sit beside others. */
  inline: boolean;
}

export interface Summary {
  /** What the colour says. */
  kind: "started" | "recovered" | "event";
  /** "🔴 Down: <monitor>", "🟢 Recovered: <monitor>", or the event type. */
  title: string;
  /** An incident's title or a sentence about it; events have none (their properties are `props`). */
  description?: string;
  fields: SummaryField[];
  /** An event's properties (its `data`), for a code block. */
  props?: Record<string, unknown>;
}

/** Cuts to `max` UTF-16 units (what Discord and Mattermost count), marking the cut with an ellipsis. */
export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  if (max <= 1) return s.slice(0, max);
  let cut = s.slice(0, max - 1);
  // Do not leave half of a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/** A value as a line of text: a string as itself, "—" for nothing, anything else as JSON. */
function show(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v === "" ? "—" : v;
  return JSON.stringify(v);
}

export function summarize(env: Envelope): Summary {
  const d = env.data;
  const fields: SummaryField[] = [];
  if (env.type === "incident.started" || env.type === "incident.recovered") {
    const started = env.type === "incident.started";
    const inc = (d.incident && typeof d.incident === "object" ? d.incident : d) as Record<string, unknown>;
    if (inc.kind === "manual") return manualSummary(inc, d, started);
    const name = show(d.monitorName ?? (d.monitor as { name?: unknown } | undefined)?.name ?? d.monitorId);
    for (const k of ["id", "monitorId", "status", "startedAt", "endedAt", "durationMs"])
      if (inc[k] !== undefined && inc[k] !== null)
        fields.push({ name: k === "id" ? "incidentId" : k, value: show(inc[k]), inline: true });
    return {
      kind: started ? "started" : "recovered",
      title: `${started ? "🔴 Down" : "🟢 Recovered"}: ${name}`,
      description:
        typeof inc.title === "string" && inc.title
          ? inc.title
          : started
            ? "A monitor missed its heartbeat deadline."
            : "The monitor is receiving heartbeats again.",
      fields,
    };
  }
  for (const k of ["userId", "groupId", "sourceId"])
    if (d[k]) fields.push({ name: k, value: show(d[k]), inline: true });
  const props = (d.data && typeof d.data === "object" ? d.data : d) as Record<string, unknown>;
  for (const [k, v] of Object.entries(props)) fields.push({ name: k, value: show(v), inline: typeof v !== "object" });
  return { kind: "event", title: env.type, fields, props };
}

/**
 * A manual incident's message (decisions.md "Status communication"): headed by its title, its
 * description or impact as the sentence, fields naming its kind, impact, status and monitors.
 */
function manualSummary(inc: Record<string, unknown>, d: Record<string, unknown>, started: boolean): Summary {
  const monitors = Array.isArray(d.monitors) ? (d.monitors as { name?: unknown }[]) : [];
  const fields: SummaryField[] = [];
  for (const k of ["id", "kind", "impact", "status", "startedAt", "endedAt", "durationMs"])
    if (inc[k] !== undefined && inc[k] !== null)
      fields.push({ name: k === "id" ? "incidentId" : k, value: show(inc[k]), inline: true });
  if (monitors.length)
    fields.push({ name: "monitors", value: monitors.map((m) => show(m.name)).join(", "), inline: false });
  const description = typeof inc.description === "string" && inc.description ? inc.description : undefined;
  return {
    kind: started ? "started" : "recovered",
    title: `${started ? "🔴 Incident" : "🟢 Resolved"}: ${show(inc.title)}`,
    description: description ?? `${show(inc.impact)} impact; status: ${show(inc.status)}.`,
    fields,
  };
}

/** An incident delivery's incident and monitor (undefined for events and tests). */
export function incidentOf(env: Envelope):
  | {
      started: boolean;
      incidentId: string;
      monitorId?: string;
      monitorName: string;
      /** A manual incident's impact (absent: a monitor incident). */
      impact?: string;
    }
  | undefined {
  if (env.type !== "incident.started" && env.type !== "incident.recovered") return undefined;
  const d = env.data;
  const inc = (d.incident && typeof d.incident === "object" ? d.incident : d) as Record<string, unknown>;
  if (inc.kind === "manual") {
    // Named by its title; its first monitor leads to the dashboard and a status page.
    const ids = Array.isArray(inc.monitorIds) ? inc.monitorIds.filter((x) => typeof x === "string") : [];
    return {
      started: env.type === "incident.started",
      incidentId: show(inc.id),
      monitorId: ids[0],
      monitorName: show(inc.title),
      impact: show(inc.impact),
    };
  }
  const monitor = (d.monitor && typeof d.monitor === "object" ? d.monitor : {}) as Record<string, unknown>;
  const monitorId = typeof inc.monitorId === "string" ? inc.monitorId : (monitor.id as string | undefined);
  return {
    started: env.type === "incident.started",
    incidentId: show(inc.id),
    monitorId,
    monitorName: show(d.monitorName ?? monitor.name ?? monitorId),
  };
}
