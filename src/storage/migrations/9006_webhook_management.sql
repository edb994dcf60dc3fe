-- Webhook management (decisions.md "Notification channels and webhook management", issue #33 point 4):
-- a rotated secret keeps signing, next to the new one, until previous_secret_until (the overlap of
-- POST .../rotate-secret); both are null outside an overlap. The table is small (a few webhooks per
-- project), so the ALTER's lock is brief.

ALTER TABLE webhooks
  ADD COLUMN previous_secret text,
  ADD COLUMN previous_secret_until timestamptz;
