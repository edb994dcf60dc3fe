import type { Bucket, BucketStatus, WindowFigures } from "../uptime/figures.js";
import type { IncidentImpact, IncidentStage, MonitorStatus } from "../uptime/model.js";
import { occurrencesBetween, type WindowTimes } from "../uptime/maintenance-model.js";
import { DAY_MS } from "../shared/time.js";

// What a public status page shows, decided from rows and figures (no I/O; tested directly by
// test/status/model.test.ts): the overall status, each monitor's days, which incidents are listed
// and under what title. The page is a plain view here; messages.ts makes the API message of it and
// html.ts, badge.ts and feed.ts render it. Nothing here carries an id: a view holds only what a
// public page may show (decisions.md: Status pages).

export type PageStatus = "operational" | "degraded" | "down" | "unknown";

/** Days per monitor on a page (decisions.md: 90), oldest first, the last one today (UTC). */
export const PAGE_DAYS = 90;
/** Incidents listed: every open one, and those started within this long. */
export const INCIDENT_WINDOW_MS = 14 * DAY_MS;
/** At most this many incidents on a page (newest first): a flapping monitor must not grow it without bound. */
export const MAX_INCIDENTS = 100;

export interface DayView {
  /** YYYY-MM-DD (UTC). */
  date: string;
  status: BucketStatus;
  /** Null when nothing of the day was monitored (unknown, paused). */
  uptimePercentage: number | null;
  downtimeMs: number;
}

/** A monitor's status on a page: its own, or `maintenance` while a window naming it is in progress. */
export type PageMonitorStatus = MonitorStatus | "maintenance";

export interface MonitorView {
  /** The page's name for the monitor, else the monitor's own. */
  name: string;
  section: string | null;
  /** The monitor's own slug: the key of its badge (`?monitor=`), never written into the JSON. */
  slug: string;
  status: PageMonitorStatus;
  /** Null while the monitor has had no heartbeat, or was paused all of the last 24 hours. */
  uptimePercentage24h: number | null;
  days: DayView[];
}

/** A page's incident update: a manual incident's carries the status it moved the incident to. */
interface UpdateView {
  at: Date;
  message: string;
  status: IncidentStage | null;
}

export interface IncidentView {
  title: string;
  description: string | null;
  /** A monitor incident: open or resolved; a manual one: its workflow status. */
  status: "open" | IncidentStage;
  kind: "monitor" | "manual";
  /** A monitor incident's is major (docs/uptime.md "Manual incidents"). */
  impact: IncidentImpact;
  startedAt: Date;
  endedAt: Date | null;
  /** Oldest first. */
  updates: UpdateView[];
}

export interface PageView {
  title: string;
  description: string | null;
  status: PageStatus;
  monitors: MonitorView[];
  /** Open ones and those started in the last 14 days, newest first. */
  incidents: IncidentView[];
  maintenances: { active: MaintenanceView[]; upcoming: MaintenanceView[] };
}

/** A maintenance occurrence as a page shows it (no id). */
export interface MaintenanceView {
  title: string;
  description: string | null;
  startsAt: Date;
  endsAt: Date;
  /** The page's names of its monitors, in page order. */
  monitors: string[];
}

/** Upcoming maintenance listed: occurrences starting within this long. */
const MAINTENANCE_WINDOW_MS = 14 * DAY_MS;
/** At most this many maintenance occurrences per list (a recurring window every minute must not grow a page). */
const MAX_MAINTENANCES = 50;

export interface MaintenanceFacts {
  title: string;
  description: string;
  /** In progress: its current occurrence. */
  active: boolean;
  occStart: Date | null;
  occEnd: Date | null;
  times: WindowTimes;
  monitorIds: readonly string[];
}

/**
 * The page's maintenance: the windows in progress (naming a monitor of the page), and the
 * occurrences starting within MAINTENANCE_WINDOW_MS of `now` (after the current one), by start.
 */
function pageMaintenances(
  windows: readonly MaintenanceFacts[],
  names: ReadonlyMap<string, string>,
  now: Date,
): PageView["maintenances"] {
  const order = [...names.keys()];
  const active: MaintenanceView[] = [];
  const upcoming: MaintenanceView[] = [];
  const byStart = (a: MaintenanceView, b: MaintenanceView) =>
    a.startsAt.getTime() - b.startsAt.getTime() || (a.title < b.title ? -1 : a.title > b.title ? 1 : 0);
  for (const w of windows) {
    const monitors = order.filter((id) => w.monitorIds.includes(id)).map((id) => names.get(id)!);
    if (!monitors.length) continue;
    const view = (start: number, end: number): MaintenanceView => ({
      title: w.title,
      description: w.description !== "" ? w.description : null,
      startsAt: new Date(start),
      endsAt: new Date(end),
      monitors,
    });
    if (w.active && w.occStart && w.occEnd) active.push(view(w.occStart.getTime(), w.occEnd.getTime()));
    const from = w.active && w.occEnd ? w.occEnd.getTime() : now.getTime();
    for (const o of occurrencesBetween(w.times, from, now.getTime() + MAINTENANCE_WINDOW_MS, MAX_MAINTENANCES))
      upcoming.push(view(o.start, o.end));
  }
  return {
    active: active.sort(byStart).slice(0, MAX_MAINTENANCES),
    upcoming: upcoming.sort(byStart).slice(0, MAX_MAINTENANCES),
  };
}

/**
 * The page's status from its monitors' own statuses. Paused and unknown monitors say nothing about
 * the service: none known (no monitor, or only paused/unknown ones) → unknown; every known one down
 * → down; some down → degraded; none down (and at least one up) → operational.
 */
export function overallStatus(statuses: readonly MonitorStatus[]): PageStatus {
  let up = 0;
  let down = 0;
  for (const s of statuses) {
    if (s === "up") up++;
    else if (s === "down") down++;
  }
  if (up + down === 0) return "unknown";
  if (down === 0) return "operational";
  return up === 0 ? "down" : "degraded";
}

/**
 * The page's status with its open manual incidents: a problem no monitor caught still shows. A
 * critical one makes the page down; any other makes an operational or unknown page degraded.
 */
function withManualIncidents(status: PageStatus, incidents: readonly IncidentView[]): PageStatus {
  const open = incidents.filter((i) => i.kind === "manual" && i.endedAt === null);
  if (open.some((i) => i.impact === "critical")) return "down";
  if (open.length && (status === "operational" || status === "unknown")) return "degraded";
  return status;
}

/** A history bucket of a day as the page shows it. */
export function dayOf(b: Bucket): DayView {
  return {
    date: new Date(b.start).toISOString().slice(0, 10),
    status: b.status,
    uptimePercentage: b.uptimePercentage,
    downtimeMs: b.downtimeMs,
  };
}

/** The last 24 hours' uptime as a page shows it (null: nothing was monitored). */
export function uptime24h(f: WindowFigures, hadHeartbeat: boolean): number | null {
  return hadHeartbeat && f.observedMs > 0 ? f.uptimePercentage : null;
}

/** The name a page shows for a monitor: its page entry's name when set, else the monitor's own. */
export const displayName = (pageName: string | null, monitorName: string): string =>
  pageName !== null && pageName !== "" ? pageName : monitorName;

/**
 * An incident's title on a page: the one a member gave it, else "<display name> is down" while it is
 * open and "<display name> was down" once resolved.
 */
export const incidentTitle = (title: string | null, monitorName: string, resolved = false): string =>
  title !== null && title !== "" ? title : `${monitorName} ${resolved ? "was" : "is"} down`;

/** The earliest start of a resolved incident a page lists at `now`. */
export const incidentsSince = (now: Date): Date => new Date(now.getTime() - INCIDENT_WINDOW_MS);

export interface IncidentFacts {
  /** The monitor that opened it; null for a manual incident. */
  monitorId: string | null;
  startedAt: Date;
  endedAt: Date | null;
  title: string | null;
  description: string | null;
  updates: { at: Date; message: string; status?: IncidentStage | null }[];
  /** A manual incident's impact, workflow status and monitors; absent for a monitor incident. */
  manual?: { impact: IncidentImpact; stage: IncidentStage; monitorIds: readonly string[] };
}

/** Whether the incident names a monitor of the page (`names`, by monitor id). */
const onPage = (i: IncidentFacts, names: ReadonlyMap<string, string>): boolean =>
  i.manual ? i.manual.monitorIds.some((id) => names.has(id)) : i.monitorId !== null && names.has(i.monitorId);

/**
 * The incidents a page lists, from those of its monitors: open, or started since incidentsSince(now);
 * newest first (ties: open first, then by title), at most MAX_INCIDENTS; titled with the display
 * name of the monitor (`names`, by monitor id) when they have no title of their own; updates oldest first.
 */
export function pageIncidents(
  incidents: readonly IncidentFacts[],
  names: ReadonlyMap<string, string>,
  now: Date,
): IncidentView[] {
  const since = incidentsSince(now).getTime();
  return incidents
    .filter((i) => onPage(i, names) && (i.endedAt === null || i.startedAt.getTime() >= since))
    .map((i): IncidentView => ({
      title: incidentTitle(i.title, names.get(i.monitorId ?? "") ?? "", i.endedAt !== null),
      description: i.description !== null && i.description !== "" ? i.description : null,
      status: i.manual?.stage ?? (i.endedAt === null ? "open" : "resolved"),
      kind: i.manual ? "manual" : "monitor",
      impact: i.manual?.impact ?? "major",
      startedAt: i.startedAt,
      endedAt: i.endedAt,
      updates: i.updates
        .map((u) => ({ at: u.at, message: u.message, status: u.status ?? null }))
        .sort((a, b) => a.at.getTime() - b.at.getTime()),
    }))
    .sort(
      (a, b) =>
        b.startedAt.getTime() - a.startedAt.getTime() ||
        Number(a.endedAt !== null) - Number(b.endedAt !== null) ||
        (a.title < b.title ? -1 : a.title > b.title ? 1 : 0),
    )
    .slice(0, MAX_INCIDENTS);
}

export interface MonitorFacts {
  id: string;
  slug: string;
  name: string;
  pageName: string | null;
  section: string | null;
  status: MonitorStatus;
  /** A maintenance window naming it is in progress; absent: not. */
  inMaintenance?: boolean;
  hadHeartbeat: boolean;
  buckets: Bucket[];
  last24h: WindowFigures;
}

/** A whole page, from its record, its monitors in display order with their history, and their incidents. */
export function pageView(
  page: { title: string; description: string | null },
  monitors: readonly MonitorFacts[],
  incidents: readonly IncidentFacts[],
  now: Date,
  maintenances: readonly MaintenanceFacts[] = [],
): PageView {
  const views: MonitorView[] = monitors.map((m) => ({
    name: displayName(m.pageName, m.name),
    section: m.section !== null && m.section !== "" ? m.section : null,
    slug: m.slug,
    status: m.inMaintenance ? "maintenance" : m.status,
    uptimePercentage24h: uptime24h(m.last24h, m.hadHeartbeat),
    days: m.buckets.map(dayOf),
  }));
  const names = new Map(monitors.map((m, i) => [m.id, views[i].name]));
  const listed = pageIncidents(incidents, names, now);
  return {
    title: page.title,
    description: page.description !== null && page.description !== "" ? page.description : null,
    // A monitor in maintenance counts neither up nor down (as a paused one).
    status: withManualIncidents(overallStatus(monitors.filter((m) => !m.inMaintenance).map((m) => m.status)), listed),
    monitors: views,
    incidents: listed,
    maintenances: pageMaintenances(maintenances, names, now),
  };
}

/** Monitors grouped under their sections, in display order (a section is listed where its first monitor is). */
export function sections<T extends { section: string | null }>(
  monitors: readonly T[],
): { section: string | null; monitors: T[] }[] {
  const groups: { section: string | null; monitors: T[] }[] = [];
  const bySection = new Map<string | null, T[]>();
  for (const m of monitors) {
    let list = bySection.get(m.section);
    if (!list) {
      bySection.set(m.section, (list = []));
      groups.push({ section: m.section, monitors: list });
    }
    list.push(m);
  }
  return groups;
}
