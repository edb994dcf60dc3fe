import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gzip as gzipCb } from "node:zlib";
import type { StatusPage } from "../../gen/vigil/v1/status_pb.js";
import type { Deps } from "../platform/deps.js";
import { histories } from "../uptime/stats.js";
import { badgeColor, renderBadge } from "./badge.js";
import { renderFeed } from "./feed.js";
import { renderHtml } from "./html.js";
import { statusPageJson, statusPageMessage } from "./messages.js";
import { incidentsSince, MAX_INCIDENTS, pageView, type IncidentFacts } from "./model.js";
import * as store from "./store.js";

// One computation of a public page: the database read once (the page, its monitors, one read of
// their incidents and pauses for every monitor's history, the recent incidents and their updates),
// the view decided (model.ts), and every answer made from it, ready to send: the API message, the
// JSON bytes, the HTML, the feed and the badges, each with its gzip and its ETag. The cache
// (cache.ts) keeps it for STATUS_PAGE_REFRESH_MS; readers are answered from these bytes.

const gzip = promisify(gzipCb);

/** One ready answer: its bytes, their gzip, and a (weak) ETag over the bytes. */
export interface Representation {
  type: string;
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

export interface Snapshot {
  /** The response's `data` for gRPC and Connect callers. */
  message: StatusPage;
  json: Representation;
  html: Representation;
  feed: Representation;
  /** The page's badge, and each monitor's by the monitor's slug. */
  badge: Representation;
  monitorBadges: Map<string, Representation>;
  /** Bytes held (the cache's memory bound counts them). */
  bytes: number;
}

const JSON_TYPE = "application/json; charset=utf-8";
const HTML_TYPE = "text/html; charset=utf-8";
const ATOM_TYPE = "application/atom+xml; charset=utf-8";
const SVG_TYPE = "image/svg+xml; charset=utf-8";

/** Weak: the gzip and the plain bytes are the same representation as far as caches go. */
const etagOf = (body: Buffer) => `W/"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;

async function representation(type: string, text: string | Buffer): Promise<Representation> {
  const body = typeof text === "string" ? Buffer.from(text) : text;
  return { type, body, gzip: await gzip(body), etag: etagOf(body) };
}

/** The page of `slug` computed now; undefined when no page has that slug or it is not published. */
export async function buildSnapshot(deps: Pick<Deps, "db" | "clock">, slug: string): Promise<Snapshot | undefined> {
  const { db } = deps;
  const page = await store.pageBySlug(db, slug);
  if (!page?.published) return undefined;
  const now = deps.clock();
  const monitors = await store.pageMonitors(db, page.id);
  const [history, incidents, maintenances] = await Promise.all([
    histories(db, monitors, "90d", now),
    store.recentIncidents(
      db,
      monitors.map((m) => m.id),
      incidentsSince(now),
      MAX_INCIDENTS,
    ),
    store.pageMaintenances(
      db,
      monitors.map((m) => m.id),
    ),
  ]);
  const updates = await store.incidentUpdates(
    db,
    incidents.map((i) => i.id),
  );
  const byIncident = new Map<string, IncidentFacts["updates"]>();
  for (const u of updates) {
    const list = byIncident.get(u.incident_id) ?? [];
    list.push({ at: u.created_at, message: u.message, status: u.status });
    byIncident.set(u.incident_id, list);
  }
  const view = pageView(
    page,
    monitors.map((m) => {
      const h = history.get(m.id);
      return {
        id: m.id,
        slug: m.slug,
        name: m.name,
        pageName: m.page_name,
        section: m.page_section,
        status: m.status,
        inMaintenance: m.in_maintenance,
        hadHeartbeat: m.first_heartbeat_at !== null,
        buckets: h?.buckets ?? [],
        last24h: h?.last24h ?? { observedMs: 0, downtimeMs: 0, incidentCount: 0, uptimePercentage: 100 },
      };
    }),
    incidents.map((i) => ({
      monitorId: i.monitor_id,
      startedAt: i.started_at,
      endedAt: i.ended_at,
      title: i.title,
      description: i.description,
      updates: byIncident.get(i.id) ?? [],
      manual:
        i.kind === "manual" && i.impact !== null && i.stage !== null
          ? { impact: i.impact, stage: i.stage, monitorIds: i.monitor_ids }
          : undefined,
    })),
    now,
    maintenances,
  );
  const message = statusPageMessage(view);
  const [json, html, feed, badge, ...perMonitor] = await Promise.all([
    representation(JSON_TYPE, statusPageJson(message)),
    representation(HTML_TYPE, renderHtml(view, slug, now)),
    representation(ATOM_TYPE, renderFeed(view, slug, page.updated_at)),
    representation(SVG_TYPE, renderBadge(view.title, view.status, badgeColor(view.status))),
    ...view.monitors.map((m) => representation(SVG_TYPE, renderBadge(m.name, m.status, badgeColor(m.status)))),
  ]);
  const monitorBadges = new Map(view.monitors.map((m, i) => [m.slug, perMonitor[i]]));
  const all = [json, html, feed, badge, ...perMonitor];
  return {
    message,
    json,
    html,
    feed,
    badge,
    monitorBadges,
    bytes: all.reduce((n, r) => n + r.body.length + r.gzip.length, 0),
  };
}
