import type { Queryable } from "../../storage/db.js";
import type { Envelope } from "./envelope.js";
import { incidentOf } from "./summary.js";

// Links a notification carries (email, Slack, PagerDuty): the dashboard's page of what happened
// and, for an incident, the first published status page that lists its monitor. Only where Vigil
// knows the address users reach it at (PUBLIC_URL); unset, messages carry no links.

export interface Links {
  /** The dashboard: the monitor of an incident, the events of an event, the webhooks of a test. */
  dashboard?: string;
  /** A published status page listing the incident's monitor. */
  statusPage?: string;
}

export function createLinks(db: Queryable, publicUrl: string | undefined): (env: Envelope) => Promise<Links> {
  return async (env) => {
    if (!publicUrl) return {};
    const project = `${publicUrl}/projects/${encodeURIComponent(env.projectId)}`;
    const inc = incidentOf(env);
    if (!inc) return { dashboard: `${project}/${env.type === "webhook.test" ? "webhooks" : "events"}` };
    if (!inc.monitorId) return { dashboard: `${project}/uptime` };
    // A failed look-up costs the message its status page link, never the delivery.
    const page = (
      await db
        .query<{ slug: string }>(
          `SELECT p.slug FROM page_monitors pm JOIN pages p ON p.id = pm.page_id
         WHERE pm.monitor_id = $1 AND pm.project_id = $2 AND p.published ORDER BY p.created_at, p.id LIMIT 1`,
          [inc.monitorId, env.projectId],
        )
        .catch(() => ({ rows: [] }))
    ).rows[0];
    return {
      dashboard: `${project}/uptime/${encodeURIComponent(inc.monitorId)}`,
      ...(page ? { statusPage: `${publicUrl}/status/${encodeURIComponent(page.slug)}` } : {}),
    };
  };
}
