import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the uptime screen's work (docs/dashboard.md).

export function Uptime() {
  return <PageHeader title="Uptime" subtitle="Coming soon." />;
}

export function MonitorDetail() {
  return <PageHeader title="MonitorDetail" subtitle="Coming soon." />;
}
