import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the keys screen's work (docs/dashboard.md).

export function Keys() {
  return <PageHeader title="Keys" subtitle="Coming soon." />;
}
