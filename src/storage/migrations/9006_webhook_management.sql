-- Webhook management (decisions.md "Notification channels and webhook management", issue #33 point 4):
-- a rotated secret keeps signing, next to the new one, until previous_secret_until (the overlap of
-- POST .../rotate-secret); both are null outside an overlap. The table is small (a few webhooks per
-- project), so the ALTER's lock is brief.

ALTER TABLE webhooks
  ADD COLUMN previous_secret text,
  ADD COLUMN previous_secret_until timestamptz;

-- A webhook whose deliveries have all failed for WEBHOOK_DISABLE_AFTER_DAYS is disabled with a
-- reason (src/webhooks/failing.ts): failing_since is the first failed attempt after its last
-- success (null while it succeeds), disabled_reason 'failing' when it was disabled for that (null
-- when enabled, or disabled by a person).
ALTER TABLE webhooks
  ADD COLUMN failing_since timestamptz,
  ADD COLUMN disabled_reason text CHECK (disabled_reason IN ('failing'));
