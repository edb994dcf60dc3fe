import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the members screen's work (docs/dashboard.md).

export function Members() {
  return <PageHeader title="Members" subtitle="Coming soon." />;
}
