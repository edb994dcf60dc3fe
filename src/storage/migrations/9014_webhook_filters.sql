-- Webhook payload filters and the time a webhook was disabled (decisions.md "Notification channels
-- and webhook management", issue #33 point 4):
-- filters: the webhook's `filters` as accepted (the analytics filter model, validated by
-- src/analytics/filters.ts); null when it has none. Evaluated on each event before a delivery is
-- made (src/webhooks/triggers.ts); incident deliveries are never filtered.
-- disabled_at: when the webhook was last disabled (by failing.ts or a person); null while enabled.
-- The table is small (a few webhooks per project), so the ALTER's lock is brief.

ALTER TABLE webhooks
  ADD COLUMN filters jsonb,
  ADD COLUMN disabled_at timestamptz;
