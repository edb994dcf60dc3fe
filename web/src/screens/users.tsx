import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the users screen's work (docs/dashboard.md).

export function Users() {
  return <PageHeader title="Users" subtitle="Coming soon." />;
}

export function UserDetail() {
  return <PageHeader title="UserDetail" subtitle="Coming soon." />;
}
