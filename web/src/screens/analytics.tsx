import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the analytics screen's work (docs/dashboard.md).

export function Analytics() {
  return <PageHeader title="Analytics" subtitle="Coming soon." />;
}
