import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the pages screen's work (docs/dashboard.md).

export function StatusPages() {
  return <PageHeader title="StatusPages" subtitle="Coming soon." />;
}
