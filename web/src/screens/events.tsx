import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the events screen's work (docs/dashboard.md).

export function Events() {
  return <PageHeader title="Events" subtitle="Coming soon." />;
}
