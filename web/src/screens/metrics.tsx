import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the metrics screen's work (docs/dashboard.md).

export function Metrics() {
  return <PageHeader title="Metrics" subtitle="Coming soon." />;
}
