import { badRequest } from "../../shared/errors.js";
import type { Envelope } from "./envelope.js";
import { postJson } from "./http-post.js";
import type { Links } from "./links.js";
import { incidentOf, summarize, truncate } from "./summary.js";
import type { WebhookTarget } from "./target.js";

// `pagerduty`: PagerDuty Events API v2 (decisions.md "Notification channels"). The webhook holds a
// `routingKey` (the service integration's 32-character key) instead of a URL; every delivery is a
// POST to PAGERDUTY_EVENTS_URL (default https://events.pagerduty.com/v2/enqueue), through the same
// HTTP delivery and address rule as the others (http-post.ts).
// - incident.started: `trigger`, severity `critical` (a manual incident's by its impact: minor
//   `warning`, major `error`, critical `critical`), dedup_key the incident id;
// - incident.recovered: `resolve` of that dedup_key (PagerDuty closes the alert it opened);
// - any other event type (and test deliveries): `trigger`, severity `info`, dedup_key the event id
//   (`evt_test_...` for tests), so a retried delivery never opens a second alert.
// Links to the dashboard and the status page go in `links` (PUBLIC_URL set). PagerDuty answers 202
// `{status, message, dedup_key}`; a 429 is retried after its Retry-After, or the backoff.

const PAGERDUTY_LIMITS = { summary: 1024, dedupKey: 255, source: 255 } as const;

type Severity = "critical" | "error" | "warning" | "info";

export interface PagerDutyEvent {
  routing_key: string;
  event_action: "trigger" | "resolve";
  dedup_key: string;
  client: string;
  client_url?: string;
  payload?: {
    summary: string;
    source: string;
    severity: Severity;
    timestamp: string;
    component?: string;
    group: string;
    class: string;
    custom_details: Record<string, unknown>;
  };
  links?: { href: string; text: string }[];
}

/** A monitor incident is critical; a manual one by its impact (minor: warning, major: error, critical). */
function severityOf(impact: string | undefined): Severity {
  if (impact === "minor") return "warning";
  if (impact === "major") return "error";
  return "critical";
}

/** The integration key: 32 letters and digits. */
const ROUTING_KEY = /^[A-Za-z0-9]{32}$/;

function pagerDutyEvent(env: Envelope, eventId: string, routingKey: string, links: Links = {}): PagerDutyEvent {
  const inc = incidentOf(env);
  const dedup = truncate(inc ? inc.incidentId : eventId, PAGERDUTY_LIMITS.dedupKey);
  const linkList = [
    ...(links.dashboard ? [{ href: links.dashboard, text: "Open in Vigil" }] : []),
    ...(links.statusPage ? [{ href: links.statusPage, text: "Status page" }] : []),
  ];
  const common = {
    routing_key: routingKey,
    dedup_key: dedup,
    client: "Vigil",
    ...(links.dashboard ? { client_url: links.dashboard } : {}),
    ...(linkList.length ? { links: linkList } : {}),
  };
  if (inc && !inc.started) return { ...common, event_action: "resolve" };
  const sum = summarize(env);
  return {
    ...common,
    event_action: "trigger",
    payload: {
      summary: truncate(
        inc
          ? `${sum.title}${sum.description ? ` — ${sum.description}` : ""}`
          : `${env.type} in project ${env.projectId}`,
        PAGERDUTY_LIMITS.summary,
      ),
      source: truncate(inc ? inc.monitorName : `vigil project ${env.projectId}`, PAGERDUTY_LIMITS.source),
      severity: inc ? severityOf(inc.impact) : "info",
      timestamp: env.createdAt,
      ...(inc ? { component: truncate(inc.monitorName, PAGERDUTY_LIMITS.source) } : {}),
      group: env.projectId,
      class: env.type,
      custom_details: { deliveryId: env.id, ...Object.fromEntries(sum.fields.map((f) => [f.name, f.value])) },
    },
  };
}

export const pagerDutyTarget: WebhookTarget = {
  signed: false,
  address: "routingKey",
  defaultName: "PagerDuty",
  async check(dest) {
    if (!ROUTING_KEY.test(dest.routingKey ?? "")) {
      const message = "must be a PagerDuty Events API v2 integration key (32 letters and digits)";
      throw badRequest(`invalid request: routingKey: ${message}`, [{ field: "routingKey", message }]);
    }
  },
  open: (settings) => ({
    async deliver({ dest, env, eventId }, ctx) {
      const links = await settings.links(env);
      const body = JSON.stringify(pagerDutyEvent(env, eventId, dest.routingKey ?? "", links));
      return postJson({ url: settings.config.webhooks.pagerDutyEventsUrl, body }, ctx);
    },
  }),
};
