import { PageHeader } from "../ui/kit.js";

// Placeholder: filled in by the webhooks screen's work (docs/dashboard.md).

export function Webhooks() {
  return <PageHeader title="Webhooks" subtitle="Coming soon." />;
}

export function WebhookDetail() {
  return <PageHeader title="WebhookDetail" subtitle="Coming soon." />;
}
