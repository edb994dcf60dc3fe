import { defineSearchAttributeKey, SearchAttributeType } from "@temporalio/common";

// The search attributes of Vigil's workflows (docs/temporal.md has the operator recipes). Imported by
// the workflows too: only @temporalio/common, which is deterministic. Registered on the namespace by
// the worker at start (registerSearchAttributes in link.ts) when they are missing.

export const VigilProjectId = defineSearchAttributeKey("VigilProjectId", SearchAttributeType.KEYWORD);
export const VigilMonitorId = defineSearchAttributeKey("VigilMonitorId", SearchAttributeType.KEYWORD);
export const VigilMonitorSlug = defineSearchAttributeKey("VigilMonitorSlug", SearchAttributeType.KEYWORD);
export const VigilMonitorStatus = defineSearchAttributeKey("VigilMonitorStatus", SearchAttributeType.KEYWORD);
export const VigilWebhookId = defineSearchAttributeKey("VigilWebhookId", SearchAttributeType.KEYWORD);
export const VigilDeliveryStatus = defineSearchAttributeKey("VigilDeliveryStatus", SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [
  VigilProjectId,
  VigilMonitorId,
  VigilMonitorSlug,
  VigilMonitorStatus,
  VigilWebhookId,
  VigilDeliveryStatus,
];
