// The sections of a project, in the sidebar's order: [path under /projects/:id, label]. Each label
// is also its screen's heading. No Preact here: the browser tests import the list too.
export const SECTIONS: [path: string, label: string][] = [
  ["events", "Events"],
  ["analytics", "Analytics"],
  ["metrics", "Metrics"],
  ["uptime", "Uptime"],
  ["alerts", "Alerts"],
  ["webhooks", "Webhooks"],
  ["pages", "Status pages"],
  ["users", "Users"],
  ["keys", "API keys"],
  ["members", "Members"],
  ["settings", "Settings"],
];
